package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// loadMaxTimelineRows bounds the timeline table; longer runs are grouped into
// buckets of several seconds.
const loadMaxTimelineRows = 30

// LoadText renders a load result in the spirit of k6's summary: what was
// planned and sent, statuses, latencies from the send and from the due
// time, the generator's own health, header checks, thresholds and the
// verdict on the admitted count.
func LoadText(w io.Writer, res *tally.Result, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	b.WriteString(st.Dim.Render("target: "+Printable(res.Method+" "+res.Target)) + "\n")
	fmt.Fprintf(&b, "%s %s for %s, %d planned, %s, %s\n",
		st.Title.Render("load"), Printable(res.Rate), loadSecs(res.DurationS), res.Planned, loadIdentities(res), Printable(loadRunLabel(res)))
	if line := loadSegmentLine(res); line != "" {
		b.WriteString(st.Dim.Render(Printable(line)) + "\n")
	}
	if res.Interrupted {
		b.WriteString(st.Warn.Render(fmt.Sprintf("interrupted after %s: the counts cover what ran; %d iterations never fell due", loadSecs(res.ElapsedS), res.NotStarted)) + "\n")
	}
	if res.Aborted {
		b.WriteString(st.Warn.Render("aborted (--abort-on-fail): "+Printable(res.AbortReason)+fmt.Sprintf("; %d iterations never fell due", res.NotStarted)) + "\n")
	}
	b.WriteString("\n")

	b.WriteString(table{rows: loadMetrics(res)}.text(st))
	b.WriteString("\n")
	b.WriteString(loadLatencies(res).text(st))
	b.WriteString("\n")

	if tl := loadTimeline(res); len(tl.rows) > 0 {
		b.WriteString(tl.text(st))
		b.WriteString("\n")
	}

	if why := res.Headers.NotRecorded; why != "" {
		b.WriteString(st.Dim.Render(Printable(loadHeadersSkipped(why))) + "\n")
	} else {
		b.WriteString(loadHeaderFields(res).text(st))
		for _, n := range loadHeaderNotes(res) {
			b.WriteString(n.forText(st) + "\n")
		}
		b.WriteString("\n")
		b.WriteString(loadHeaderChecks(res).text(st))
	}
	b.WriteString("\n")

	if len(res.Thresholds) > 0 {
		b.WriteString(loadThresholds(res).text(st))
	} else {
		b.WriteString(st.Dim.Render("no thresholds") + "\n")
	}
	if loadHasLatencyCheck(res) {
		b.WriteString(st.Dim.Render("latency thresholds are judged on the latency from the due time") + "\n")
	}

	if j := res.Expect; j != nil {
		title := "verdict on the admitted count"
		if res.Faults != nil {
			title += " (over the whole run: a warning under --fault)"
		}
		b.WriteString("\n" + st.Header.Render(title) + "\n")
		fmt.Fprintf(&b, "  %s\n", Printable(j.Line()))
		if j.Description != "" {
			fmt.Fprintf(&b, "  %s\n", st.Dim.Render(j.Tol.Explain(j.Tolerance)))
		}
		if len(j.Readings) > 0 {
			b.WriteString(loadReadings(j).text(st))
		}
		if j.Note != "" && j.Description != "" {
			fmt.Fprintf(&b, "  %s\n", Printable(j.Note))
		}
	}

	if res.Faults != nil {
		loadFaultText(&b, res.Faults, st)
	}

	b.WriteString("\n")
	head, reasons := loadGenerator(res)
	if len(reasons) > 0 {
		b.WriteString(st.Warn.Render(Printable(head)+":") + "\n")
		for _, r := range reasons {
			b.WriteString("  - " + Printable(r) + "\n")
		}
	} else {
		b.WriteString(Printable(head) + "\n")
	}
	// the verdict first (what failed), then the counts and what must
	// not pass unnoticed
	counts, warn := loadSummary(res)
	switch res.Verdict {
	case "pass":
		b.WriteString(st.Verdict(true) + ": " + counts)
	case "fail":
		b.WriteString(st.Verdict(false) + ": " + Printable(loadFailure(res)) + "\n  " + counts)
	case doc.VerdictUndecided:
		b.WriteString(st.Warn.Render("UNDECIDED") + ": " + Printable(undecidedWhy(res)) + "\n  " + counts)
	default:
		b.WriteString(st.Warn.Render("INTERRUPTED: no verdict") + ": " + counts)
	}
	if warn != "" {
		b.WriteString("; " + st.Warn.Render(warn))
	}
	for _, n := range res.Notes {
		b.WriteString("; note: " + Printable(n))
	}
	b.WriteString("\n")

	_, err := io.WriteString(w, b.String())
	return err
}

