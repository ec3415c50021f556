package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/probe"
	"github.com/ratelimit-dev/ratelimit/report"
	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/suite"
	"github.com/ratelimit-dev/ratelimit/version"
)

// workflowPath is where init --workflow github writes: beside the test
// file (init is run from the repository's root, where the file lives).
func workflowPath(file string) string {
	return filepath.Join(filepath.Dir(file), ".github", "workflows", "ratelimit.yml")
}

type initOptions struct {
	f   *Factory
	ctx context.Context

	URL            string
	File           string
	Name           string
	Method         string
	Headers        []string
	IdentityHeader string
	Expect         string
	LimitedStatus  string
	AcceptCurrent  bool
	Workflow       string
	FingerprintOut string
}

func newInitCmd(f *Factory, run func(*initOptions) error) *cobra.Command {
	opts := &initOptions{f: f}
	c := &cobra.Command{
		Use:   "init URL",
		Short: "Learn an endpoint's limiter and write a test entry for it into ratelimit.yaml",
		Long: `Fingerprint URL's limiter (the engine of 'probe --fingerprint': designed
arrivals replayed through every candidate model), audit it with 'probe'
against the model found, and write an entry for it into ratelimit.yaml
(--file; created, or the entry added to its list), each line commented
with where its value came from. 'ratelimit check' then runs it.

The entry holds the model found (expect:, load --expect syntax), the load
that judges it (an arrival rate 4 x the model's refill rate, for at least
10s and 3 of its windows, at most 60s) and the request's method, headers
and identity header as given here. Checks the probe failed stay failures,
so 'check' fails until the limiter is fixed; with --accept-current they
become warnings (probe.warn_only, and load's header rules with headers:
warn when a header check failed), each commented with what it found:
accept the limiter as it is today, and gate on it getting no worse.

Credentials never go into the file: a header that carries one (-H
'Authorization: Bearer ${API_TOKEN}', single-quoted so the shell leaves
it) is written as ${VAR} and read from the environment for the probe here,
as check will. A URL with a password is refused (exit 2).

--workflow github also writes .github/workflows/ratelimit.yml beside the
file (run init from the repository's root, where the file lives): a GitHub
Actions job that runs 'ratelimit check' with this repository's composite
Action (action.yml: Markdown to the job summary, JUnit to a file), each
${VAR} the file reads passed from a repository secret of that name. An
existing workflow file is never overwritten (exit 2).

--expect MODEL skips the fingerprint (for a limiter you know, or one whose
window is too long to fingerprint in a few minutes). Exit codes: 0 the entry
was written (failing checks are listed on stderr), 1 no model fits or the
run was UNDECIDED (nothing written), 2 bad input, 3 unreachable.`,
		Example: `  # against 'ratelimit serve --addr 127.0.0.1:0 --capacity 10 --rate 5/s'
  ratelimit init http://127.0.0.1:PORT/hello
  ratelimit check

  # an API behind a token, its defects accepted as they are today, with a CI job
  ratelimit init https://staging.example.test/v1/items -H 'Authorization: Bearer ${API_TOKEN}' \
    --accept-current --workflow github`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ctx = c.Context()
			opts.URL = args[0]
			if run != nil {
				return run(opts)
			}
			return runInit(opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.File, "file", suite.DefaultFile, "the test file to create or add the entry to")
	fl.StringVar(&opts.Name, "name", "", "the entry's name (default: from the URL's path)")
	fl.StringVarP(&opts.Method, "method", "X", "GET", "HTTP method")
	fl.StringArrayVarP(&opts.Headers, "header", "H", nil, "request header 'Name: value' (repeatable); a credential as ${VAR}")
	fl.StringVar(&opts.IdentityHeader, "identity-header", probe.DefaultIdentityHeader, "header that carries the identities of probe and load")
	fl.StringVar(&opts.Expect, "expect", "", "the model, instead of fingerprinting it: "+"token-bucket:burst=10,rate=5/s, ... (one model)")
	fl.StringVar(&opts.LimitedStatus, "limited-status", "", "statuses besides 429 the limiter refuses with (e.g. 503 for nginx's default)")
	fl.BoolVar(&opts.AcceptCurrent, "accept-current", false, "write the checks that fail today as warnings (each commented with what it found), so check passes until the limiter gets worse")
	fl.StringVar(&opts.FingerprintOut, "fingerprint-out", "", "also write the fingerprint's JSON document to FILE, whether or not a model fits (for 'ratelimit report': every request and the near misses)")
	fl.StringVar(&opts.Workflow, "workflow", "", "also write a CI workflow that runs check: github (.github/workflows/ratelimit.yml)")
	return c
}

// envRefs are the ${VAR}s of a header value.
var envRefs = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func runInit(opts *initOptions) error {
	f := opts.f
	if _, err := f.Format(); err != nil {
		return err
	}
	if w := strings.ToLower(strings.TrimSpace(opts.Workflow)); w != "" && w != "github" {
		return exitcode.Usagef("--workflow %s: the one workflow init writes is github", opts.Workflow)
	}
	if opts.Workflow != "" {
		if _, err := os.Stat(workflowPath(opts.File)); err == nil {
			return exitcode.Usagef("%s exists; init never overwrites it: remove it, or add a step running 'ratelimit check %s' by hand", workflowPath(opts.File), filepath.Base(opts.File))
		}
	}
	vocab := suiteVocabulary()
	existing, err := os.ReadFile(opts.File)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return exitcode.Usagef("read %s: %v", opts.File, err)
	}
	var taken []string
	if len(strings.TrimSpace(string(existing))) > 0 {
		file, err := readSuite(opts.File)
		if err != nil {
			return err
		}
		for _, e := range file.Entries {
			taken = append(taken, e.Name)
		}
	}
	name := opts.Name
	if name == "" {
		name = suite.NameFor(opts.URL, taken)
	}
	// the entry as the file will hold it: checked as check would read it,
	// before any request
	headers, err := initHeaders(opts.Headers)
	if err != nil {
		return err
	}
	draft := suite.Draft{Name: name, Heading: fmt.Sprintf("written by 'ratelimit init' on %s", f.Now().UTC().Format("2006-01-02"))}
	draft.Top = append(draft.Top,
		suite.Line{Key: "name", Value: name, Why: nameWhy(opts.Name)},
		suite.Line{Key: "url", Value: opts.URL, Why: "the URL given to init"},
		suite.Line{Key: "method", Value: strings.ToUpper(strings.TrimSpace(opts.Method)), Why: "init's -X"},
		suite.Line{Key: "identity_header", Value: opts.IdentityHeader, Why: "init's --identity-header: each probe phase and the load send their own identity in it"})
	if opts.LimitedStatus != "" {
		draft.Top = append(draft.Top, suite.Line{Key: "limited_status", Value: opts.LimitedStatus, Why: "init's --limited-status"})
	}
	probeFile := func(model string) ([]byte, suite.Entry, error) {
		d := draft
		d.Top = slices.DeleteFunc(slices.Clone(d.Top), func(l suite.Line) bool { return l.Key == "expect" })
		d.Top = append(d.Top, suite.Line{Key: "expect", Value: model})
		r, _, dur, _ := loadPlan(model)
		d.Load = []suite.Line{{Key: "rate", Value: r}, {Key: "duration", Value: dur}}
		data, err := suite.Append(opts.File, nil, withHeaders(d, headers), vocab)
		if err != nil {
			return nil, suite.Entry{}, err
		}
		pf, err := suite.Parse(opts.File, data, vocab)
		if err != nil {
			return nil, suite.Entry{}, err
		}
		e, err := pf.Entries[0].Expand(opts.File, f.Getenv)
		return data, e, err
	}
	// the fingerprint's own arguments: the entry's, without a model
	_, entry, err := probeFile("auto")
	if err != nil {
		return err
	}
	runner := &stepRunner{f: f}
	model, modelWhy := opts.Expect, "init's --expect"
	if model == "" {
		var fpOut *outFile
		if opts.FingerprintOut != "" {
			if fpOut, err = openOut("--fingerprint-out", opts.FingerprintOut); err != nil {
				return err
			}
			defer fpOut.abort()
		}
		started := f.Now()
		fmt.Fprintf(f.IO.ErrOut, "init: fingerprinting %s (about two windows of its limiter)\n", secret.URL(opts.URL))
		fp, err := runner.fingerprint(opts.ctx, append(entry.ProbeArgs(suite.Defaults{}), "--fingerprint"))
		if err != nil {
			return err
		}
		if fpOut != nil {
			fp.DocHeader().Stamp(doc.ToolOf(version.Get()), started, f.commandLine())
			if err := fpOut.write(&fp); err != nil {
				return err
			}
		}
		switch {
		case fp.Verdict == doc.VerdictUndecided:
			return exitcode.Failf("init: the fingerprint decided nothing (%s); nothing written: give --expect MODEL", strings.Join(doc.Failures(fp.Checks), "; "))
		case len(fp.Fits) == 0:
			return exitcode.Failf("init: no model fits what %s did (%s); nothing written: give --expect MODEL, or see 'ratelimit probe URL --fingerprint'", secret.URL(opts.URL), strings.Join(doc.Failures(fp.Checks), "; "))
		}
		model = fp.Fits[0].Model
		modelWhy = fmt.Sprintf("probe --fingerprint: the first of %s that decided all %d requests as the target did", countWord(len(fp.Fits), "model"), fp.Requests)
		if len(fp.Fits) > 1 {
			modelWhy += " (they admit alike)"
		}
	} else if x, err := judge.ParseExpect(model); err != nil {
		return err
	} else if len(x.Parts) != 1 {
		return exitcode.Usagef("--expect %s: give one model, e.g. token-bucket:burst=10,rate=5/s", model)
	}
	draft.Top = append(draft.Top, suite.Line{Key: "expect", Value: model, Why: modelWhy})
	if _, entry, err = probeFile(model); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "init: probing %s against %s\n", secret.URL(opts.URL), model)
	out, err := runner.Step(opts.ctx, suite.StepProbe, entry.ProbeArgs(suite.Defaults{}))
	if err != nil {
		return err
	}
	loadRate, loadRateWhy, dur, durWhy := loadPlan(model)
	var failing []doc.Check
	undecided := false
	for _, c := range out.Checks {
		switch {
		case c.ID == doc.CheckDecided && !c.Pass:
			undecided = true
		case c.Counts() && !c.Pass:
			failing = append(failing, c)
		}
	}
	if undecided {
		return exitcode.Failf("init: the probe decided nothing (%s); nothing written", strings.Join(doc.Failures(out.Checks), "; "))
	}
	loadHeaders, loadHeadersWhy := "", ""
	if opts.AcceptCurrent && len(failing) > 0 {
		var ids, why []string
		for _, c := range failing {
			ids = append(ids, c.ID)
			why = append(why, c.ID+": "+c.Message)
			if headerCheck(c.ID) && loadHeaders == "" {
				loadHeaders, loadHeadersWhy = "warn", "--accept-current: the probe found "+c.ID+" broken, which load's header rules judge too"
			}
		}
		draft.Probe = append(draft.Probe, suite.Line{Key: "warn_only", List: ids,
			Why: "--accept-current: failed when init probed it: " + strings.Join(why, "; ")})
	}
	draft.Load = append(draft.Load,
		suite.Line{Key: "rate", Value: loadRate, Why: loadRateWhy},
		suite.Line{Key: "duration", Value: dur, Why: durWhy})
	if loadHeaders != "" {
		draft.Load = append(draft.Load, suite.Line{Key: "headers", Value: loadHeaders, Why: loadHeadersWhy})
	}
	data, err := suite.Append(opts.File, existing, withHeaders(draft, headers), vocab)
	if err != nil {
		return err
	}
	if err := os.WriteFile(opts.File, data, 0o644); err != nil {
		return exitcode.Usagef("write %s: %v", opts.File, err)
	}
	verb := "added entry %s to %s"
	if len(existing) == 0 {
		verb = "wrote %s with entry %s"
	}
	var b strings.Builder
	if len(existing) == 0 {
		fmt.Fprintf(&b, verb+"\n", opts.File, name)
	} else {
		fmt.Fprintf(&b, verb+"\n", name, opts.File)
	}
	b.WriteString(withHeaders(draft, headers).Text(2))
	if opts.Workflow != "" {
		file, err := suite.Parse(opts.File, data, vocab)
		if err != nil {
			return err
		}
		wf := workflowPath(opts.File)
		if err := os.MkdirAll(filepath.Dir(wf), 0o755); err != nil {
			return exitcode.Usagef("create %s: %v", filepath.Dir(wf), err)
		}
		if err := os.WriteFile(wf, []byte(suite.Workflow(filepath.Base(opts.File), actionRef(), file.EnvVars())), 0o644); err != nil {
			return exitcode.Usagef("write %s: %v", wf, err)
		}
		fmt.Fprintf(&b, "wrote %s: a job running 'ratelimit check %s' with the composite Action\n", wf, filepath.Base(opts.File))
	}
	for l := range strings.Lines(b.String()) {
		fmt.Fprintln(f.IO.Out, report.Printable(strings.TrimSuffix(l, "\n")))
	}
	switch {
	case len(failing) > 0 && !opts.AcceptCurrent:
		var ids []string
		for _, c := range failing {
			ids = append(ids, c.ID)
		}
		fmt.Fprintf(f.IO.ErrOut, "init: the probe failed %s today: 'ratelimit check' fails until they are fixed (or run init again with --accept-current to make them warnings)\n", strings.Join(ids, ", "))
	default:
		fmt.Fprintf(f.IO.ErrOut, "init: run 'ratelimit check%s' to test it\n", fileArg(opts.File))
	}
	return nil
}

