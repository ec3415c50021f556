package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/suite"
)

// The suite kind (ratelimit check): one summary table, a row per entry,
// then each entry's probe and load documents drawn by their own kinds, as
// `ratelimit report` draws them alone. JUnit has one testsuite per entry,
// a testcase per check of its steps.

var suiteKind = kind[suite.Result]{
	name: suite.Kind, version: suite.Version,
	validate: validateSuite,
	checks:   suite.Result.CheckList,
	verdict:  func(r suite.Result) (bool, bool) { return r.Pass(), true },
	text:     suiteText,
	markdown: suiteMarkdown,
	junit:    suiteOneSuite,
	suites:   suiteSuites,
	html:     suiteHTML,
	github:   suiteGitHub,
}

// decodeStep and kindOf are Decode and kinds.of, set at init: the suite
// kind reads and draws the documents its steps hold through the registry
// it is registered in (variables initialised with them would be an
// initialization cycle).
var (
	decodeStep func([]byte) (Document, error)
	kindOf     func(any) (*kindInfo, any, error)
)

func init() { decodeStep, kindOf = Decode, kinds.of }

// stepKinds are the document kinds each step writes.
var stepKinds = map[string]string{suite.StepProbe: "probe", suite.StepLoad: "load"}

func validateSuite(r suite.Result) error {
	verdicts := []string{doc.VerdictPass, doc.VerdictFail, doc.VerdictUndecided}
	if err := firstErr(oneOf("verdict", r.Verdict, verdicts...), nonNeg("parallel", r.Parallel)); err != nil {
		return err
	}
	if len(r.Checks) != len(r.Entries) {
		return fieldf("%d checks for %d entries: a suite document has one check per entry", len(r.Checks), len(r.Entries))
	}
	failed, undecided := false, false
	for i, e := range r.Entries {
		if err := oneOf(fmt.Sprintf("entries[%d].verdict", i), e.Verdict, verdicts...); err != nil {
			return err
		}
		if want := e.Verdict == doc.VerdictPass || e.Verdict == doc.VerdictUndecided && e.AllowUndecided; e.Passed != want {
			return fmt.Errorf("entries[%d]: passed %v disagrees with verdict %s", i, e.Passed, e.Verdict)
		}
		if c := r.Checks[i]; c.ID != e.Name || c.Pass != e.Passed {
			return fmt.Errorf("checks[%d] (%s, pass %v) disagrees with entries[%d] (%s, passed %v)", i, c.ID, c.Pass, i, e.Name, e.Passed)
		}
		failed = failed || !e.Passed && e.Verdict == doc.VerdictFail
		undecided = undecided || !e.Passed && e.Verdict == doc.VerdictUndecided
		for k, st := range e.Steps {
			field := fmt.Sprintf("entries[%d].steps[%d]", i, k)
			if err := firstErr(oneOf(field+".name", st.Name, suite.StepProbe, suite.StepLoad),
				oneOf(field+".verdict", st.Verdict, append(verdicts, suite.VerdictError, suite.VerdictSkipped)...)); err != nil {
				return err
			}
			if len(st.Document) == 0 {
				if st.Verdict != suite.VerdictError && st.Verdict != suite.VerdictSkipped {
					return fmt.Errorf("%s: verdict %s without the step's document", field, st.Verdict)
				}
				continue
			}
			d, err := decodeStep(st.Document)
			if err != nil {
				return fmt.Errorf("%s.document: %w", field, err)
			}
			if d.Kind != stepKinds[st.Name] {
				return fmt.Errorf("%s.document is a %s document; the %s step writes %s", field, d.Kind, st.Name, stepKinds[st.Name])
			}
		}
	}
	want := doc.VerdictPass
	switch {
	case failed:
		want = doc.VerdictFail
	case undecided:
		want = doc.VerdictUndecided
	}
	if r.Verdict != want {
		return fmt.Errorf("verdict %s disagrees with the entries (%s)", r.Verdict, want)
	}
	return nil
}

// stepDoc decodes the document a step wrote; nil when it wrote none.
func stepDoc(st suite.Step) (*kindInfo, any, error) {
	if len(st.Document) == 0 {
		return nil, nil, nil
	}
	d, err := decodeStep(st.Document)
	if err != nil {
		return nil, nil, err
	}
	return kindOf(d.Value)
}

func suiteScope(r suite.Result) string {
	how := "one after another"
	if r.Parallel > 1 {
		how = fmt.Sprintf("up to %d at once", r.Parallel)
	}
	return fmt.Sprintf("%s: %s, %s, in %s", r.File, countNoun(len(r.Entries), "entry", "entries"), how, msText(r.ElapsedMs))
}

