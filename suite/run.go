package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// Kind and Version identify a suite document (what `ratelimit check`
// writes).
const (
	Kind    = "suite"
	Version = 1
)

// The steps of an entry, in the order they run.
const (
	StepProbe = "probe"
	StepLoad  = "load"
)

// Verdicts of a step besides doc's pass, fail and undecided: error (the
// step could not run to its end: the target unreachable, bad input the
// file could not show) and skipped (an earlier step's error made it
// pointless).
const (
	VerdictError   = "error"
	VerdictSkipped = "skipped"
)

// CheckRun is the id of the check a step that could not run fails.
const CheckRun = "run"

// Outcome is what a Runner returns for one step: the checks of the
// document the step wrote and the document itself.
type Outcome struct {
	Checks   []doc.Check
	Document json.RawMessage
}

// Runner runs one step of an entry: `ratelimit probe ARGS` or `ratelimit
// load ARGS`, the arguments being the entry's (Entry.ProbeArgs,
// LoadArgs). cmd implements it with the commands' own flag parsing and
// domain packages. An error means the step could not run to its end; its
// exit code (exitcode.Code) is kept.
type Runner interface {
	Step(ctx context.Context, step string, args []string) (Outcome, error)
}

// Options configure a run.
type Options struct {
	// Only names the entries to run (all when empty).
	Only []string
	// Parallel is how many entries run at once; 1 (the default) runs
	// them one after another, so a limiter two endpoints share never
	// sees two loads at once.
	Parallel int
	// AllowUndecided lets every entry that decided nothing pass.
	AllowUndecided bool
	// Getenv reads the ${VAR}s of the file.
	Getenv func(string) string
	// Now is the clock (elapsed times only).
	Now func() time.Time
	// Done, when set, is called as each entry finishes (in the order they
	// finish), for progress lines.
	Done func(EntryResult)
}

// Result is the suite document (kind "suite").
type Result struct {
	doc.Header
	File     string `json:"file"`
	Parallel int    `json:"parallel"`
	// ElapsedMs is the whole run's time.
	ElapsedMs float64       `json:"elapsed_ms"`
	Entries   []EntryResult `json:"entries"`
	// Checks are one per entry run (id: its name), passing when the
	// entry passed.
	Checks []doc.Check `json:"checks"`
	// Verdict is pass (every entry passed), fail (one failed or could
	// not run) or undecided (none failed, one decided nothing and was
	// not allowed to).
	Verdict string `json:"verdict"`
}

// EntryResult is one entry's run.
type EntryResult struct {
	Name   string `json:"name"`
	Target string `json:"target"` // the URL, credentials masked
	Expect string `json:"expect,omitempty"`
	// Verdict is pass, fail or undecided, from the checks of its steps.
	Verdict string `json:"verdict"`
	// AllowUndecided: an undecided verdict passes (allow_undecided in
	// the file, or check --allow-undecided).
	AllowUndecided bool    `json:"allow_undecided,omitempty"`
	Passed         bool    `json:"passed"`
	ElapsedMs      float64 `json:"elapsed_ms"`
	Steps          []Step  `json:"steps"`
	// Checks are the steps' checks, each id prefixed with its step
	// ("probe/retry-after", "load/expect"); a step that could not run
	// fails "STEP/run"; an undecided step's decided check is a warning
	// when undecided runs are allowed.
	Checks []doc.Check `json:"checks"`
}

// Step is one step of an entry.
type Step struct {
	Name string `json:"name"` // probe or load
	// Command is the command line the step stands for, credentials
	// masked: rerun it by hand to see the step alone.
	Command []string `json:"command"`
	// Verdict is the step document's (pass, fail, undecided), or error
	// or skipped.
	Verdict string `json:"verdict"`
	// Error is why the step could not run (verdict error), ExitCode the
	// code its command would have exited with.
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	// Document is the document the step wrote (kind probe or load), as
	// `ratelimit probe --out` or `load --out` would have written it.
	Document json.RawMessage `json:"document,omitempty"`
}

// CheckList returns the run's checks (one per entry).
func (r Result) CheckList() []doc.Check { return r.Checks }

// Pass reports whether every entry passed.
func (r Result) Pass() bool { return r.Verdict == doc.VerdictPass }

// DocHeader returns the envelope, for stamping.
func (r *Result) DocHeader() *doc.Header { return &r.Header }

// Failed lists the entries that did not pass, with why.
func (r Result) Failed() []string {
	var out []string
	for _, c := range r.Checks {
		if !c.Pass {
			out = append(out, c.ID+": "+c.Message)
		}
	}
	return out
}

