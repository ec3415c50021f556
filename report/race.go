package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/race"
)

// RaceSentence says the run in one sentence, e.g. "naive GET+SET admitted
// 200 of 200; Lua script admitted 10 of 200". A strategy whose trials
// differ shows the range, "187-200 of 200".
func RaceSentence(res race.Result) string {
	parts := make([]string, 0, len(res.Strategies))
	for _, s := range res.Strategies {
		n := strconv.Itoa(s.AdmittedMin)
		if s.AdmittedMax != s.AdmittedMin {
			n += "-" + strconv.Itoa(s.AdmittedMax)
		}
		parts = append(parts, fmt.Sprintf("%s admitted %s of %d", s.Label, n, res.Concurrency))
	}
	if len(parts) == 0 {
		return "no strategy was raced"
	}
	return Printable(strings.Join(parts, "; "))
}

// RaceText renders a race result: the sentence, the server line, one row
// per strategy and trial, the spread across trials, the verdict and notes.
func RaceText(w io.Writer, res race.Result, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	b.WriteString(st.Title.Render(RaceSentence(res)) + "\n")
	b.WriteString(ServerLine(res.Server, st))
	where := ""
	if res.Node != "" {
		where = ", all on node " + res.Node
	}
	b.WriteString(Printable(fmt.Sprintf("race: %s at one barrier, limit %d, %s, keys %s%s (deleted)",
		countNoun(res.Concurrency, "goroutine", "goroutines"), res.Limit, countNoun(res.Trials, "trial", "trials"), res.Keys, where)) + "\n\n")

	headers := []string{"strategy", "atomic", "trial", "admitted", "over", "in redis", "lost", "retries", "give-ups", "errors", "p50", "p99", "wall"}
	var rows [][]string
	for _, s := range res.Strategies {
		for t := range s.Admitted {
			name, atomic := "", ""
			if t == 0 {
				name, atomic = Printable(s.Label), raceYesNo(s.AtomicExpected)
			}
			over := strconv.Itoa(raceAt(s.OverAdmitted, t))
			if s.AtomicExpected && raceAt(s.OverAdmitted, t) > 0 {
				over = st.Fail.Render(over)
			}
			rows = append(rows, []string{
				name, atomic, strconv.Itoa(t + 1),
				fmt.Sprintf("%d/%d", s.Admitted[t], res.Concurrency),
				over,
				raceOptInt(s.FinalValue, t),
				raceOptInt(s.LostUpdates, t),
				strconv.Itoa(raceAt(s.Retries, t)),
				strconv.Itoa(raceAt(s.GiveUps, t)),
				strconv.Itoa(raceAt(s.Errors, t)),
				raceMicros(raceAt(s.TrialP50Us, t)),
				raceMicros(raceAt(s.TrialP99Us, t)),
				raceMicros(raceAt(s.WallUs, t)),
			})
		}
	}
	b.WriteString(Table(headers, rows, st, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12))
	b.WriteString("\n")

	rows = rows[:0]
	for _, s := range res.Strategies {
		rows = append(rows, []string{
			Printable(s.Label), strconv.Itoa(s.AdmittedMin), raceMedian(s.AdmittedMedian), strconv.Itoa(s.AdmittedMax),
			raceMicros(s.P50Us), raceMicros(s.P99Us), raceOutcome(s, res.Limit, st),
		})
	}
	b.WriteString(Table([]string{"across trials", "min", "median", "max", "p50", "p99", "result"}, rows, st, 1, 2, 3, 4, 5))
	b.WriteString("\n")

	if res.Pass() {
		fmt.Fprintf(&b, "verdict: %s  no strategy that must be atomic admitted more than the limit of %d\n", st.Verdict(true), res.Limit)
	} else {
		fmt.Fprintf(&b, "verdict: %s  %s\n", st.Verdict(false), Printable(strings.Join(res.Failures, "; ")))
	}
	for _, n := range res.Notes {
		b.WriteString(st.Warn.Render("note: "+Printable(n)) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func raceOutcome(s race.Strategy, limit int64, st Styles) string {
	over := s.AdmittedMax > int(limit)
	if s.AtomicExpected {
		if over {
			return st.Verdict(false) + " over the limit"
		}
		return st.Verdict(true)
	}
	if over {
		return "race reproduced (expected)"
	}
	return st.Warn.Render("race not reproduced")
}

func raceAt[T any](xs []T, i int) T {
	var zero T
	if i < len(xs) {
		return xs[i]
	}
	return zero
}

func raceOptInt(xs []*int64, i int) string {
	if v := raceAt(xs, i); v != nil {
		return strconv.FormatInt(*v, 10)
	}
	return "-"
}

func raceYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func raceMedian(m float64) string {
	if m == float64(int64(m)) {
		return strconv.FormatInt(int64(m), 10)
	}
	return strconv.FormatFloat(m, 'f', 1, 64)
}

// raceMicros renders a latency measured in microseconds with
// report.Latency, so race scales its columns as eval and load do.
func raceMicros(us int64) string {
	return Latency(float64(us) / 1e3)
}
