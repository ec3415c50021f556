package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/tally"
)

// TestJUnitGeneratorSaysItOnce (issue 32): the "generator kept up"
// testcase of a run whose generator fell behind (a warning: the testcase
// passes) printed its first reason twice, as the warning and again as the
// detail.
func TestJUnitGeneratorSaysItOnce(t *testing.T) {
	const first = "the generator fell behind: 12 iterations dropped with no idle VU"
	r := &tally.Result{Kind: tally.Kind, Version: tally.Version, Sent: 100, Planned: 112, Completed: 100, Responses: 100,
		Generator: tally.GenStat{FellBehind: true, Reasons: []string{first, "lateness p99 40 ms"}}}
	var b bytes.Buffer
	if err := Render(&b, "junit", r, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, first); n != 1 || !strings.Contains(out, "lateness p99 40 ms") {
		t.Errorf("the generator's first reason appears %d times, want once with the others:\n%s", n, out)
	}
}
