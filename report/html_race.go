package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/race/racedoc"
)

func raceHTML(b *strings.Builder, res racedoc.Result) {
	fmt.Fprintf(b, "<p><strong>%s</strong></p>\n", esc(RaceSentence(res)))
	htmlServer(b, serverOf(res.Header).String())
	where := ""
	if res.Node != "" {
		where = ", all on node " + res.Node
	}
	fmt.Fprintf(b, "<p>%s</p>\n", esc(fmt.Sprintf("%d goroutines at one barrier, limit %d, %s, keys %s%s (deleted)",
		res.Concurrency, res.Limit, countNoun(res.Trials, "trial", "trials"), res.KeyPattern, where)))
	if line := raceModelLine(res); line != "" {
		fmt.Fprintf(b, "<p>%s</p>\n", esc(line))
	}
	if res.Pass() {
		htmlVerdict(b, true, racedoc.PassLine(res))
	} else {
		htmlVerdict(b, false, strings.Join(res.Failures(), "; "))
	}

	b.WriteString("<h3>Admitted per strategy and trial</h3>\n")
	var groups []barGroup
	for _, s := range res.Strategies {
		g := barGroup{label: s.Label}
		for t, a := range s.Allowed {
			cls := "racy"
			if s.AtomicExpected {
				cls = "atomic"
				if int64(a) > res.Limit && len(s.Expected) == 0 || t < len(s.Expected) && !s.Expected[t].Pass {
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

	raceTrials(res).html(b)
	raceAcross(res).html(b)
	htmlNotes(b, "warn", res.Notes)
}

// raceLogRatio is how many times the tallest bar may exceed the limit
// (or the smallest admitted count) before the chart of admissions turns
// logarithmic: past it, the limit would be a few pixels of a linear axis
// (10000 goroutines against a limit of 100 is 1%).
const raceLogRatio = 20

// raceLogAxis reports whether the admissions are drawn on a log axis.
func raceLogAxis(res racedoc.Result) bool {
	small, top := float64(res.Limit), float64(res.Limit)
	for _, s := range res.Strategies {
		for _, a := range s.Allowed {
			if a > 0 {
				small = min(small, float64(a))
			}
			top = max(top, float64(a))
		}
	}
	return small > 0 && top > raceLogRatio*small
}
