package cmd

import (
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/report"
)

// TestReportNamesEveryKind: report --help and the error for a call
// without documents name every kind report reads (issue 25 item 5), in the
// registry's order, so a kind added to report is named without editing
// the help.
func TestReportNamesEveryKind(t *testing.T) {
	kinds := report.Kinds()
	for _, k := range []string{"eval", "simulate", "scripts", "race", "load", "keyslot", "probe", "failover"} {
		if !strings.Contains(","+strings.Join(kinds, ",")+",", ","+k+",") {
			t.Fatalf("report.Kinds() = %v lacks %s", kinds, k)
		}
	}
	list := strings.Join(kinds, ", ")

	tf := newTestFactory(t)
	if code := tf.execute(t, "report", "--help"); code != exitcode.OK {
		t.Fatalf("report --help exit %d", code)
	}
	help := strings.Join(strings.Fields(tf.Out.String()), " ")
	if !strings.Contains(help, "Kinds this build reads: "+list+".") {
		t.Errorf("report --help does not name the kinds %q:\n%s", list, tf.Out.String())
	}
	for _, cmd := range []string{"eval --simulate", "scripts", "race", "load", "merge", "report --from", "keyslot", "probe", "failover"} {
		if !strings.Contains(help, cmd) {
			t.Errorf("report --help does not name %q as a writer of documents", cmd)
		}
	}

	tf = newTestFactory(t)
	if code := tf.execute(t, "report"); code != exitcode.Usage {
		t.Fatalf("report without documents: exit %d, want %d", code, exitcode.Usage)
	}
	if msg := tf.ErrOut.String(); !strings.Contains(msg, "(kinds: "+list+")") || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Errorf("report without documents says %q, want one line naming the kinds %s", msg, list)
	}
}
