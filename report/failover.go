package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/failover/failoverdoc"
)

// The failover kind: per variant (no-wait, wait) a row per trial with
// what the failover gave away (extra admissions, lost writes, time
// without a primary, latency), the spread over trials, the trade-off of
// WAIT, the checks and the verdict, drawn the same way in every format.

var failoverKind = kind[failoverdoc.Result]{
	name: failoverdoc.Kind, version: failoverdoc.Version,
	validate: validateFailover,
	checks:   func(res failoverdoc.Result) []doc.Check { return res.Checks },
	text:     FailoverText,
	markdown: failoverMarkdown,
	junit:    failoverSuite,
	html:     failoverHTML,
}

var failoverAlgos = evalAlgos[1:]

func validateFailover(res failoverdoc.Result) error {
	if err := firstErr(
		oneOf("verdict", res.Verdict, "pass", "fail"),
		oneOf("algo", res.Algo, failoverAlgos...),
		nonNeg("params.capacity", res.Params.Capacity), nonNeg("params.rate_per_s", res.Params.RatePerS),
		nonNeg("params.limit", res.Params.Limit), nonNeg("params.window_ms", res.Params.WindowMs),
		nonNeg("params.burst", res.Params.Burst), nonNeg("params.cost", res.Params.Cost),
		nonNeg("rate_per_s", res.RatePerS), nonNeg("clients", res.Clients), nonNeg("trials", res.Trials),
		nonNeg("before_ms", res.BeforeMs), nonNeg("after_ms", res.AfterMs),
	); err != nil {
		return err
	}
	if res.MaxExtra != nil {
		if err := nonNeg("max_extra", *res.MaxExtra); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i, v := range res.Variants {
		p := fmt.Sprintf("variants[%d]", i)
		if err := firstErr(
			oneOf(p+".name", v.Name, failoverdoc.VariantNoWait, failoverdoc.VariantWait),
			nonNeg(p+".wait_replicas", v.WaitReplicas), nonNeg(p+".wait_timeout_ms", v.WaitTimeoutMs),
			validateStats(p+".extra_allowed", v.ExtraAllowed, false), validateStats(p+".lost_writes", v.LostWrites, true),
			validateStats(p+".unavailable_ms", v.UnavailableMs, true),
			validateStats(p+".p50_ms", v.P50Ms, true), validateStats(p+".p99_ms", v.P99Ms, true),
		); err != nil {
			return err
		}
		if seen[v.Name] {
			return fieldf("%s.name is %q again, want each variant once", p, v.Name)
		}
		seen[v.Name] = true
		for k, t := range v.Trials {
			if err := validateFailoverTrial(fmt.Sprintf("%s.trials[%d]", p, k), t); err != nil {
				return err
			}
		}
	}
	if t := res.Tradeoff; t != nil {
		if err := firstErr(
			finiteField("tradeoff.lost_writes_saved", t.LostWritesSaved), finiteField("tradeoff.extra_allowed_saved", t.ExtraAllowedSaved),
			finiteField("tradeoff.p50_cost_ms", t.P50CostMs), finiteField("tradeoff.p99_cost_ms", t.P99CostMs),
			nonNeg("tradeoff.not_durable", t.NotDurable),
		); err != nil {
			return err
		}
	}
	return nil
}

func validateFailoverTrial(p string, t failoverdoc.Trial) error {
	if err := firstErr(
		atLeast(p+".trial", t.Trial, 1),
		nonNeg(p+".decisions", t.Decisions), nonNeg(p+".allowed", t.Allowed), nonNeg(p+".model_allowed", t.ModelAllowed),
		nonNeg(p+".lost_decisions", t.LostDecisions), nonNeg(p+".lost_writes", t.LostWrites),
		nonNeg(p+".not_durable", t.NotDurable), nonNeg(p+".dropped", t.Dropped), nonNeg(p+".failed", t.Failed),
		nonNeg(p+".failover_at_ms", t.FailoverAtMs), nonNeg(p+".duration_ms", t.DurationMs),
		nonNeg(p+".failover_ms", t.FailoverMs), nonNeg(p+".stale_primary_ms", t.StalePrimaryMs),
		nonNeg(p+".unavailable_ms", t.UnavailableMs), nonNeg(p+".recovery_ms", t.RecoveryMs),
		nonNeg(p+".p50_ms", t.P50Ms), nonNeg(p+".p99_ms", t.P99Ms), nonNeg(p+".max_ms", t.MaxMs),
	); err != nil {
		return err
	}
	switch {
	case t.Allowed > t.Decisions:
		return fieldf("%s.allowed is %d, want at most decisions (%d)", p, t.Allowed, t.Decisions)
	case t.ModelAllowed > t.Decisions:
		return fieldf("%s.model_allowed is %d, want at most decisions (%d)", p, t.ModelAllowed, t.Decisions)
	case t.LostWrites > t.LostDecisions:
		return fieldf("%s.lost_writes is %d, want at most lost_decisions (%d)", p, t.LostWrites, t.LostDecisions)
	case t.P50Ms > t.P99Ms || t.P99Ms > t.MaxMs:
		return fieldf("%s: p50_ms %v, p99_ms %v, max_ms %v are out of order; want percentiles in order", p, t.P50Ms, t.P99Ms, t.MaxMs)
	}
	for i, e := range t.Errors {
		if err := nonNeg(fmt.Sprintf("%s.errors[%d].count", p, i), e.Count); err != nil {
			return err
		}
	}
	for i, r := range t.Recoveries {
		if err := nonNeg(fmt.Sprintf("%s.recoveries[%d].count", p, i), r.Count); err != nil {
			return err
		}
	}
	return nil
}

// validateStats checks min <= median <= max, all finite and, with
// nonNegative, none below 0.
func validateStats(p string, s failoverdoc.Stats, nonNegative bool) error {
	check := finiteField
	if nonNegative {
		check = func(path string, v float64) error { return nonNeg(path, v) }
	}
	if err := firstErr(check(p+".min", s.Min), check(p+".median", s.Median), check(p+".max", s.Max)); err != nil {
		return err
	}
	if s.Min > s.Median || s.Median > s.Max {
		return fieldf("%s: min %v, median %v, max %v are out of order", p, s.Min, s.Median, s.Max)
	}
	return nil
}

// finiteField fails for a value of either sign beyond maxFloat.
func finiteField(path string, v float64) error {
	if math.Abs(v) > maxFloat {
		return fieldf("%s is %v, want at most %g either side of 0", path, v, maxFloat)
	}
	return nil
}

// failoverMeasured is how many trials the run measured (of its first
// variant; the wait variant may have one fewer after an error).
func failoverMeasured(res failoverdoc.Result) int {
	if len(res.Variants) == 0 {
		return 0
	}
	return len(res.Variants[0].Trials)
}

// failoverWait is the wait variant, or nil.
func failoverWait(res failoverdoc.Result) *failoverdoc.Variant {
	for i := range res.Variants {
		if res.Variants[i].Name == failoverdoc.VariantWait {
			return &res.Variants[i]
		}
	}
	return nil
}

// failoverTitle is the report's first line: which failover, how often,
// which variants.
func failoverTitle(res failoverdoc.Result) string {
	trials := countNoun(res.Trials, "trial", "trials")
	if n := failoverMeasured(res); n != res.Trials {
		trials = fmt.Sprintf("%d of %d trials measured", n, res.Trials)
	}
	variants := "without WAIT"
	if w := failoverWait(res); w != nil {
		variants = fmt.Sprintf("without WAIT and with WAIT %d", w.WaitReplicas)
	}
	return fmt.Sprintf("failover %s of the key's primary: %s, %s", res.Mode, trials, variants)
}

// failoverParams says which limiter was under test.
func failoverParams(res failoverdoc.Result) string {
	p := res.Params
	s := res.Algo + " " + limiterSettings(res.Algo, p)
	if p.Cost > 1 {
		s += fmt.Sprintf(", cost %d", p.Cost)
	}
	return s
}

// failoverScope says what was measured and how: the keys, then the rest
// (failoverSetup).
func failoverScope(res failoverdoc.Result) string {
	return "keys " + res.KeyPattern + ", " + failoverSetup(res)
}

// failoverSetup is the limiter, the decisions and the schedule of a trial.
func failoverSetup(res failoverdoc.Result) string {
	return fmt.Sprintf("%s; %s decisions/s from %s; %s; mode %s; %s before and %s after each failover",
		failoverParams(res), failoverNum(res.RatePerS), countNoun(res.Clients, "client", "clients"),
		countNoun(res.Trials, "trial", "trials"), res.Mode, msText(res.BeforeMs), msText(res.AfterMs))
}

// failoverVariantTitle says how a variant called the limiter.
func failoverVariantTitle(v failoverdoc.Variant) string {
	if v.Name == failoverdoc.VariantWait {
		return fmt.Sprintf("wait: every call followed by WAIT %d %s (%s within %s); an admission fewer replicas confirmed is refused",
			v.WaitReplicas, failoverNum(v.WaitTimeoutMs), countNoun(v.WaitReplicas, "replica", "replicas"), msText(v.WaitTimeoutMs))
	}
	if v.Name == failoverdoc.VariantNoWait {
		return "no-wait: the script call alone, as the application makes it"
	}
	return v.Name
}

// failoverNum writes a count or a median: 4, 4.5, 0.333.
func failoverNum(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
}

// failoverCost writes a latency difference in ms with its sign: +0.21, -0.05.
func failoverCost(ms float64) string {
	s := failoverNum(ms)
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

// failoverErrors lists the classes of error the clients met: "moved 1,
// unreachable 2", "-" for none.
func failoverErrors(t failoverdoc.Trial) string {
	parts := make([]string, 0, len(t.Errors))
	for _, e := range t.Errors {
		parts = append(parts, fmt.Sprintf("%s %d", e.Class, e.Count))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// failoverOver reports whether a trial's extra admissions exceed --max-extra.
func failoverOver(res failoverdoc.Result, t failoverdoc.Trial) bool {
	return res.MaxExtra != nil && int64(t.ExtraAllowed) > *res.MaxExtra
}

// failoverTrials is the table of one variant: a row per trial.
func failoverTrials(res failoverdoc.Result, v failoverdoc.Variant) table {
	wait := v.Name == failoverdoc.VariantWait
	t := table{headers: []string{"trial", "primary", "decisions", "allowed"}}
	if wait {
		t.headers = append(t.headers, "not durable")
	}
	t.headers = append(t.headers, "model", "extra", "lost writes", "dropped", "takeover", "no answer", "p50", "p99", "errors")
	for i := range t.headers[:len(t.headers)-1] {
		if i != 1 {
			t.right = append(t.right, i)
		}
	}
	for _, tr := range v.Trials {
		extra := textCell(strconv.Itoa(tr.ExtraAllowed))
		if failoverOver(res, tr) {
			extra = flagCell(extra.text)
		}
		lost := strconv.Itoa(tr.LostWrites)
		if !tr.LostExact {
			lost = "~" + lost
		}
		row := []cell{
			textCell(strconv.Itoa(tr.Trial)), textCell(tr.OldPrimary + " -> " + tr.NewPrimary),
			textCell(strconv.Itoa(tr.Decisions)), textCell(strconv.Itoa(tr.Allowed)),
		}
		if wait {
			row = append(row, textCell(strconv.Itoa(tr.NotDurable)))
		}
		dropped := textCell(failoverDropped(tr))
		if tr.MostlyDropped() {
			dropped = warnCell(dropped.text)
		}
		row = append(row, textCell(strconv.Itoa(tr.ModelAllowed)), extra, textCell(lost), dropped,
			textCell(Latency(tr.FailoverMs)), textCell(Latency(tr.UnavailableMs)),
			textCell(Latency(tr.P50Ms)), textCell(Latency(tr.P99Ms)), textCell(failoverErrors(tr)))
		t.rows = append(t.rows, row)
	}
	return t
}

// failoverDropped is a trial's dropped decisions with their share of the
// plan: "0", "641 (62%)".
func failoverDropped(t failoverdoc.Trial) string {
	if t.Dropped == 0 || t.Planned() == 0 {
		return strconv.Itoa(t.Dropped)
	}
	return fmt.Sprintf("%d (%.0f%%)", t.Dropped, 100*float64(t.Dropped)/float64(t.Planned()))
}

// failoverMostlyDropped is the trials of v that dropped at least half of
// their planned decisions.
func failoverMostlyDropped(v failoverdoc.Variant) []failoverdoc.Trial {
	var out []failoverdoc.Trial
	for _, t := range v.Trials {
		if t.MostlyDropped() {
			out = append(out, t)
		}
	}
	return out
}

// failoverDroppedNote says, for a variant whose trials dropped most of
// their decisions, which and why: with WAIT the client was held up to
// WAIT's timeout per call (and WAIT timed out when admissions were refused
// as not durable), so the counts cover a minority of the schedule; "" when
// no trial did.
func failoverDroppedNote(v failoverdoc.Variant) string {
	most := failoverMostlyDropped(v)
	if len(most) == 0 {
		return ""
	}
	parts := make([]string, len(most))
	timedOut := false
	for i, t := range most {
		parts[i] = fmt.Sprintf("trial %d %d of %d", t.Trial, t.Dropped, t.Planned())
		timedOut = timedOut || t.NotDurable > 0
	}
	why := "the client fell behind its schedule"
	if v.Name == failoverdoc.VariantWait {
		why = fmt.Sprintf("the client, held by WAIT up to %s a call, fell behind its schedule", msText(v.WaitTimeoutMs))
		if timedOut {
			why = fmt.Sprintf("WAIT timed out (%s a call; admissions refused as not durable) and the client fell behind its schedule", msText(v.WaitTimeoutMs))
		}
	}
	return fmt.Sprintf("most decisions were dropped in %d of %d trials (%s): %s, so the counts and medians cover only the decisions answered",
		len(most), len(v.Trials), strings.Join(parts, ", "), why)
}

// failoverTimesNote says what the two times of a trial measure.
const failoverTimesNote = "takeover: the failover acknowledged until the replica reported itself primary (the server's gap); " +
	"no answer: the old primary's last answer until the new primary's first, as the clients saw it (their timeouts and retries included)"

// failoverFootnotes are the lines under a variant's table: the trials
// that dropped most of their decisions, what ~ means, if it is used, and
// the first error the clients met.
func failoverFootnotes(v failoverdoc.Variant) []string {
	var out []string
	if n := failoverDroppedNote(v); n != "" {
		out = append(out, n)
	}
	for _, t := range v.Trials {
		if !t.LostExact {
			out = append(out, "~: best fit; no number of lost decisions explains every answer of the new primary")
			break
		}
	}
	for _, t := range v.Trials {
		if t.ErrorSample != "" {
			out = append(out, fmt.Sprintf("first error, trial %d: %s", t.Trial, t.ErrorSample))
			break
		}
	}
	return out
}

// failoverSummary is a variant's spread over its trials.
func failoverSummary(v failoverdoc.Variant) string {
	count := func(s failoverdoc.Stats) string {
		return failoverNum(s.Min) + "/" + failoverNum(s.Median) + "/" + failoverNum(s.Max)
	}
	lat := func(s failoverdoc.Stats) string {
		return Latency(s.Min) + "/" + Latency(s.Median) + "/" + Latency(s.Max)
	}
	return fmt.Sprintf("%s over %s (min/median/max): extra admissions %s, lost writes %s, no answer %s, p50 %s, p99 %s",
		v.Name, countNoun(len(v.Trials), "trial", "trials"), count(v.ExtraAllowed), count(v.LostWrites),
		lat(v.UnavailableMs), lat(v.P50Ms), lat(v.P99Ms))
}

// failoverNoWait is the no-wait variant, or nil.
func failoverNoWait(res failoverdoc.Result) *failoverdoc.Variant {
	for i := range res.Variants {
		if res.Variants[i].Name == failoverdoc.VariantNoWait {
			return &res.Variants[i]
		}
	}
	return nil
}

// failoverTradeoff is what WAIT bought and, apart, what it cost (medians
// over trials), then a caution when the wait variant dropped most of its
// decisions; nil without WAIT. The saving in extra admissions is
// failoverdoc.ExtraSaved of the medians: at most the no-wait median.
func failoverTradeoff(res failoverdoc.Result) []string {
	t, w, nw := res.Tradeoff, failoverWait(res), failoverNoWait(res)
	if t == nil || w == nil || nw == nil {
		return nil
	}
	saved := failoverdoc.ExtraSaved(nw.ExtraAllowed.Median, w.ExtraAllowed.Median)
	out := []string{
		fmt.Sprintf("WAIT %d saved (medians over trials): lost writes %s, extra admissions %s of the %s without WAIT",
			w.WaitReplicas, failoverNum(t.LostWritesSaved), failoverNum(saved), failoverNum(max(nw.ExtraAllowed.Median, 0))),
		fmt.Sprintf("WAIT %d cost (medians over trials): p50 %s ms, p99 %s ms; admissions refused as not durable %s; legitimate admissions refused (allowed below the model) %s",
			w.WaitReplicas, failoverCost(t.P50CostMs), failoverCost(t.P99CostMs),
			failoverNum(t.NotDurable), failoverNum(failoverdoc.RefusedByWait(w.ExtraAllowed.Median))),
	}
	if most := failoverMostlyDropped(*w); len(most) > 0 {
		out = append(out, fmt.Sprintf("caution: the wait variant dropped most of its decisions in %d of %d trials, so its medians count few decisions",
			len(most), len(w.Trials)))
	}
	return out
}

// failoverChecks is the table of the checks.
func failoverChecks(res failoverdoc.Result) table { return checkTable(res.Checks) }

// failoverVerdict is the closing line: which checks failed, or none.
func failoverVerdict(res failoverdoc.Result) string {
	var failed []string
	skipped := 0
	for _, c := range res.Checks {
		switch {
		case c.Counts() && !c.Pass:
			failed = append(failed, c.ID)
		case c.Skipped:
			skipped++
		}
	}
	if len(failed) > 0 {
		return fmt.Sprintf("%s failed: %s", countNoun(len(failed), "check", "checks"), strings.Join(failed, ", "))
	}
	s := fmt.Sprintf("no check failed (%s", countNoun(len(res.Checks), "check", "checks"))
	if skipped > 0 {
		s += fmt.Sprintf(", %d report only", skipped)
	}
	return s + ")"
}

// FailoverText writes the report: title, server and scope, a table per
// variant with its spread and footnotes, the trade-off, the checks, the
// verdict and the notes.
func FailoverText(w io.Writer, res failoverdoc.Result, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	b.WriteString(st.Title.Render(Printable(failoverTitle(res))) + "\n")
	b.WriteString(ServerLine(serverOf(res.Header), st))
	b.WriteString(st.Dim.Render(Printable(failoverScope(res))) + "\n")
	for _, v := range res.Variants {
		b.WriteString("\n" + st.Header.Render(Printable(failoverVariantTitle(v))) + "\n")
		b.WriteString(failoverTrials(res, v).text(st))
		b.WriteString(Printable(failoverSummary(v)) + "\n")
		for _, n := range failoverFootnotes(v) {
			b.WriteString(st.Dim.Render(Printable(n)) + "\n")
		}
	}
	b.WriteString(st.Dim.Render(Printable(failoverTimesNote)) + "\n")
	if t := failoverTradeoff(res); len(t) > 0 {
		b.WriteString("\n")
		for i, line := range t {
			if i == 2 {
				b.WriteString(st.Warn.Render(Printable(line)) + "\n")
				continue
			}
			b.WriteString(Printable(line) + "\n")
		}
	}
	b.WriteString("\n" + failoverChecks(res).text(st))
	fmt.Fprintf(&b, "\nverdict: %s  %s\n", st.Verdict(res.Pass()), Printable(failoverVerdict(res)))
	for _, n := range res.Notes {
		b.WriteString(st.Dim.Render("note: "+Printable(n)) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func failoverMarkdown(b *strings.Builder, res failoverdoc.Result) {
	fmt.Fprintf(b, "### ratelimit failover: %s\n\n", mdVerdict(res.Pass()))
	b.WriteString(md(failoverTitle(res)) + "\n\n")
	mdServer(b, serverOf(res.Header).String())
	fmt.Fprintf(b, "keys %s, %s\n\n", mdCode(res.KeyPattern), md(failoverSetup(res)))
	for _, v := range res.Variants {
		name, rest, _ := strings.Cut(failoverVariantTitle(v), ": ")
		fmt.Fprintf(b, "**%s**: %s\n\n", md(name), md(rest))
		failoverTrials(res, v).markdown(b)
		b.WriteString(md(failoverSummary(v)) + "\n\n")
		for _, n := range failoverFootnotes(v) {
			b.WriteString(md(n) + "\n\n")
		}
	}
	b.WriteString(md(failoverTimesNote) + "\n\n")
	if t := failoverTradeoff(res); len(t) > 0 {
		for i, line := range t {
			if i == 2 {
				line = "**" + md(line) + "**"
			} else {
				line = md(line)
			}
			b.WriteString("- " + line + "\n")
		}
		b.WriteString("\n")
	}
	failoverChecks(res).markdown(b)
	fmt.Fprintf(b, "Verdict: %s: %s\n", mdVerdict(res.Pass()), md(failoverVerdict(res)))
	if len(res.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range res.Notes {
			b.WriteString("- note: " + md(n) + "\n")
		}
	}
}

// failoverSuite is one testcase per check; the max-extra checks carry
// their variant's trials as detail.
func failoverSuite(res failoverdoc.Result) junitSuite {
	s := junitSuite{Name: "ratelimit failover"}
	if !res.StartedAt.IsZero() {
		s.Timestamp = res.StartedAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	for _, v := range res.Variants {
		for _, t := range v.Trials {
			s.timeS += t.DurationMs / 1000
		}
	}
	for _, c := range res.Checks {
		var detail strings.Builder
		name := ""
		switch c.ID {
		case failoverdoc.CheckMaxExtra:
			name = failoverdoc.VariantNoWait
		case failoverdoc.CheckMaxExtraWait:
			name = failoverdoc.VariantWait
		}
		for _, v := range res.Variants {
			if v.Name != name {
				continue
			}
			for _, t := range v.Trials {
				fmt.Fprintf(&detail, "trial %d: %s -> %s, %d decisions, allowed %d, model %d, extra %d, lost writes %d, dropped %s, takeover %s, no answer %s\n",
					t.Trial, t.OldPrimary, t.NewPrimary, t.Decisions, t.Allowed, t.ModelAllowed, t.ExtraAllowed, t.LostWrites,
					failoverDropped(t), Latency(t.FailoverMs), Latency(t.UnavailableMs))
			}
		}
		if detail.Len() == 0 && !c.Pass {
			detail.WriteString(c.Message + "\n")
		}
		s.Cases = append(s.Cases, checkCase("failover.checks", c.ID, c, c.ID, detail.String()))
	}
	return s
}

func failoverHTML(b *strings.Builder, res failoverdoc.Result) {
	fmt.Fprintf(b, "<p><strong>%s</strong></p>\n", esc(failoverTitle(res)))
	htmlServer(b, serverOf(res.Header).String())
	fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(failoverScope(res)))
	htmlVerdict(b, res.Pass(), failoverVerdict(res))
	for _, v := range res.Variants {
		fmt.Fprintf(b, "<h3>%s</h3>\n", esc(failoverVariantTitle(v)))
		failoverTrials(res, v).html(b)
		fmt.Fprintf(b, "<p>%s</p>\n", esc(failoverSummary(v)))
		htmlNotes(b, "muted", failoverFootnotes(v))
	}
	fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(failoverTimesNote))
	if t := failoverTradeoff(res); len(t) > 0 {
		for i, line := range t {
			cls := ""
			if i == 2 {
				cls = ` class="warn"`
			}
			fmt.Fprintf(b, "<p%s><strong>%s</strong></p>\n", cls, esc(line))
		}
	}
	b.WriteString("<h3>Checks</h3>\n")
	failoverChecks(res).html(b)
	htmlNotes(b, "muted", res.Notes)
}
