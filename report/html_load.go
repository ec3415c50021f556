package report

import (
	"fmt"
	"github.com/ratelimit-dev/ratelimit/doc"
	"slices"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/words"
)

// htmlMaxBars bounds the bars of a timeline; longer runs are grouped.
const htmlMaxBars = 120

// loadExpected returns the admissions the verdict's replay expects in
// each second of the run, from the document, with the model in words; ok
// is false when the document has none to draw (no --expect, or a
// document written before version 2, which did not carry them).
func loadExpected(res *tally.Result) (perSec []float64, desc string, ok bool) {
	j := res.Expect
	if j == nil || j.ExpectedPerSecond == nil {
		return nil, "", false
	}
	perSec = make([]float64, len(j.ExpectedPerSecond))
	for i, n := range j.ExpectedPerSecond {
		perSec[i] = float64(n)
	}
	return perSec, j.Description, true
}

// loadHeadline is a run's verdict in a line, read from its checks: the
// failed ones first; on a pass, what was judged; then the warnings that
// did not hold (a fail-open limiter, a count over under faults, an older
// draft), so the headline never claims more than the body shows.
func loadHeadline(res *tally.Result) string {
	var parts []string
	if res.Verdict == "fail" {
		parts = append(parts, res.VerdictMessages...)
	} else {
		var judged []string
		judged = append(judged, "no check failed")
		if j := res.Expect; j != nil && !j.NotJudged && res.Faults == nil {
			judged = append(judged, "the admitted count fits the expectation")
		} else if j != nil && !j.NotJudged && j.Pass {
			judged = append(judged, "the fault windows held and the admitted count over the whole run fits the expectation")
		} else if j != nil && !j.NotJudged {
			judged = append(judged, "the fault windows held (the admitted count over the whole run is only a warning under --fault)")
		} else if j != nil && j.NotJudged {
			judged = append(judged, j.Note)
		} else if j == nil {
			judged = append(judged, "the admitted count was not judged (no --expect)")
		}
		parts = append(parts, strings.Join(judged, "; "))
	}
	var warned []string
	for _, c := range res.CheckList() {
		if c.Warning && !c.Pass && !c.Skipped {
			warned = append(warned, c.ID+": "+c.Message)
		}
	}
	if len(warned) > 0 {
		parts = append(parts, "warnings: "+strings.Join(warned, "; "))
	}
	return strings.Join(parts, "; ")
}