// stepCell is a step's verdict as a table shows it.
func stepCell(e suite.EntryResult, name string) cell {
	i := slices.IndexFunc(e.Steps, func(s suite.Step) bool { return s.Name == name })
	if i < 0 {
		return textCell("not run")
	}
	switch v := e.Steps[i].Verdict; v {
	case suite.VerdictError:
		return flagCell("ERROR")
	case suite.VerdictSkipped:
		return cell{text: "skip", kind: cellCheck}
	default:
		return cell{text: v, kind: cellCheck}
	}
}

// entryVerdictCell is an entry's verdict: PASS, FAIL, UNDECIDED, or
// UNDECIDED (allowed), which passes.
func entryVerdictCell(e suite.EntryResult) cell {
	c := cell{text: e.Verdict, kind: cellCheck}
	if e.Verdict == doc.VerdictUndecided && e.AllowUndecided {
		c = cell{text: "warn", kind: cellCheck, prefix: "allowed "}
	}
	return c
}

func suiteTable(r suite.Result) table {
	t := table{headers: []string{"entry", "target", "probe", "load", "verdict", "time", "finding"}}
	for _, e := range r.Entries {
		t.rows = append(t.rows, []cell{codeCell(e.Name), textCell(e.Target), stepCell(e, suite.StepProbe), stepCell(e, suite.StepLoad),
			entryVerdictCell(e), textCell(msText(e.ElapsedMs)), textCell(entryFinding(e))})
	}
	return t
}

// entryFinding names the checks that failed (and the failed warnings) of
// an entry; each entry's reports below give the evidence.
func entryFinding(e suite.EntryResult) string {
	var failed, warned []string
	for _, c := range e.Checks {
		switch {
		case c.Pass || c.Skipped:
		case c.Counts():
			failed = append(failed, c.ID)
		default:
			warned = append(warned, c.ID)
		}
	}
	var parts []string
	if len(failed) > 0 {
		parts = append(parts, "failed: "+strings.Join(failed, ", "))
	}
	if len(warned) > 0 {
		parts = append(parts, "warnings: "+strings.Join(warned, ", "))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%s passed", countNoun(len(e.Checks), "check", "checks"))
	}
	return strings.Join(parts, "; ")
}

// suiteVerdictLine is the closing line's text after the verdict word.
func suiteVerdictLine(r suite.Result) string {
	var not []string
	for _, e := range r.Entries {
		if !e.Passed {
			not = append(not, e.Name)
		}
	}
	if len(not) == 0 {
		return fmt.Sprintf("every entry passed (%s)", countNoun(len(r.Entries), "entry", "entries"))
	}
	return fmt.Sprintf("%d of %s did not pass: %s", len(not), countNoun(len(r.Entries), "entry", "entries"), strings.Join(not, ", "))
}

func suiteText(w io.Writer, r suite.Result, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	b.WriteString(st.Title.Render("check "+Printable(r.File)) + "\n")
	b.WriteString(st.Dim.Render(Printable(suiteScope(r))) + "\n\n")
	b.WriteString(suiteTable(r).text(st))
	for _, e := range r.Entries {
		fmt.Fprintf(&b, "\n%s\n", st.Title.Render("── entry "+Printable(e.Name)+" ──"))
		for _, s := range e.Steps {
			k, v, err := stepDoc(s)
			switch {
			case err != nil:
				fmt.Fprintf(&b, "%s: the document does not read: %s\n", s.Name, Printable(err.Error()))
			case k == nil && s.Verdict == suite.VerdictSkipped:
				fmt.Fprintf(&b, "%s: skipped: the target could not be reached\n", s.Name)
			case k == nil:
				fmt.Fprintf(&b, "%s: %s %s\n", s.Name, st.Fail.Render("ERROR"), Printable(s.Error))
			default:
				b.WriteString(st.Dim.Render("$ "+Printable(strings.Join(s.Command, " "))) + "\n")
				if err := k.text(&b, v, o); err != nil {
					return err
				}
				if s.Verdict == suite.VerdictError {
					fmt.Fprintf(&b, "%s: %s %s\n", s.Name, st.Fail.Render("ERROR"), Printable(s.Error))
				}
			}
			b.WriteString("\n")
		}
	}
	word := st.Verdict(r.Pass())
	if r.Verdict == doc.VerdictUndecided {
		word = st.Warn.Render("UNDECIDED")
	}
	fmt.Fprintf(&b, "verdict: %s  %s\n", word, Printable(suiteVerdictLine(r)))
	_, err := io.WriteString(w, b.String())
	return err
}

