package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/probe"
)

// The probe kind: a report card, one row per check with its evidence and
// the fix, drawn the same way in every format.

var probeKind = kind[probe.Result]{
	name: probe.Kind, version: probe.Version,
	validate: validateProbe,
	checks:   probe.Result.CheckList,
	text:     ProbeText,
	markdown: probeMarkdown,
	junit:    probeSuite,
	html:     probeHTML,
}

func validateProbe(res probe.Result) error {
	if err := firstErr(
		oneOf("verdict", res.Verdict, doc.VerdictPass, doc.VerdictFail, doc.VerdictUndecided),
		nonNeg("requests", res.Requests), nonNeg("budget", res.Budget), nonNeg("policy.quota", res.Policy.Quota),
	); err != nil {
		return err
	}
	for i, c := range res.Checks {
		if err := oneOf(fmt.Sprintf("checks[%d].status", i), c.Status, probe.Pass, probe.Fail, probe.Warn, probe.Skip, probe.Undecided); err != nil {
			return err
		}
		if c.Pass != (c.Status == probe.Pass || c.Status == probe.Skip) {
			return fmt.Errorf("checks[%d]: pass %v disagrees with status %q", i, c.Pass, c.Status)
		}
	}
	return nil
}

// probeTitle is the card's first line.
func probeTitle(res probe.Result) string {
	return fmt.Sprintf("probe %s %s", res.Method, res.Target)
}

// probeScope says what was judged and what it cost.
func probeScope(res probe.Result) string {
	pol := "policy unknown (no RateLimit-Policy; --expect gives one)"
	switch p := res.Policy; {
	case p.Model != "":
		pol = fmt.Sprintf("policy %s (%s; --expect, judged as q=%d per %s)", p.Model, p.ModelWords, p.Quota, msText(p.WindowMs))
	case p.Quota > 0 && p.WindowMs > 0:
		pol = fmt.Sprintf("policy q=%d w=%s (%s)", p.Quota, msText(p.WindowMs), p.Source)
	case p.Quota > 0:
		pol = fmt.Sprintf("policy q=%d, window unknown (%s)", p.Quota, p.Source)
	}
	s := fmt.Sprintf("%s; %d of a budget of %d requests in %s", pol, res.Requests, res.Budget, msText(res.ElapsedMs))
	if res.Peer != "" {
		s += ", from " + res.Peer
	}
	if res.Shared {
		s += "; the identities shared one quota (a limiter keyed by address), so the phases ran one after another, each after a reset"
	}
	for _, n := range res.Notes {
		s += "; note: " + n
	}
	return s
}

// msText writes milliseconds as a duration: 2s, 1.5s, 250ms.
func msText(ms float64) string {
	if ms >= 1000 {
		return secs(ms / 1000)
	}
	return fmt.Sprintf("%.0fms", ms)
}

// probeVerdict is the closing line: PASS, or which checks failed.
func probeVerdict(res probe.Result) string {
	var failed, warned []string
	for _, c := range res.Checks {
		switch c.Status {
		case probe.Fail:
			failed = append(failed, c.ID)
		case probe.Warn:
			warned = append(warned, c.ID)
		}
	}
	s := ""
	if res.Undecided() {
		for _, c := range res.Checks {
			if c.Status == probe.Undecided {
				return strings.TrimPrefix(c.Message, "undecided: ")
			}
		}
	}
	if len(failed) > 0 {
		s = fmt.Sprintf("%s failed: %s", countNoun(len(failed), "check", "checks"), strings.Join(failed, ", "))
	} else {
		s = fmt.Sprintf("no check failed (%d run)", len(res.Checks))
	}
	if len(warned) > 0 {
		s += fmt.Sprintf("; %s: %s", countNoun(len(warned), "warning", "warnings"), strings.Join(warned, ", "))
	}
	return s
}

// probeStatusCell shows a check's status: PASS, FAIL, WARN or skipped.
func probeStatusCell(status string) cell {
	switch status {
	case probe.Pass:
		return cell{text: "pass", kind: cellCheck}
	case probe.Fail:
		return cell{text: "fail", kind: cellCheck}
	case probe.Warn:
		return cell{text: "warn", kind: cellCheck}
	case probe.Undecided:
		return cell{text: "undecided", kind: cellCheck}
	}
	return cell{text: "skip", kind: cellCheck}
}