func loadHTML(b *strings.Builder, res *tally.Result) {
	fmt.Fprintf(b, "<p>%s %s · %s for %s · %d planned, %d sent, %d dropped · %s · %s</p>\n",
		esc(res.Method), htmlCode(res.Target), esc(res.Rate), esc(secs(res.DurationS)), res.Planned, res.Sent, res.Dropped,
		esc(loadIdentities(res)), esc(loadRunLabel(res)))
	if res.Recorded() {
		htmlNotes(b, "muted", res.Notes)
	}
	if !res.StartedAt.IsZero() {
		fmt.Fprintf(b, "<p class=\"muted\">started %s, last response after %s</p>\n", esc(res.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")), esc(secs(res.ElapsedS)))
	}
	if line := loadSegmentLine(res); line != "" {
		fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(line))
	}
	switch res.Verdict {
	case "pass", "fail":
		htmlVerdict(b, res.Verdict == "pass", loadHeadline(res))
	case doc.VerdictUndecided:
		htmlVerdict(b, false, "UNDECIDED: "+undecidedWhy(res))
	default:
		fmt.Fprintf(b, "<p class=\"verdict fail\"><span class=\"badge note\">INTERRUPTED</span> %s</p>\n",
			esc(fmt.Sprintf("stopped after %s: no verdict; %d iterations never fell due", secs(res.ElapsedS), res.NotStarted)))
	}

	// Timeline: stacked bars per second against the expected envelope.
	secs := loadSeconds(res, htmlMaxBars)
	env, envDesc, hasEnv := loadExpected(res)
	b.WriteString("<h3>Timeline: admitted, limited and failed per second</h3>\n")
	chart := barChart{
		title:  "requests per second by outcome",
		yLabel: "requests per second (by send time)", ints: true,
		legend: []legendItem{{"admitted (2xx, 3xx)", "admitted"}, {"limited (429)", "limited"}, {"failed (other status, errors)", "failed"}},
	}
	g := barGroup{}
	var line []float64
	for _, s := range secs {
		width := float64(s.to - s.from + 1)
		label := strconv.Itoa(s.from)
		title := fmt.Sprintf("second %d: %d admitted, %d limited, %d failed", s.from, s.admitted, s.limited, s.other)
		if s.to != s.from {
			title = fmt.Sprintf("seconds %d-%d (per second): %d admitted, %d limited, %d failed in all", s.from, s.to, s.admitted, s.limited, s.other)
		}
		g.bars = append(g.bars, bar{label: label, title: title, segs: []seg{
			{float64(s.admitted) / width, "admitted"}, {float64(s.limited) / width, "limited"}, {float64(s.other) / width, "failed"},
		}})
		if hasEnv {
			var e float64
			for k := s.from; k <= s.to && k < len(env); k++ {
				e += env[k]
			}
			line = append(line, e/width)
		}
	}
	chart.groups = []barGroup{g}
	chart.shades = loadFaultShades(res.Faults, secs)
	if len(chart.shades) > 0 {
		chart.legend = append(chart.legend, legendItem{"fault in force (shaded)", "fault"})
	}
	if hasEnv && len(line) == len(g.bars) {
		chart.line, chart.lineClass = line, "line-expected"
		chart.legend = append(chart.legend, legendItem{"expected admitted: " + envDesc, "line-expected"})
	}
	b.WriteString(chart.svg())
	switch {
	case hasEnv:
		b.WriteString("<p class=\"muted\">The dashed line is what the verdict's model admits in each second: the arrivals actually sent, replayed through it by the verdict (one limiter per identity).</p>\n")
	case res.Expect == nil:
		b.WriteString("<p class=\"muted\">No expected envelope: the run had no --expect.</p>\n")
	default:
		b.WriteString("<p class=\"muted\">No expected envelope: this document does not carry the expected admissions per second (documents written before version 2 do not), so only the verdict's total is shown.</p>\n")
	}

	// Cumulative admitted against the expectation and its tolerance.
	if hasEnv && len(res.Timeline) > 0 {
		n := max(len(env), len(res.Timeline))
		obs := make([]float64, n)
		exp := make([]float64, n)
		lo := make([]float64, n)
		hi := make([]float64, n)
		labels := make([]string, n)
		var co, ce float64
		tol := float64(res.Expect.Tolerance)
		for k := range n {
			if k < len(res.Timeline) {
				for st, v := range res.Timeline[k].Status {
					if loadClass(st) == 0 {
						co += float64(v)
					}
				}
			}
			if k < len(env) {
				ce += env[k]
			}
			obs[k], exp[k], lo[k], hi[k] = co, ce, max(ce-tol, 0), ce+tol
			labels[k] = strconv.Itoa(k+1) + "s"
		}
		band := legendItem{fmt.Sprintf("expected ±%d (the verdict's tolerance)", res.Expect.Tolerance), "band-expected"}
		b.WriteString("<h3>Admitted so far against the expectation</h3>\n")
		b.WriteString(linePlot{
			title: "cumulative admitted, observed and expected", yLabel: "admitted requests (cumulative)", xLabels: labels,
			series: []lineSeries{{name: "expected", class: "line-expected", values: exp}, {name: "observed", class: "line-observed", values: obs}},
			bandLo: lo, bandHi: hi, band: band,
		}.svg())
		// The same, as the difference from the expectation: on an axis
		// of a few requests the tolerance band is as wide as it matters.
		diff := make([]float64, n)
		dlo := make([]float64, n)
		dhi := make([]float64, n)
		for k := range n {
			diff[k], dlo[k], dhi[k] = obs[k]-exp[k], lo[k]-exp[k], hi[k]-exp[k]
		}
		b.WriteString(linePlot{
			title: loadDiffTitle(res), yLabel: "observed minus expected (requests, cumulative)", xLabels: labels,
			series: []lineSeries{{name: "observed minus expected", class: "line-observed", values: diff}},
			bandLo: dlo, bandHi: dhi, band: band, symmetric: true, ints: true, height: 200,
		}.svg())
		b.WriteString("<p class=\"muted\">The shaded band is the expectation ± the verdict's tolerance; the second chart shows the observed count's distance from the expectation, so a band of a few requests stays readable.</p>\n")
	}

	// Latency percentiles, from the due time and from the send.
	b.WriteString("<h3>Latency percentiles (ms)</h3>\n")
	var groups []barGroup
	for _, p := range []struct {
		name string
		get  func(tally.Latency) float64
	}{
		{"p50", func(l tally.Latency) float64 { return l.P50 }},
		{"p90", func(l tally.Latency) float64 { return l.P90 }},
		{"p95", func(l tally.Latency) float64 { return l.P95 }},
		{"p99", func(l tally.Latency) float64 { return l.P99 }},
		{"max", func(l tally.Latency) float64 { return l.Max }},
	} {
		grp := barGroup{label: p.name}
		for _, l := range []struct {
			name, class string
			lat         tally.Latency
		}{
			{"from due time", "lat-due", res.LatencyFromDue},
			{"from send", "lat-send", res.Latency},
			{"lateness", "lat-late", res.Lateness},
		} {
			v := p.get(l.lat)
			grp.bars = append(grp.bars, bar{title: fmt.Sprintf("%s %s: %s ms", p.name, l.name, loadNum(v)), segs: []seg{{v, l.class}}, value: loadNum(v)})
		}
		groups = append(groups, grp)
	}
	b.WriteString(barChart{
		title: "latency percentiles", yLabel: "milliseconds (log scale)", groups: groups, height: 260, logY: true,
		legend: []legendItem{{"from due time (no coordinated omission)", "lat-due"}, {"from send", "lat-send"}, {"lateness of the send", "lat-late"}},
	}.svg())
	loadLatencies(res).html(b)
	if res.LatencyFromDueHistogram != nil || res.LatencyHistogram != nil {
		b.WriteString("<h3>Latency histogram</h3>\n")
		b.WriteString(loadHistogramChart(res))
		b.WriteString("<p class=\"muted\">Each pair of bars counts the requests whose latency is above the previous bound and at most the bound under it (ms, 1-2-3-5 steps per decade, within the HDR histogram's resolution).</p>\n")
	} else {
		b.WriteString("<p class=\"muted\">Latency histogram: this document carries percentiles from HDR histograms but not their buckets, so the percentiles are drawn as bars instead.</p>\n")
	}

	// Statuses and counts.
	b.WriteString("<h3>Responses</h3>\n")
	var srows [][]string
	for _, k := range loadMDSorted(res.Status) {
		srows = append(srows, []string{esc(k), strconv.FormatInt(res.Status[k], 10), esc(loadShare(res.Status[k], res.Responses))})
	}
	for _, k := range loadMDSorted(res.Errors) {
		srows = append(srows, []string{esc("error: " + k), strconv.FormatInt(res.Errors[k], 10), esc(loadShare(res.Errors[k], res.Completed))})
	}
	htmlTable(b, []string{"status", "count", "share"}, srows, 1)
	fmt.Fprintf(b, "<p>%s</p>\n", esc(fmt.Sprintf("%.1f/s achieved; VUs: %s", res.AchievedRate, loadVUsLine(res))))

	// Header checks.
	b.WriteString("<h3>Header checks</h3>\n")
	if why := res.Headers.NotRecorded; why != "" {
		fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(loadHeadersSkipped(why)))
	}
	if res.Headers.NotRecorded == "" {
		loadHeaderFields(res).html(b)
		if notes := loadHeaderNotes(res); len(notes) > 0 {
			b.WriteString("<ul class=\"muted\">\n")
			for _, n := range notes {
				b.WriteString("<li>" + n.forHTML() + "</li>\n")
			}
			b.WriteString("</ul>\n")
		}
		loadHeaderChecks(res).html(b)
	}

	// Thresholds and the verdict on the admitted count.
	if len(res.Thresholds) > 0 {
		b.WriteString("<h3>Thresholds</h3>\n")
		loadThresholds(res).html(b)
	}
	if j := res.Expect; j != nil {
		if res.Faults != nil {
			b.WriteString("<h3>Admitted count over the whole run</h3>\n")
			fmt.Fprintf(b, "<p>%s <span class=\"muted\">(a warning under --fault: the faults disturb the whole run on purpose; the windows below are judged)</span></p>\n", esc(j.Line()))
		} else {
			b.WriteString("<h3>Verdict on the admitted count</h3>\n")
			htmlVerdict(b, j.Pass, j.Line())
		}
		if j.Description != "" {
			fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(j.Tol.Explain(j.Tolerance)))
		}
		if len(j.Readings) > 0 {
			loadReadings(j).html(b)
		}
		if j.Note != "" {
			fmt.Fprintf(b, "<p>%s</p>\n", esc(j.Note))
		}
	}
	if res.Faults != nil {
		loadFaultHTML(b, res.Faults)
	}
	b.WriteString("<h3>Load generator</h3>\n")
	head, reasons := loadGenerator(res)
	if len(reasons) > 0 {
		fmt.Fprintf(b, "<p class=\"warn\"><strong>%s</strong>:</p>\n", esc(head))
		htmlNotes(b, "", reasons)
	} else {
		fmt.Fprintf(b, "<p>%s</p>\n", esc(head))
	}
}

