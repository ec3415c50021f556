package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/race/racedoc"
)

// RaceSentence says the run in one sentence, e.g. "naive GET+SET admitted
// 200 of 200; Lua script admitted 10 of 200". A strategy whose trials
// differ shows the range, "187-200 of 200".
func RaceSentence(res racedoc.Result) string {
	parts := make([]string, 0, len(res.Strategies))
	for _, s := range res.Strategies {
		n := strconv.Itoa(s.AllowedMin)
		if s.AllowedMax != s.AllowedMin {
			n += "-" + strconv.Itoa(s.AllowedMax)
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
func RaceText(w io.Writer, res racedoc.Result, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	b.WriteString(st.Title.Render(RaceSentence(res)) + "\n")
	b.WriteString(ServerLine(serverOf(res.Header), st))
	where := ""
	if res.Node != "" {
		where = ", all on node " + res.Node
	}
	b.WriteString(Printable(fmt.Sprintf("race: %s at one barrier, limit %d, %s, keys %s%s (deleted)",
		countNoun(res.Concurrency, "goroutine", "goroutines"), res.Limit, countNoun(res.Trials, "trial", "trials"), res.KeyPattern, where)) + "\n")
	if line := raceModelLine(res); line != "" {
		b.WriteString(Printable(line) + "\n")
	}
	b.WriteString("\n")
	b.WriteString(raceTrials(res).text(st))
	b.WriteString("\n")
	b.WriteString(raceAcross(res).text(st))
	b.WriteString("\n")
	if res.Pass() {
		fmt.Fprintf(&b, "verdict: %s  %s\n", st.Verdict(true), Printable(racedoc.PassLine(res)))
	} else {
		fmt.Fprintf(&b, "verdict: %s  %s\n", st.Verdict(false), Printable(strings.Join(res.Failures(), "; ")))
	}
	for _, n := range res.Notes {
		b.WriteString(st.Warn.Render("note: "+Printable(n)) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// raceModelLine names the model the user script is judged against
// (--expect), or "" when there is none.
func raceModelLine(res racedoc.Result) string {
	for _, s := range res.Strategies {
		if len(s.Expected) > 0 {
			return fmt.Sprintf("%s judged against %s (--expect %s): what it admits over each trial as it ran, from the first call's send to the last call's answer",
				s.Label, s.Expected[0].Description, s.Expected[0].Model)
		}
	}
	return ""
}

// raceJudged reports whether some strategy was judged against a model.
func raceJudged(res racedoc.Result) bool {
	for _, s := range res.Strategies {
		if len(s.Expected) > 0 {
			return true
		}
	}
	return false
}

// raceTrials is the table of every strategy and trial; with a model
// (--expect), a column gives what it admits over each trial.
func raceTrials(res racedoc.Result) table {
	t := table{
		headers: []string{"strategy", "expected atomic", "trial", "admitted", "over", "in redis", "lost", "retries", "give-ups", "errors", "p50", "p99", "wall"},
		right:   []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
	}
	judged := raceJudged(res)
	if judged {
		t.headers = append(t.headers[:5:5], append([]string{"model admits"}, t.headers[5:]...)...)
		t.right = append(t.right, 13)
	}
	for _, s := range res.Strategies {
		for k := range s.Allowed {
			name, atomic := "", ""
			if k == 0 {
				name, atomic = s.Label, raceYesNo(s.AtomicExpected)
			}
			over := textCell(strconv.Itoa(raceAt(s.OverLimit, k)))
			if s.AtomicExpected && raceAt(s.OverLimit, k) > 0 {
				over = flagCell(over.text)
			}
			if len(s.Expected) > 0 {
				over = textCell(over.text) // judged by the model, not the limit
			}
			row := []cell{
				textCell(name), textCell(atomic), textCell(strconv.Itoa(k + 1)),
				textCell(fmt.Sprintf("%d/%d", s.Allowed[k], res.Concurrency)), over,
				textCell(raceOptInt(s.FinalValue, k)), textCell(raceOptInt(s.LostUpdates, k)),
				textCell(strconv.Itoa(raceAt(s.Retries, k))), textCell(strconv.Itoa(raceAt(s.GiveUps, k))), textCell(strconv.Itoa(raceAt(s.Errors, k))),
				textCell(Latency(raceAt(s.TrialP50Ms, k))), textCell(Latency(raceAt(s.TrialP99Ms, k))), textCell(Latency(raceAt(s.WallMs, k))),
			}
			if judged {
				m := textCell("-")
				if k < len(s.Expected) {
					m = textCell(s.Expected[k].Range())
					if !s.Expected[k].Pass {
						m = flagCell(m.text)
					}
				}
				row = append(row[:5:5], append([]cell{m}, row[5:]...)...)
			}
			t.rows = append(t.rows, row)
		}
	}
	return t
}

// raceAcross is the table of each strategy over all its trials.
func raceAcross(res racedoc.Result) table {
	t := table{headers: []string{"across trials", "min", "median", "max", "p50", "p99", "result"}, right: []int{1, 2, 3, 4, 5}}
	for _, s := range res.Strategies {
		t.rows = append(t.rows, []cell{
			textCell(s.Label), textCell(strconv.Itoa(s.AllowedMin)), textCell(raceMedian(s.AllowedMedian)), textCell(strconv.Itoa(s.AllowedMax)),
			textCell(Latency(s.P50Ms)), textCell(Latency(s.P99Ms)), raceOutcome(s, res.Limit, res.Concurrency),
		})
	}
	return t
}

// raceOutcome is a strategy's result: PASS or FAIL for one that must be
// atomic (against its model when it has one), whether the race showed for
// one that is not.
func raceOutcome(s racedoc.Strategy, limit int64, concurrency int) cell {
	over := s.AllowedMax > int(limit)
	switch {
	case len(s.Expected) > 0:
		if c := racedoc.Checks(racedoc.Result{Limit: limit, Concurrency: concurrency, Strategies: []racedoc.Strategy{s}}); !c[0].Pass {
			return verdictCell(false, "outside the model")
		}
		return verdictCell(true, "")
	case s.AtomicExpected && over:
		return verdictCell(false, "over the limit")
	case s.AtomicExpected:
		return verdictCell(true, "")
	case over:
		return textCell("race reproduced (expected)")
	}
	return warnCell("race not reproduced")
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

var raceKind = kind[racedoc.Result]{
	name: racedoc.Kind, version: racedoc.Version,
	older:    map[int]func([]byte) (racedoc.Result, error){1: raceFromV1},
	validate: validateRace,
	checks:   racedoc.Result.CheckList,
	text:     RaceText,
	markdown: raceMarkdown,
	junit:    raceSuite,
	html:     raceHTML,
}

// raceFromV1: admitted becomes allowed, over_admitted over_limit, the
// microsecond latencies milliseconds, keys key_pattern; the failures are
// replaced by the checks derived from the strategies.
func raceFromV1(data []byte) (racedoc.Result, error) {
	res, err := upgradeTree[racedoc.Result](data, func(t jsonTree) {
		t["version"] = racedoc.Version
		rename(t, "keys", "key_pattern")
		delete(t, "failures")
		for _, s := range objects(t, "strategies") {
			rename(s, "admitted", "allowed")
			rename(s, "over_admitted", "over_limit")
			rename(s, "script", "script_file")
			rename(s, "admitted_min", "allowed_min")
			rename(s, "admitted_median", "allowed_median")
			rename(s, "admitted_max", "allowed_max")
			for _, f := range []string{"trial_p50", "trial_p99", "wall", "p50", "p99"} {
				renameMs(s, f+"_us", f+"_ms", usToMs)
			}
		}
	})
	if err != nil {
		return res, err
	}
	res.Checks = racedoc.Checks(res)
	res.Verdict = doc.Verdict(res.Checks)
	return res, nil
}