func fileArg(path string) string {
	if path == suite.DefaultFile {
		return ""
	}
	return " " + path
}

func nameWhy(given string) string {
	if given != "" {
		return "init's --name"
	}
	return "from the URL's path; check --only picks by it"
}

func countWord(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// headerCheck reports whether a probe check judges headers that load's
// header rules (--headers) judge too.
func headerCheck(id string) bool {
	switch id {
	case probe.CheckRetryAfter, probe.CheckRetryAfterHonest, probe.CheckHeaders, probe.CheckReset, probe.CheckCacheable, probe.CheckHeadersOnSuccess, probe.CheckLimitedStatus:
		return true
	}
	return false
}

// initHeaders reads -H for the file: a credential must be a ${VAR}.
func initHeaders(raw []string) ([]suite.Line, error) {
	var out []suite.Line
	for _, h := range raw {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, exitcode.Usagef("-H %q: want 'Name: value'", secret.Redact(h))
		}
		out = append(out, suite.Line{Key: strings.TrimSpace(name), Value: strings.TrimSpace(value), Why: "init's -H"})
		if envRefs.MatchString(value) {
			out[len(out)-1].Why = "init's -H; ${VAR} read from the environment when check runs"
		}
	}
	return out, nil
}

// withHeaders is d with the headers mapping after its top lines.
func withHeaders(d suite.Draft, headers []suite.Line) suite.Draft {
	d.Headers = headers
	return d
}