func suiteMarkdown(b *strings.Builder, r suite.Result) {
	heading := mdVerdict(r.Pass())
	if r.Verdict == doc.VerdictUndecided {
		heading = "**UNDECIDED**"
	}
	fmt.Fprintf(b, "## ratelimit check: %s\n\n%s\n\n", heading, md(suiteScope(r)))
	suiteTable(r).markdown(b)
	fmt.Fprintf(b, "Verdict: **%s**: %s\n\n", strings.ToUpper(r.Verdict), md(suiteVerdictLine(r)))
	for _, e := range r.Entries {
		fmt.Fprintf(b, "<details><summary>entry %s: %s</summary>\n\n", md(e.Name), md(strings.ToUpper(e.Verdict)))
		for _, s := range e.Steps {
			k, v, err := stepDoc(s)
			switch {
			case err != nil:
				fmt.Fprintf(b, "%s: the document does not read: %s\n\n", s.Name, md(err.Error()))
			case k == nil && s.Verdict == suite.VerdictSkipped:
				fmt.Fprintf(b, "%s: skipped: the target could not be reached\n\n", s.Name)
			case k == nil:
				fmt.Fprintf(b, "%s: **ERROR** %s\n\n", s.Name, md(s.Error))
			default:
				fmt.Fprintf(b, "%s\n\n", mdCode(strings.Join(s.Command, " ")))
				k.markdown(b, v)
				b.WriteString("\n")
				if s.Verdict == suite.VerdictError {
					fmt.Fprintf(b, "%s: **ERROR** %s\n\n", s.Name, md(s.Error))
				}
			}
		}
		b.WriteString("</details>\n\n")
	}
}

// entrySuite is one entry's JUnit testsuite: a testcase per check of its
// steps, the step's command line as detail.
func entrySuite(r suite.Result, e suite.EntryResult) junitSuite {
	s := junitSuite{Name: "ratelimit check: " + e.Name, timeS: e.ElapsedMs / 1000}
	if !r.StartedAt.IsZero() {
		s.Timestamp = r.StartedAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	for _, c := range e.Checks {
		step, _, _ := strings.Cut(c.ID, "/")
		detail := ""
		if i := slices.IndexFunc(e.Steps, func(st suite.Step) bool { return st.Name == step }); i >= 0 {
			detail = strings.Join(e.Steps[i].Command, " ")
		}
		s.Cases = append(s.Cases, checkCase("check."+e.Name, c.ID, c, c.ID, detail))
	}
	return s
}

func suiteSuites(r suite.Result) []junitSuite {
	out := make([]junitSuite, 0, len(r.Entries))
	for _, e := range r.Entries {
		out = append(out, entrySuite(r, e))
	}
	return out
}

// suiteOneSuite is every entry's testcases in one suite (the kind's
// single-suite view; JUnit output writes suiteSuites).
func suiteOneSuite(r suite.Result) junitSuite {
	all := junitSuite{Name: "ratelimit check", timeS: r.ElapsedMs / 1000}
	for _, s := range suiteSuites(r) {
		all.Cases = append(all.Cases, s.Cases...)
	}
	return all
}

// suiteGitHub annotates each entry's failed checks (::error) and failed
// warnings (::warning), titled with the entry, then one verdict line.
func suiteGitHub(w io.Writer, r suite.Result) error {
	var b strings.Builder
	for _, s := range suiteSuites(r) {
		entry := strings.TrimPrefix(s.Name, "ratelimit check: ")
		for _, c := range s.Cases {
			title := ghProp("check: " + entry + ": " + c.Name)
			switch ch := c.check; {
			case c.Failure != nil:
				fmt.Fprintf(&b, "::error title=%s::%s\n", title, ghData(c.Failure.Message))
			case ch != nil && !ch.Pass && !ch.Skipped:
				fmt.Fprintf(&b, "::warning title=%s::%s\n", title, ghData(ch.Message))
			}
		}
	}
	switch {
	case r.Pass():
		fmt.Fprintf(&b, "check: PASS (%s)\n", suiteVerdictLine(r))
	case r.Verdict == doc.VerdictUndecided:
		fmt.Fprintf(&b, "check: FAIL: UNDECIDED: %s\n", Printable(suiteVerdictLine(r)))
	default:
		fmt.Fprintf(&b, "check: FAIL: %s\n", Printable(suiteVerdictLine(r)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ghProp(s string) string { return ksGHProp(s) }
func ghData(s string) string { return ksGHData(s) }

func suiteHTML(b *strings.Builder, r suite.Result) {
	fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(suiteScope(r)))
	text := suiteVerdictLine(r)
	if r.Verdict == doc.VerdictUndecided {
		text = "UNDECIDED: " + text
	}
	htmlVerdict(b, r.Pass(), text)
	suiteTable(r).html(b)
	for _, e := range r.Entries {
		fmt.Fprintf(b, "<h3>entry %s</h3>\n", esc(e.Name))
		for _, s := range e.Steps {
			k, v, err := stepDoc(s)
			switch {
			case err != nil:
				fmt.Fprintf(b, "<p>%s: the document does not read: %s</p>\n", esc(s.Name), esc(err.Error()))
			case k == nil:
				fmt.Fprintf(b, "<p>%s: %s %s</p>\n", esc(s.Name), esc(strings.ToUpper(s.Verdict)), esc(s.Error))
			default:
				fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", htmlCode(strings.Join(s.Command, " ")))
				k.html(b, v)
			}
		}
	}
}
