package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/race"
)

func raceHTML(b *strings.Builder, res race.Result) {
	fmt.Fprintf(b, "<p><strong>%s</strong></p>\n", esc(RaceSentence(res)))
	htmlServer(b, res.Server.String())
	where := ""
	if res.Node != "" {
		where = ", all on node " + res.Node
	}
	fmt.Fprintf(b, "<p>%s</p>\n", esc(fmt.Sprintf("%d goroutines at one barrier, limit %d, %s, keys %s%s (deleted)",
		res.Concurrency, res.Limit, countNoun(res.Trials, "trial", "trials"), res.Keys, where)))
	if res.Pass() {
		htmlVerdict(b, true, fmt.Sprintf("no strategy that must be atomic admitted more than the limit of %d", res.Limit))
	} else {
		htmlVerdict(b, false, strings.Join(res.Failures, "; "))
	}

	b.WriteString("<h3>Admitted per strategy and trial</h3>\n")
	var groups []barGroup
	for _, s := range res.Strategies {
		g := barGroup{label: s.Label}
		for t, a := range s.Admitted {
			cls := "racy"
			if s.AtomicExpected {
				cls = "atomic"
				if int64(a) > res.Limit {
					cls = "over"
				}
			}
			g.bars = append(g.bars, bar{label: "t" + strconv.Itoa(t+1), segs: []seg{{float64(a), cls}}, value: strconv.Itoa(a),
				title: fmt.Sprintf("%s, trial %d: admitted %d of %d (limit %d)", s.Label, t+1, a, res.Concurrency, res.Limit)})
		}
		groups = append(groups, g)
	}
	logY := raceLogAxis(res)
	yLabel := fmt.Sprintf("admitted of %d requests", res.Concurrency)
	if logY {
		yLabel += " (log scale)"
	}
	b.WriteString(barChart{
		title: "admitted per strategy and trial against the limit", yLabel: yLabel,
		groups: groups, ref: &refLine{value: float64(res.Limit), label: fmt.Sprintf("limit %d", res.Limit), class: "ref-limit"},
		legend: []legendItem{{"atomic, within the limit", "atomic"}, {"atomic, over the limit", "over"}, {"not atomic (racy by design)", "racy"}, {"limit", "ref-limit"}},
		height: 320, ints: true, logY: logY,
	}.svg())

	var rows [][]string
	for _, s := range res.Strategies {
		for t := range s.Admitted {
			name, atomic := "", ""
			if t == 0 {
				name, atomic = esc(s.Label), raceYesNo(s.AtomicExpected)
			}
			over := strconv.Itoa(raceAt(s.OverAdmitted, t))
			if s.AtomicExpected && raceAt(s.OverAdmitted, t) > 0 {
				over = htmlBadge(false) + " " + over
			}
			rows = append(rows, []string{name, atomic, strconv.Itoa(t + 1), fmt.Sprintf("%d/%d", s.Admitted[t], res.Concurrency), over,
				raceOptInt(s.FinalValue, t), raceOptInt(s.LostUpdates, t), strconv.Itoa(raceAt(s.Retries, t)),
				strconv.Itoa(raceAt(s.GiveUps, t)), strconv.Itoa(raceAt(s.Errors, t)),
				esc(raceMicros(raceAt(s.TrialP50Us, t))), esc(raceMicros(raceAt(s.TrialP99Us, t))), esc(raceMicros(raceAt(s.WallUs, t)))})
		}
	}
	htmlTable(b, []string{"strategy", "atomic", "trial", "admitted", "over", "in redis", "lost", "retries", "give-ups", "errors", "p50", "p99", "wall"},
		rows, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)

	rows = rows[:0]
	for _, s := range res.Strategies {
		result := esc(raceMDOutcome(s, res.Limit))
		switch {
		case s.AtomicExpected && s.AdmittedMax > int(res.Limit):
			result = htmlBadge(false) + " over the limit"
		case s.AtomicExpected:
			result = htmlBadge(true)
		}
		rows = append(rows, []string{esc(s.Label), strconv.Itoa(s.AdmittedMin), raceMedian(s.AdmittedMedian), strconv.Itoa(s.AdmittedMax),
			esc(raceMicros(s.P50Us)), esc(raceMicros(s.P99Us)), result})
	}
	htmlTable(b, []string{"across trials", "min", "median", "max", "p50", "p99", "result"}, rows, 1, 2, 3, 4, 5)
	htmlNotes(b, "warn", res.Notes)
}

// raceLogRatio is how many times the tallest bar may exceed the limit
// (or the smallest admitted count) before the chart of admissions turns
// logarithmic: past it, the limit would be a few pixels of a linear axis
// (10000 goroutines against a limit of 100 is 1%).
const raceLogRatio = 20

// raceLogAxis reports whether the admissions are drawn on a log axis.
func raceLogAxis(res race.Result) bool {
	small, top := float64(res.Limit), float64(res.Limit)
	for _, s := range res.Strategies {
		for _, a := range s.Admitted {
			if a > 0 {
				small = min(small, float64(a))
			}
			top = max(top, float64(a))
		}
	}
	return small > 0 && top > raceLogRatio*small
}