// loadPlan is the load an entry runs for model: 4 x its refill rate (so
// the limiter must refuse), for 3 of its windows, at least 10s, at most
// 60s.
func loadPlan(model string) (rateText, rateWhy, durText, durWhy string) {
	x, err := judge.ParseExpect(model)
	if err != nil || len(x.Parts) == 0 {
		return "20/s", "a default: 20 requests a second", "10s", "a default"
	}
	p := x.Parts[0]
	perS := p.PerSecond()
	_, window := p.Quota()
	switch {
	case perS*4 >= 1:
		rateText = fmt.Sprintf("%d/s", int(math.Ceil(perS*4)))
	default:
		rateText = fmt.Sprintf("%d/m", max(1, int(math.Ceil(perS*4*60))))
	}
	rateWhy = fmt.Sprintf("4 x the model's refill rate (%s/s), so the limiter must refuse", trimFloat(perS))
	d := max(10*time.Second, 3*window)
	durWhy = "3 windows of the model (" + window.String() + "), at least 10s"
	if d > time.Minute {
		d, durWhy = time.Minute, "at most 60s (3 windows of the model would be "+(3*window).String()+")"
	}
	return rateText, rateWhy, d.Round(time.Second).String(), durWhy
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// actionRef is the ref of the composite Action a workflow uses: this
// build's release tag, else main.
func actionRef() string {
	v := version.Get().Version
	if regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(v) {
		return v
	}
	return "main"
}

// fingerprint runs probe --fingerprint with args, as the command would.
func (r *stepRunner) fingerprint(ctx context.Context, args []string) (probe.Fingerprint, error) {
	var opts *probeOptions
	if err := parseStep(ctx, newProbeCmd(r.f, func(o *probeOptions) error { opts = o; return nil }), args); err != nil {
		return probe.Fingerprint{}, err
	}
	po, err := opts.options()
	if err != nil {
		return probe.Fingerprint{}, err
	}
	return probe.RunFingerprint(ctx, po)
}
