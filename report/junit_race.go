package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratelimit-dev/ratelimit/race"
)

// RaceJUnit renders a race result as JUnit XML: one testcase per strategy.
// A strategy that must be atomic fails when it admitted more than the
// limit in any trial; a racy one (naive, multi) passes either way, with a
// note when the race was not reproduced.
func RaceJUnit(w io.Writer, res race.Result) error {
	return writeJUnit(w, []junitSuite{raceSuite(res)})
}

func raceSuite(res race.Result) junitSuite {
	s := junitSuite{Name: "ratelimit race"}
	for _, st := range res.Strategies {
		var wall int64
		var d strings.Builder
		worst := -1
		for t, a := range st.Admitted {
			wall += raceAt(st.WallUs, t)
			fmt.Fprintf(&d, "trial %d: admitted %d of %d, limit %d, over %d, retries %d, give-ups %d, errors %d, p99 %s\n",
				t+1, a, res.Concurrency, res.Limit, raceAt(st.OverAdmitted, t), raceAt(st.Retries, t),
				raceAt(st.GiveUps, t), raceAt(st.Errors, t), raceMicros(raceAt(st.TrialP99Us, t)))
			if worst < 0 || a > st.Admitted[worst] {
				worst = t
			}
		}
		if st.ErrorSample != "" {
			fmt.Fprintf(&d, "error sample: %s\n", st.ErrorSample)
		}
		name := st.Label
		if st.Name != "" && st.Name != st.Label {
			name += " (" + st.Name + ")"
		}
		c := newCase("race.strategies", name, float64(wall)/1e6)
		over := worst >= 0 && int64(st.Admitted[worst]) > res.Limit
		switch {
		case st.AtomicExpected && over:
			c.fail("over-admission", fmt.Sprintf("%s admitted %d of %d with a limit of %d in trial %d (%d over); it must be atomic",
				st.Label, st.Admitted[worst], res.Concurrency, res.Limit, worst+1, int64(st.Admitted[worst])-res.Limit), d.String())
		case st.AtomicExpected:
			c.SystemOut = "admitted at most the limit in every trial\n" + d.String()
		case over:
			c.SystemOut = "race reproduced (expected for a strategy that is not atomic)\n" + d.String()
		default:
			c.SystemOut = "race not reproduced at this concurrency (a note, not a failure)\n" + d.String()
		}
		s.Cases = append(s.Cases, c)
		s.timeS += float64(wall) / 1e6
	}
	return s
}