// loadMetrics are the rows of what was sent and what came back.
func loadMetrics(res *tally.Result) [][]cell {
	iterations := textCell(fmt.Sprintf("%d sent of %d planned, %d dropped, %.1f/s achieved", res.Sent, res.Planned, res.Dropped, res.AchievedRate))
	if res.Dropped > 0 {
		iterations = warnCell(fmt.Sprintf("%d sent of %d planned, %d dropped (%d no idle VU, %d late), %.1f/s achieved",
			res.Sent, res.Planned, res.Dropped, res.DroppedNoVU, res.DroppedLate, res.AchievedRate))
	}
	return [][]cell{
		{textCell("iterations"), iterations},
		textCells("completed", fmt.Sprintf("%d in %s (%d with a status), %s responses/s", res.Completed, loadSecs(res.ElapsedS), res.Responses, loadRate(res.ResponsesPerS))),
		textCells("statuses", loadStatusLine(res.Status)),
		textCells("refused", fmt.Sprintf("%d (%s of responses)", res.RateLimited, pct(res.RateLimitedPct/100))),
		textCells("failed", loadFailedLine(res)),
		textCells("vus", loadVUsLine(res)),
		textCells("data", loadBytesLine(res)),
	}
}

// loadVUsLine is the vus row: what the VUs did, or that a recording does
// not say.
func loadVUsLine(res *tally.Result) string {
	if res.Recorded() {
		return "not in the " + Printable(res.Source) + " recording"
	}
	return fmt.Sprintf("%d busy at most, %d allocated (%d pre-allocated, max %d)", res.VUs.MaxBusy, res.VUs.Peak, res.VUs.PreAllocated, res.VUs.Max)
}

// loadRunLabel ends the run's line: "run 5f2c9a1e", or for a recording
// of another tool "recorded by k6".
func loadRunLabel(res *tally.Result) string {
	if res.Recorded() {
		return "recorded by " + res.Source
	}
	return "run " + res.RunID
}

// loadRecordedGenerator is what a recording says of its generator: the
// generator check's message.
func loadRecordedGenerator(res *tally.Result) string {
	for _, c := range res.CheckList() {
		if c.ID == tally.CheckGenerator {
			return c.Message
		}
	}
	return "unknown"
}

// loadLatencies is the latency table: from the send, from the due time
// and the lateness of the send.
func loadLatencies(res *tally.Result) table {
	return table{headers: loadLatencyHeaders, right: []int{1, 2, 3, 4, 5, 6, 7}, rows: [][]cell{
		textCells(loadLatencyRow("from send", res.Latency)...),
		textCells(loadLatencyRow("from due time", res.LatencyFromDue)...),
		textCells(loadLatencyRow("lateness", res.Lateness)...),
	}}
}

// loadThresholds is one row per threshold.
func loadThresholds(res *tally.Result) table {
	t := table{headers: []string{"threshold", "actual", "result"}}
	for _, c := range res.Thresholds {
		stopped := ""
		if c.Aborted {
			stopped = "(stopped the run)"
		}
		t.rows = append(t.rows, []cell{textCell(loadCheckName(c)), textCell(c.Actual), verdictCell(c.Pass, stopped)})
	}
	return t
}

// loadHeaderNames name the header checks of a load run.
var loadHeaderNames = map[string]string{
	tally.CheckRateLimit:   "RateLimit valid",
	tally.CheckPolicy:      "RateLimit-Policy valid",
	tally.CheckRetryAfter:  "Retry-After on every 429",
	tally.CheckNotStorable: "429 not storable by caches",
}

// loadHeaderDetail is the counts behind a header check.
func loadHeaderDetail(res *tally.Result, id string) string {
	h := res.Headers
	switch id {
	case tally.CheckRateLimit, tally.CheckPolicy:
		f := h.RateLimit
		if id == tally.CheckPolicy {
			f = h.Policy
		}
		return fmt.Sprintf("present on %s of %s, valid on %s", loadShare(f.Present, h.Responses), countNoun(int(h.Responses), "response", "responses"), loadShare(f.Valid, f.Present))
	case tally.CheckRetryAfter:
		return fmt.Sprintf("present on %s of 429s, valid on %s", loadShare(h.RetryAfter.Present, res.RateLimited), loadShare(h.RetryAfter.Valid, res.RateLimited))
	}
	return fmt.Sprintf("%s of 429s storable", loadShare(h.Storable429, res.RateLimited))
}