// loadHistMaxLabels bounds the bucket labels under the histogram.
const loadHistMaxLabels = 16

// loadHistogramChart draws the latency histograms from the due time and
// from the send side by side, one group of bars per bucket bound (the
// bounds are log-spaced, so the x axis is too); counts on a log scale so
// that a few slow requests stay visible next to thousands of fast ones.
func loadHistogramChart(res *tally.Result) string {
	series := []struct {
		name, class string
		h           *tally.Histogram
	}{
		{"from due time", "lat-due", res.LatencyFromDueHistogram},
		{"from send", "lat-send", res.LatencyHistogram},
	}
	var bounds []float64
	counts := make([]map[float64]int64, len(series))
	for k, s := range series {
		counts[k] = map[float64]int64{}
		if s.h == nil {
			continue
		}
		for _, bk := range s.h.Buckets {
			bounds = append(bounds, bk.LeMs)
			counts[k][bk.LeMs] += bk.Count
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	every := (len(bounds) + loadHistMaxLabels - 1) / loadHistMaxLabels
	chart := barChart{title: "latency histogram", yLabel: "requests (log scale)", height: 280, logY: true, ints: true}
	for i, le := range bounds {
		grp := barGroup{}
		if i%every == 0 || i == len(bounds)-1 {
			grp.label = "≤" + tickLabel(le)
		}
		for k, s := range series {
			if s.h == nil {
				continue
			}
			n := counts[k][le]
			value := ""
			if n > 0 {
				value = strconv.FormatInt(n, 10)
			}
			grp.bars = append(grp.bars, bar{title: s.name + ": " + loadBucketTitle(n, bounds, i), segs: []seg{{float64(n), s.class}}, value: value})
		}
		chart.groups = append(chart.groups, grp)
	}
	for _, s := range series {
		if s.h != nil {
			chart.legend = append(chart.legend, legendItem{s.name, s.class})
		}
	}
	return chart.svg()
}

// loadDiffTitle names the chart of the observed count's distance from the
// expectation as the verdict on the count reads: within the tolerance or
// not (and then whether that fails the run or is a warning under faults).
func loadDiffTitle(res *tally.Result) string {
	const t = "cumulative admitted minus expected"
	switch j := res.Expect; {
	case j.Pass:
		return t + ": the count ends within the tolerance"
	case res.Faults != nil:
		return t + ": the count ends outside the tolerance (a warning under --fault)"
	}
	return t + ": the count ends outside the tolerance (the count fails)"
}

// loadBucketTitle says what bucket i of the histogram counted: "1 request
// over 0.2 ms and at most 0.3 ms", "no request at most 0.1 ms".
func loadBucketTitle(n int64, bounds []float64, i int) string {
	count := "no request"
	if n > 0 {
		count = words.Commas(n) + " " + words.Plural(n, "request", "requests")
	}
	if i == 0 {
		return fmt.Sprintf("%s at most %s ms", count, tickLabel(bounds[i]))
	}
	return fmt.Sprintf("%s over %s ms and at most %s ms", count, tickLabel(bounds[i-1]), tickLabel(bounds[i]))
}

// loadIdentities is how the run told identities apart: "3 identities",
// "no identity header" (a recording: "no identity tag").
func loadIdentities(res *tally.Result) string {
	if res.Identities > 0 {
		return countNoun(res.Identities, "identity", "identities")
	}
	if res.Recorded() {
		return "no identity tag"
	}
	return "no identity header"
}
