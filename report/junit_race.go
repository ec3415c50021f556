package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratelimit-dev/ratelimit/race/racedoc"
)

// RaceJUnit renders a race result as JUnit XML: one testcase per strategy.
// A strategy that must be atomic fails when it admitted more than the
// limit in any trial; a racy one (naive, multi) passes either way, with a
// note when the race was not reproduced.
func RaceJUnit(w io.Writer, res racedoc.Result) error {
	return writeJUnit(w, []junitSuite{raceSuite(res)})
}

func raceSuite(res racedoc.Result) junitSuite {
	s := junitSuite{Name: "ratelimit race"}
	checks := res.CheckList()
	if len(checks) != len(res.Strategies) {
		checks = racedoc.Checks(res)
	}
	for i, st := range res.Strategies {
		var wall float64
		var d strings.Builder
		for t, a := range st.Allowed {
			wall += raceAt(st.WallMs, t)
			fmt.Fprintf(&d, "trial %d: admitted %d of %d, limit %d, over %d, retries %d, give-ups %d, errors %d, p99 %s\n",
				t+1, a, res.Concurrency, res.Limit, raceAt(st.OverLimit, t), raceAt(st.Retries, t),
				raceAt(st.GiveUps, t), raceAt(st.Errors, t), Latency(raceAt(st.TrialP99Ms, t)))
			if t < len(st.Expected) {
				fmt.Fprintf(&d, "trial %d: %s admits %s over %.1f ms\n", t+1, st.Expected[t].Description, st.Expected[t].Range(), st.Expected[t].SpanMs)
			}
		}
		if st.ErrorSample != "" {
			fmt.Fprintf(&d, "error sample: %s\n", st.ErrorSample)
		}
		name := st.Label
		if st.Name != "" && st.Name != st.Label {
			name += " (" + st.Name + ")"
		}
		ch := checks[i]
		typ := "over-admission"
		if strings.HasPrefix(ch.Message, "under-admission") {
			typ = "under-admission"
		}
		c := checkCase("race.strategies", name, ch, typ, d.String())
		c.Time = junitTime(wall / 1e3)
		s.Cases = append(s.Cases, c)
		s.timeS += wall / 1e3
	}
	return s
}