// Run runs the entries of f (probe, then load, each through r) and
// returns the suite document. Every ${VAR} is expanded before the first
// request, so a missing variable is exit 2 with nothing sent. Entries run
// one after another unless o.Parallel > 1. A step that cannot run (the
// target unreachable) fails its entry and the run goes on; an interrupt
// (ctx) ends the run with ctx's error.
func Run(ctx context.Context, f File, r Runner, o Options) (Result, error) {
	res := Result{Header: doc.Header{Kind: Kind, Version: Version}, File: f.Path}
	entries, err := f.Select(o.Only)
	if err != nil {
		return res, err
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	expanded := make([]Entry, len(entries))
	for i, e := range entries {
		if expanded[i], err = e.Expand(f.Path, getenv); err != nil {
			return res, err
		}
	}
	res.Parallel = max(o.Parallel, 1)
	start := now()
	res.Entries = make([]EntryResult, len(expanded))
	var mu sync.Mutex
	sem := make(chan struct{}, res.Parallel)
	var wg sync.WaitGroup
	for i, e := range expanded {
		sem <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			er := runEntry(ctx, f.Defaults, e, r, now, o.AllowUndecided || e.Undecided(f.Defaults))
			res.Entries[i] = er
			if o.Done != nil && ctx.Err() == nil {
				mu.Lock()
				o.Done(er)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("check interrupted: %w", err)
	}
	res.ElapsedMs = ms(now().Sub(start))
	res.Checks, res.Verdict = verdict(res.Entries)
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runEntry runs e's steps: probe, then load (skipped when the probe
// could not reach the target).
func runEntry(ctx context.Context, d Defaults, e Entry, r Runner, now func() time.Time, allowUndecided bool) EntryResult {
	er := EntryResult{Name: e.Name, Target: secret.URL(e.URL), Expect: e.Expect, AllowUndecided: allowUndecided}
	start := now()
	type plan struct {
		name string
		args []string
	}
	var steps []plan
	if !e.Probe.Off {
		steps = append(steps, plan{StepProbe, e.ProbeArgs(d)})
	}
	if !e.Load.Off {
		steps = append(steps, plan{StepLoad, e.LoadArgs(d)})
	}
	unreachable := false
	for _, p := range steps {
		st := Step{Name: p.name, Command: Command(p.name, p.args)}
		var checks []doc.Check
		switch {
		case unreachable:
			st.Verdict = VerdictSkipped
			checks = []doc.Check{{ID: CheckRun, Pass: true, Skipped: true, Message: "skipped: the target could not be reached"}}
		default:
			out, err := r.Step(ctx, p.name, p.args)
			switch {
			case err != nil:
				st.Verdict, st.Error, st.ExitCode = VerdictError, secret.Redact(err.Error()), exitcode.Code(err)
				checks = []doc.Check{{ID: CheckRun, Pass: false, Message: st.Error}}
				unreachable = st.ExitCode == exitcode.Unreachable
				st.Document = out.Document
			default:
				st.Document, checks = out.Document, out.Checks
				st.Verdict = doc.VerdictOf(checks)
			}
		}
		for _, c := range checks {
			if allowUndecided && c.ID == doc.CheckDecided && !c.Pass {
				c.Warning = true
			}
			c.ID = p.name + "/" + c.ID
			er.Checks = append(er.Checks, c)
		}
		er.Steps = append(er.Steps, st)
	}
	er.Verdict = doc.VerdictPass
	for _, st := range er.Steps {
		switch st.Verdict {
		case doc.VerdictFail, VerdictError:
			er.Verdict = doc.VerdictFail
		case doc.VerdictUndecided:
			if er.Verdict == doc.VerdictPass {
				er.Verdict = doc.VerdictUndecided
			}
		}
	}
	er.Passed = er.Verdict == doc.VerdictPass || er.Verdict == doc.VerdictUndecided && allowUndecided
	er.ElapsedMs = ms(now().Sub(start))
	return er
}

// verdict is the run's checks (one per entry) and verdict.
func verdict(entries []EntryResult) ([]doc.Check, string) {
	checks := make([]doc.Check, 0, len(entries))
	v := doc.VerdictPass
	for _, e := range entries {
		c := doc.Check{ID: e.Name, Pass: e.Passed, Message: e.Summary()}
		checks = append(checks, c)
		switch {
		case e.Passed:
		case e.Verdict == doc.VerdictUndecided:
			if v == doc.VerdictPass {
				v = doc.VerdictUndecided
			}
		default:
			v = doc.VerdictFail
		}
	}
	return checks, v
}

// Summary says in one line how each step of the entry went: "probe PASS
// (10 checks); load FAIL: ...".
func (e EntryResult) Summary() string {
	var parts []string
	for _, st := range e.Steps {
		prefix := st.Name + "/"
		var failed, warned []string
		n := 0
		for _, c := range e.Checks {
			id, ok := strings.CutPrefix(c.ID, prefix)
			if !ok || c.Skipped {
				continue
			}
			n++
			switch {
			case !c.Pass && c.Counts():
				failed = append(failed, id+": "+c.Message)
			case !c.Pass:
				warned = append(warned, id)
			}
		}
		word := strings.ToUpper(st.Verdict)
		switch {
		case st.Verdict == VerdictError:
			parts = append(parts, st.Name+" ERROR: "+st.Error)
		case st.Verdict == VerdictSkipped:
			parts = append(parts, st.Name+" SKIPPED (the target could not be reached)")
		case len(failed) > 0:
			parts = append(parts, st.Name+" "+word+": "+strings.Join(failed, "; "))
		default:
			s := fmt.Sprintf("%s %s (%d checks", st.Name, word, n)
			if len(warned) > 0 {
				s += ", warnings: " + strings.Join(warned, ", ")
			}
			parts = append(parts, s+")")
		}
	}
	if e.Verdict == doc.VerdictUndecided && e.AllowUndecided {
		parts = append(parts, "undecided allowed")
	}
	return strings.Join(parts, "; ")
}

// Command is the command line of step with args, credentials masked.
func Command(step string, args []string) []string {
	out := []string{"ratelimit", step}
	for i := 0; i < len(args); i++ {
		a := secret.Redact(args[i])
		if args[i] == "-H" && i+1 < len(args) {
			out = append(out, a, maskHeader(args[i+1]))
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// maskHeader masks the value of a header that carries a credential.
func maskHeader(h string) string {
	name, _, ok := strings.Cut(h, ":")
	if ok && (credentialHeader(name) || strings.Contains(strings.ToLower(name), "key")) {
		return name + ": " + secret.Mask
	}
	return secret.Redact(h)
}