// loadHeaderChecks is one row per header check: its name, its result and
// the counts (or why it failed or was skipped).
func loadHeaderChecks(res *tally.Result) table {
	t := table{headers: []string{"header check", "result", "details"}}
	for _, c := range res.CheckList() {
		name, ok := loadHeaderNames[c.ID]
		if !ok {
			continue
		}
		why := loadHeaderDetail(res, c.ID)
		if c.Skipped || !c.Pass {
			why = c.Message
		}
		t.rows = append(t.rows, []cell{textCell(name), checkCell(c), textCell(why)})
	}
	return t
}

// loadSecs prints seconds to the millisecond: "30s", "29.951s".
func loadSecs(s float64) string {
	return strconv.FormatFloat(math.Round(s*1000)/1000, 'f', -1, 64) + "s"
}

func loadNum(f float64) string {
	switch {
	case f >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case f >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'f', 2, 64)
	}
}

// loadLatencyHeaders head the latency table of every text renderer.
var loadLatencyHeaders = []string{"latency", "min", "mean", "p50", "p90", "p95", "p99", "max"}

// loadLatencyRow is one row of the latency table, auto-scaled (Latency).
// Documents written before p95 existed show it as "-".
func loadLatencyRow(name string, l tally.Latency) []string {
	if l.Count == 0 {
		return []string{name, "-", "-", "-", "-", "-", "-", "-"}
	}
	p95 := "-"
	if l.P95 > 0 || l.P90 == 0 {
		p95 = Latency(l.P95)
	}
	return []string{name, Latency(l.Min), Latency(l.Mean), Latency(l.P50), Latency(l.P90), p95, Latency(l.P99), Latency(l.Max)}
}

