package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/probe"
)

// The fingerprint kind (probe --fingerprint): the designed phases and
// what each saw, the models that fit every request, ranked, and the
// nearest misses with the request that ruled each out. Each table is
// built once as cells; every format draws the same rows.

var fingerprintKind = kind[probe.Fingerprint]{
	name: probe.FingerprintKind, version: probe.FingerprintVersion,
	validate: validateFingerprint,
	checks:   probe.Fingerprint.CheckList,
	text:     fingerprintText,
	markdown: fingerprintMarkdown,
	junit:    fingerprintSuite,
	html:     fingerprintHTML,
}

func validateFingerprint(res probe.Fingerprint) error {
	if err := firstErr(
		oneOf("verdict", res.Verdict, doc.VerdictPass, doc.VerdictFail, doc.VerdictUndecided),
		nonNeg("requests", res.Requests), nonNeg("budget", res.Budget), nonNeg("candidates", res.Candidates),
	); err != nil {
		return err
	}
	// the requests are bounded by the budget, the budget by probe's
	// ceiling: a forged document cannot make the page hold a million rows
	if res.Budget > probe.MaxBudget {
		return fieldf("budget %d is above the ceiling of %d requests: no fingerprint has it", res.Budget, probe.MaxBudget)
	}
	if res.Requests > res.Budget || len(res.Observations) > res.Budget {
		return fieldf("%d requests and %d observations, more than the budget of %d the run could send: the document is inconsistent", res.Requests, len(res.Observations), res.Budget)
	}
	for i, p := range res.Phases {
		if p.Sent < 0 || p.Admitted < 0 || p.Admitted > p.Sent {
			return fmt.Errorf("phases[%d]: %d admitted of %d sent", i, p.Admitted, p.Sent)
		}
	}
	for i, c := range append(append([]probe.Candidate(nil), res.Fits...), res.NearMisses...) {
		if c.Mismatches < 0 {
			return fmt.Errorf("candidate %d: mismatches %d is negative", i, c.Mismatches)
		}
	}
	for i, c := range res.Fits {
		if c.Mismatches != 0 {
			return fmt.Errorf("fits[%d] (%s) misses %d requests: a fit misses none", i, c.Model, c.Mismatches)
		}
	}
	if (res.Verdict == "pass") != (len(res.Fits) > 0) {
		return fmt.Errorf("verdict %s disagrees with %d fits", res.Verdict, len(res.Fits))
	}
	return nil
}

func fingerprintTitle(res probe.Fingerprint) string {
	return fmt.Sprintf("fingerprint %s %s", res.Method, res.Target)
}

// fingerprintScope says what the candidates were built from and what it
// cost.
func fingerprintScope(res probe.Fingerprint) string {
	pol := "no policy advertised: the quota from the first burst"
	switch p := res.Policy; {
	case p.Quota > 0 && p.WindowMs > 0:
		pol = fmt.Sprintf("quota %d over %s (%s)", p.Quota, msText(p.WindowMs), p.Source)
	case p.Quota > 0:
		pol = fmt.Sprintf("quota %d (%s)", p.Quota, p.Source)
	}
	s := fmt.Sprintf("%s; %s tried; %d of a budget of %d requests in %s", pol, countNoun(res.Candidates, "model", "models"), res.Requests, res.Budget, msText(res.ElapsedMs))
	if res.Peer != "" {
		s += ", from " + res.Peer
	}
	for _, n := range res.Notes {
		s += "; note: " + n
	}
	return s
}

// fingerprintVerdict is the closing line.
func fingerprintVerdict(res probe.Fingerprint) string {
	if len(res.Fits) == 0 {
		for _, c := range res.Checks {
			return strings.TrimPrefix(c.Message, "undecided: ")
		}
		return "no model fits"
	}
	s := "the limiter behaves as " + res.Fits[0].Model
	if n := len(res.Fits) - 1; n > 0 {
		s += fmt.Sprintf(" (%s fit too)", countNoun(n, "other model", "other models"))
	}
	return s
}

func fingerprintPhases(res probe.Fingerprint) table {
	t := table{headers: []string{"phase", "identity", "sent", "admitted", "at", "what it tells"}, right: []int{2, 3}}
	for _, p := range res.Phases {
		t.rows = append(t.rows, []cell{codeCell(p.Name), textCell(p.Identity), textCell(strconv.Itoa(p.Sent)),
			textCell(strconv.Itoa(p.Admitted)), textCell("+" + msText(p.StartMs) + " to +" + msText(p.EndMs)), textCell(p.Why)})
	}
	return t
}

