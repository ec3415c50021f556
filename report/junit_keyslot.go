package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratelimit-dev/ratelimit/cluster"
)

// KeyslotJUnit renders a keyslot result as JUnit XML: one testcase per
// group of keys used together, per linted script, and for --verify when it
// ran.
func KeyslotJUnit(w io.Writer, res cluster.Result) error {
	return writeJUnit(w, []junitSuite{keyslotSuite(res)})
}

func keyslotSuite(res cluster.Result) junitSuite {
	s := junitSuite{Name: "ratelimit keyslot"}
	checks := res.CheckList()
	if n := len(res.Groups) + len(res.Scripts); len(checks) != n && (res.Verify == nil || len(checks) != n+1) {
		checks = cluster.Checks(res) // a document whose checks do not follow its parts
	}
	for i, g := range res.Groups {
		name := ksKeys(g.Keys)
		if g.File != "" {
			name = fmt.Sprintf("%s:%d: %s", g.File, g.Line, name)
		}
		var d strings.Builder
		if g.Crossslot {
			for _, sk := range g.BySlot {
				fmt.Fprintf(&d, "slot %d: %s\n", sk.Slot, ksKeys(sk.Keys))
			}
			fmt.Fprintf(&d, "fix: %s\n", g.Fix)
		}
		s.Cases = append(s.Cases, checkCase("keyslot.groups", name, checks[i], "CROSSSLOT", d.String()))
	}
	for i, sc := range res.Scripts {
		var d strings.Builder
		for _, f := range sc.Findings {
			fmt.Fprintf(&d, "%s:%d: %s\n", f.File, f.Line, f.Message())
		}
		s.Cases = append(s.Cases, checkCase("keyslot.scripts", sc.File, checks[len(res.Groups)+i], "lint", d.String()))
	}
	if v := res.Verify; v != nil {
		var d strings.Builder
		for _, k := range res.Keys {
			if k.ServerSlot != nil && *k.ServerSlot != k.Slot {
				fmt.Fprintf(&d, "%s: offline %d, server %d\n", ksKey(k.Key), k.Slot, *k.ServerSlot)
			}
		}
		s.Cases = append(s.Cases, checkCase("keyslot.verify", fmt.Sprintf("CLUSTER KEYSLOT agrees for %d keys", v.Checked), checks[len(checks)-1], "mismatch", d.String()))
	}
	return s
}