// loadRate prints a per-second rate with one decimal.
func loadRate(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// loadBytesLine is the data row: bytes in and out with their rates.
func loadBytesLine(res *tally.Result) string {
	per := func(n int64) string {
		if res.ElapsedS <= 0 {
			return byteSize(float64(n))
		}
		return fmt.Sprintf("%s (%s/s)", byteSize(float64(n)), byteSize(float64(n)/res.ElapsedS))
	}
	return "in " + per(res.BytesIn) + ", out " + per(res.BytesOut)
}

// loadHasLatencyCheck reports whether a threshold judges a latency.
func loadHasLatencyCheck(res *tally.Result) bool {
	for _, c := range res.Thresholds {
		switch c.Name {
		case "p50", "p90", "p95", "p99", "min", "mean", "max":
			return true
		}
	}
	return false
}

// loadCheckName is a threshold as shown: "p99 < 50ms", "failed <= 1%".
func loadCheckName(c judge.ThresholdCheck) string {
	op := c.Op
	if op == "" {
		op = "<=" // documents written before thresholds had an operator
	}
	return c.Name + " " + op + " " + c.Limit
}

// loadCheckMessage is why a threshold failed, as in verdict_messages.
func loadCheckMessage(c judge.ThresholdCheck) string {
	if c.Message != "" {
		return c.Message
	}
	return fmt.Sprintf("threshold %s: %s > %s", c.Name, c.Actual, c.Limit) // before messages were kept
}

// loadFailure is a failed run's headline: the failed checks' messages,
// the verdict's own words before any count.
func loadFailure(res *tally.Result) string {
	if len(res.VerdictMessages) > 0 {
		return strings.Join(res.VerdictMessages, "; ")
	}
	if f := doc.Failures(res.CheckList()); len(f) > 0 {
		return strings.Join(f, "; ")
	}
	return "the run failed"
}

// loadTargetSlow reports whether iterations were dropped because every VU
// was busy waiting on a slow target (tally.Result.TargetSlow): the
// target's latency, not the generator, held the rate back.
func loadTargetSlow(res *tally.Result) bool { return res.TargetSlow() }

// loadDropCause names why iterations were dropped or late: the target
// being slow (every VU was busy waiting on it), the generator's own limit,
// or both.
func loadDropCause(res *tally.Result) string {
	slow, behind := loadTargetSlow(res), res.GeneratorBehind()
	switch {
	case slow && behind:
		return "the target is slow (every VU was busy waiting on it) and the generator fell behind"
	case slow:
		return "the target is slow: every VU was busy waiting on it (the target's latency, not the generator's limit)"
	}
	return "the generator fell behind (the load generator's limit, not the target's)"
}

// loadGenerator is the generator section: a headline and the reasons
// behind it (none when it kept up).
func loadGenerator(res *tally.Result) (head string, reasons []string) {
	switch {
	case res.Generator.FellBehind:
		return loadDropCause(res), res.Generator.Reasons
	case res.Recorded():
		return "generator: " + loadRecordedGenerator(res), nil
	}
	return fmt.Sprintf("generator kept up: nothing dropped, lateness p99 %s", Latency(res.Lateness.P99)), nil
}

// loadSummary is the verdict line's tail: the counts that matter, and what
// must not pass unnoticed (iterations dropped and why, a run aborted).
func loadSummary(res *tally.Result) (counts, warn string) {
	counts = fmt.Sprintf("%s sent, %d allowed, %d refused, %d failed", countNoun(int(res.Sent), "request", "requests"), res.Allowed, res.RateLimited, res.Failed)
	var w []string
	if res.Dropped > 0 {
		why := "the generator fell behind"
		switch slow, behind := loadTargetSlow(res), res.GeneratorBehind(); {
		case slow && behind:
			why = "the target is slow and the generator fell behind"
		case slow:
			why = "the target is slow (every VU was busy)"
		}
		w = append(w, fmt.Sprintf("%d of %d iterations DROPPED (%d no idle VU, %d late): %s", res.Dropped, res.Planned, res.DroppedNoVU, res.DroppedLate, why))
	} else {
		counts += ", 0 dropped"
	}
	if res.Aborted {
		w = append(w, "aborted by a threshold")
	}
	return counts, strings.Join(w, "; ")
}

func loadSortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func loadStatusLine(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range loadSortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return Printable(strings.Join(parts, ", "))
}

func loadFailedLine(res *tally.Result) string {
	s := fmt.Sprintf("%d (%s)", res.Failed, pct(res.FailedPct/100))
	var errs []string
	for _, k := range loadSortedKeys(res.Errors) {
		errs = append(errs, fmt.Sprintf("%s: %d", k, res.Errors[k]))
	}
	if len(errs) > 0 {
		s += "; transport errors " + Printable(strings.Join(errs, ", "))
	}
	return s
}

// loadTimeline is the counts per status by the second of the send,
// grouped into buckets of several seconds for long runs, with the faults
// in force in each when the run had any.
func loadTimeline(res *tally.Result) table {
	if len(res.Timeline) == 0 {
		return table{}
	}
	cols := map[string]bool{}
	for _, s := range res.Timeline {
		for k := range s.Status {
			cols[k] = true
		}
	}
	var keys []string
	for k := range cols {
		keys = append(keys, k)
	}
	sort.Strings(keys) // "error" sorts after the numeric codes
	step := (len(res.Timeline) + loadMaxTimelineRows - 1) / loadMaxTimelineRows
	t := table{headers: append([]string{"second"}, keys...)}
	for i := range keys {
		t.right = append(t.right, i+1)
	}
	marks := loadFaultMarks(res)
	if marks != nil {
		t.headers = append(t.headers, "fault")
	}
	for i := 0; i < len(res.Timeline); i += step {
		end := min(i+step, len(res.Timeline))
		label := strconv.Itoa(i)
		if end-i > 1 {
			label = fmt.Sprintf("%d-%d", i, end-1)
		}
		row := []cell{textCell(label)}
		for _, k := range keys {
			var n int64
			for _, s := range res.Timeline[i:end] {
				n += s.Status[k]
			}
			row = append(row, textCell(strconv.FormatInt(n, 10)))
		}
		if marks != nil {
			mark := textCell("")
			if m := marks(float64(i), float64(end)); m != "" {
				mark = codeCell(m)
			}
			row = append(row, mark)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

func loadShare(n, of int64) string {
	if of == 0 {
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprintf("%d (%s)", n, pct(float64(n)/float64(of)))
}

// loadHeadersSkipped says why no header check ran (a recording without
// response headers), in the words of the checks themselves.
func loadHeadersSkipped(why string) string { return "header checks: not checked: " + why }

// loadHeaderFields is the table of the rate limit header fields: on how
// many responses each was present and valid, and its first problem.
func loadHeaderFields(res *tally.Result) table {
	h, limited := res.Headers, res.RateLimited
	return table{headers: []string{"header", "present", "valid", "first problem"}, rows: [][]cell{
		textCells("RateLimit", loadShare(h.RateLimit.Present, h.Responses), loadShare(h.RateLimit.Valid, h.RateLimit.Present), h.RateLimit.Example),
		textCells("RateLimit-Policy", loadShare(h.Policy.Present, h.Responses), loadShare(h.Policy.Valid, h.Policy.Present), h.Policy.Example),
		textCells("Retry-After on 429", loadShare(h.RetryAfter.Present, limited), loadShare(h.RetryAfter.Valid, limited), h.RetryAfter.Example),
	}}
}

// loadHeaderNotes are the lines under the header tables: the policy seen,
// whether a 429 may be cached, legacy headers.
func loadHeaderNotes(res *tally.Result) []cell {
	h, limited := res.Headers, res.RateLimited
	var out []cell
	if h.PolicyValue != "" {
		out = append(out, cell{prefix: "policy: RateLimit-Policy: ", text: h.PolicyValue, kind: cellCode})
	}
	if limited > 0 {
		if h.Storable429 > 0 {
			out = append(out, warnCell(fmt.Sprintf("%s of 429s may be stored by a cache: %s", loadShare(h.Storable429, limited), h.StorableWhy)))
		} else {
			out = append(out, textCell("no 429 may be stored by a cache"))
		}
	}
	if h.Legacy > 0 {
		out = append(out, textCell(fmt.Sprintf("legacy %s* headers on %s of responses", h.LegacyName, loadShare(h.Legacy, h.Responses))))
	}
	return out
}

// loadReadings is the table of the readings of RateLimit-Policy the
// verdict weighed: what each expects and whether the count fits it.
func loadReadings(j *judge.Judged) table {
	t := table{headers: []string{"reading of RateLimit-Policy", "expected", "tolerance", "observed " + strconv.FormatInt(j.Observed, 10)}, right: []int{1, 2}}
	for _, r := range j.Readings {
		fit := "does not fit"
		if r.Fits {
			fit = "fits"
		}
		t.rows = append(t.rows, textCells(r.Description, strconv.FormatInt(r.Expected, 10), "±"+strconv.FormatInt(r.Tolerance, 10), fit))
	}
	return t
}

var loadKind = kind[*tally.Result]{
	name: tally.Kind, version: tally.Version,
	older:    map[int]func([]byte) (*tally.Result, error){1: loadFromV1},
	validate: validateLoad,
	checks:   (*tally.Result).CheckList,
	verdict: func(r *tally.Result) (pass, has bool) {
		return r.Verdict == "pass", r.Verdict == "pass" || r.Verdict == "fail" || r.Verdict == doc.VerdictUndecided
	},
	text:     LoadText,
	markdown: loadMarkdown,
	junit:    loadSuite,
	html:     loadHTML,
}

// loadFromV1: the arrival rate is arrival_rate, seconds are milliseconds,
// rate_limited is refused; verdict_messages, which the checks replace, are
// kept for the checks to be derived from.
func loadFromV1(data []byte) (*tally.Result, error) {
	var messages []string
	res, err := upgradeTree[*tally.Result](data, func(t jsonTree) {
		t["version"] = tally.Version
		rename(t, "rate", "arrival_rate")
		rename(t, "rate_per_s", "arrival_rate_per_s")
		for _, f := range []string{"duration", "elapsed", "timeout"} {
			renameMs(t, f+"_s", f+"_ms", sToMs)
		}
		rename(t, "rate_limited", "refused")
		rename(t, "rate_limited_pct", "refused_pct")
		if x := object(t, "expect"); x != nil {
			renameMs(x, "over_s", "over_ms", sToMs)
		}
		if ms, ok := t["verdict_messages"].([]any); ok {
			for _, m := range ms {
				if s, ok := m.(string); ok {
					messages = append(messages, s)
				}
			}
		}
		delete(t, "verdict_messages")
	})
	if err != nil {
		return nil, err
	}
	res.VerdictMessages = messages
	return res, nil
}

// loadSegmentLine says which segment a document is, or which segments a
// merged one holds; "" for a whole run.
func loadSegmentLine(res *tally.Result) string {
	si := res.Segment
	if si == nil {
		return ""
	}
	start := ""
	if si.StartAt != nil {
		start = ", started together at " + si.StartAt.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if si.Index >= 0 {
		s := fmt.Sprintf("segment %d/%d of a plan of %d%s, first iteration %s late", si.Index, si.Count, si.TotalPlanned, start, Latency(si.FirstLatenessMs))
		if si.Expect != "" {
			s += "; the verdict on the admitted count is the merge's"
		}
		return s
	}
	s := fmt.Sprintf("merged %d of %d segments (%d of %d planned)%s", len(si.Merged), si.Count, res.Planned, si.TotalPlanned, start)
	if len(si.Missing) > 0 {
		parts := make([]string, len(si.Missing))
		for i, k := range si.Missing {
			parts[i] = strconv.Itoa(k)
		}
		s += "; missing: " + strings.Join(parts, ", ")
	}
	return s
}

// undecidedWhy is why an undecided run decided nothing, from its decided
// check.
func undecidedWhy(res *tally.Result) string {
	for _, c := range res.CheckList() {
		if c.ID == doc.CheckDecided {
			return strings.TrimPrefix(c.Message, "undecided: ")
		}
	}
	return "the run decided nothing"
}