func fingerprintFits(res probe.Fingerprint) table {
	t := table{headers: []string{"rank", "model", "in words", "agrees"}}
	for i, c := range res.Fits {
		agrees := "at every send"
		if !c.Exact {
			agrees = "between each send and its answer"
		}
		t.rows = append(t.rows, []cell{textCell(strconv.Itoa(i + 1)), codeCell(c.Model), textCell(c.Description), textCell(agrees)})
	}
	return t
}

func fingerprintMisses(res probe.Fingerprint) table {
	t := table{headers: []string{"model", "misses", "ruled out by"}, right: []int{1}}
	for _, c := range res.NearMisses {
		t.rows = append(t.rows, []cell{codeCell(c.Model), textCell(strconv.Itoa(c.Mismatches)), textCell(c.RuledOutBy)})
	}
	return t
}

func fingerprintText(w io.Writer, res probe.Fingerprint, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	b.WriteString(st.Title.Render(Printable(fingerprintTitle(res))) + "\n")
	b.WriteString(st.Dim.Render(Printable(fingerprintScope(res))) + "\n\n")
	b.WriteString(fingerprintPhases(res).text(st))
	if len(res.Fits) > 0 {
		b.WriteString("\nmodels that decide every request as the target did:\n")
		b.WriteString(fingerprintFits(res).text(st))
	}
	if res.Equivalent != "" {
		b.WriteString("note: " + Printable(res.Equivalent) + "\n")
	}
	if len(res.NearMisses) > 0 {
		b.WriteString("\nnearest misses:\n")
		b.WriteString(fingerprintMisses(res).text(st))
	}
	word := st.Verdict(res.Pass())
	if res.Verdict == doc.VerdictUndecided {
		word = st.Warn.Render("UNDECIDED")
	}
	fmt.Fprintf(&b, "\nverdict: %s  %s\n", word, Printable(fingerprintVerdict(res)))
	_, err := io.WriteString(w, b.String())
	return err
}

func fingerprintMarkdown(b *strings.Builder, res probe.Fingerprint) {
	heading := mdVerdict(res.Pass())
	if res.Verdict == doc.VerdictUndecided {
		heading = "**UNDECIDED**"
	}
	fmt.Fprintf(b, "### ratelimit probe --fingerprint: %s\n\n", heading)
	fmt.Fprintf(b, "%s %s\n\n%s\n\n", md(res.Method), mdCode(res.Target), md(fingerprintScope(res)))
	fingerprintPhases(res).markdown(b)
	if len(res.Fits) > 0 {
		b.WriteString("Models that decide every request as the target did:\n\n")
		fingerprintFits(res).markdown(b)
	}
	if res.Equivalent != "" {
		b.WriteString("Note: " + md(res.Equivalent) + "\n\n")
	}
	if len(res.NearMisses) > 0 {
		b.WriteString("Nearest misses:\n\n")
		fingerprintMisses(res).markdown(b)
	}
	fmt.Fprintf(b, "Verdict: **%s**: %s\n", strings.ToUpper(res.Verdict), md(fingerprintVerdict(res)))
}

func fingerprintSuite(res probe.Fingerprint) junitSuite {
	s := junitSuite{Name: "ratelimit probe --fingerprint", timeS: res.ElapsedMs / 1000}
	if !res.StartedAt.IsZero() {
		s.Timestamp = res.StartedAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	var detail strings.Builder
	for _, c := range res.Fits {
		detail.WriteString("fits: " + c.Model + "\n")
	}
	for _, c := range res.NearMisses {
		fmt.Fprintf(&detail, "near miss: %s (%d): %s\n", c.Model, c.Mismatches, c.RuledOutBy)
	}
	for _, c := range res.Checks {
		s.Cases = append(s.Cases, checkCase("probe.fingerprint", c.ID, c, c.ID, detail.String()))
	}
	return s
}

func fingerprintHTML(b *strings.Builder, res probe.Fingerprint) {
	fmt.Fprintf(b, "<p><strong>%s</strong></p>\n", esc(fingerprintTitle(res)))
	fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(fingerprintScope(res)))
	text := fingerprintVerdict(res)
	if res.Verdict == doc.VerdictUndecided {
		text = "UNDECIDED: " + text
	}
	htmlVerdict(b, res.Pass(), text)
	fingerprintPhases(res).html(b)
	if len(res.Fits) > 0 {
		b.WriteString("<p>Models that decide every request as the target did:</p>\n")
		fingerprintFits(res).html(b)
	}
	if res.Equivalent != "" {
		fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc("note: "+res.Equivalent))
	}
	if len(res.NearMisses) > 0 {
		b.WriteString("<p>Nearest misses:</p>\n")
		fingerprintMisses(res).html(b)
	}
}