// probeCard is the report card: one row per check.
func probeCard(res probe.Result) table {
	t := table{headers: []string{"check", "result", "finding"}}
	for _, c := range res.Checks {
		t.rows = append(t.rows, []cell{codeCell(c.ID), probeStatusCell(c.Status), textCell(c.Message)})
	}
	return t
}

// probeDetail is what a check that did not pass showed and how to fix it.
type probeDetail struct {
	status, id string
	lines      []string // "evidence: ...", "fix: ..."
}

// probeDetails are the evidence and fix of every check that failed or
// warned, in the card's order.
func probeDetails(res probe.Result) []probeDetail {
	var out []probeDetail
	for _, c := range res.Checks {
		if c.Status == probe.Pass || c.Status == probe.Skip {
			continue
		}
		d := probeDetail{status: c.Status, id: c.ID}
		for _, e := range c.Evidence {
			d.lines = append(d.lines, "evidence: "+e)
		}
		if c.Fix != "" {
			d.lines = append(d.lines, "fix: "+c.Fix)
		}
		out = append(out, d)
	}
	return out
}

// ProbeText writes the report card: one row per check, then the evidence
// and fix of every check that did not pass, then the verdict.
func ProbeText(w io.Writer, res probe.Result, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	b.WriteString(st.Title.Render(Printable(probeTitle(res))) + "\n")
	b.WriteString(st.Dim.Render(Printable(probeScope(res))) + "\n\n")
	b.WriteString(probeCard(res).text(st))
	for _, d := range probeDetails(res) {
		fmt.Fprintf(&b, "\n%s %s\n", probeStatusCell(d.status).forText(st), Printable(d.id))
		for _, l := range d.lines {
			b.WriteString("  " + Printable(l) + "\n")
		}
	}
	word := st.Verdict(res.Pass())
	if res.Undecided() {
		word = st.Warn.Render("UNDECIDED")
	}
	fmt.Fprintf(&b, "\nverdict: %s  %s\n", word, Printable(probeVerdict(res)))
	_, err := io.WriteString(w, b.String())
	return err
}

func probeMarkdown(b *strings.Builder, res probe.Result) {
	heading := mdVerdict(res.Pass())
	if res.Undecided() {
		heading = "**UNDECIDED**"
	}
	fmt.Fprintf(b, "### ratelimit probe: %s\n\n", heading)
	fmt.Fprintf(b, "%s %s\n\n%s\n\n", md(res.Method), mdCode(res.Target), md(probeScope(res)))
	probeCard(res).markdown(b)
	for _, d := range probeDetails(res) {
		fmt.Fprintf(b, "%s %s\n\n", probeStatusCell(d.status).forMarkdown(), mdCode(d.id))
		for _, l := range d.lines {
			b.WriteString("- " + md(l) + "\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "Verdict: **%s**: %s\n", strings.ToUpper(res.Verdict), md(probeVerdict(res)))
}

func probeSuite(res probe.Result) junitSuite {
	s := junitSuite{Name: "ratelimit probe", timeS: res.ElapsedMs / 1000}
	if !res.StartedAt.IsZero() {
		s.Timestamp = res.StartedAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	for _, c := range res.Checks {
		var detail strings.Builder
		for _, e := range c.Evidence {
			detail.WriteString("evidence: " + e + "\n")
		}
		if c.Fix != "" && c.Status != probe.Pass {
			detail.WriteString("fix: " + c.Fix + "\n")
		}
		s.Cases = append(s.Cases, checkCase("probe.checks", c.ID, c.Check, c.ID, detail.String()))
	}
	return s
}

func probeHTML(b *strings.Builder, res probe.Result) {
	fmt.Fprintf(b, "<p><strong>%s</strong></p>\n", esc(probeTitle(res)))
	fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(probeScope(res)))
	text := probeVerdict(res)
	if res.Undecided() {
		text = "UNDECIDED: " + text
	}
	htmlVerdict(b, res.Pass(), text)
	probeCard(res).html(b)
	for _, d := range probeDetails(res) {
		fmt.Fprintf(b, "<p>%s %s</p>\n", probeStatusCell(d.status).forHTML(), htmlCode(d.id))
		htmlNotes(b, "muted", d.lines)
	}
}
