package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/fault"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/probe"
	"github.com/ratelimit-dev/ratelimit/report"
	"github.com/ratelimit-dev/ratelimit/suite"
	"github.com/ratelimit-dev/ratelimit/userfile"
	"github.com/ratelimit-dev/ratelimit/version"
)

// maxSuiteFile caps a ratelimit.yaml.
const maxSuiteFile = 4 << 20

type checkOptions struct {
	f   *Factory
	ctx context.Context

	File           string
	Only           []string
	Parallel       int
	AllowUndecided bool
	Out            string
}

func newCheckCmd(f *Factory, run func(*checkOptions) error) *cobra.Command {
	opts := &checkOptions{f: f}
	c := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Run the limiter tests of a ratelimit.yaml (probe, then load, per entry): the CI gate",
		Long: `Run every entry of FILE (default ratelimit.yaml; 'ratelimit init URL' writes
one): for each, 'ratelimit probe' audits the endpoint, then 'ratelimit load'
judges what it admits at a constant arrival rate, exactly as the two commands
would with the entry's values as flags (each step's command line is in the
document: rerun it by hand to see that step alone). Prints one summary table,
one row per entry, then each entry's probe and load reports.

The file (YAML; its JSON Schema is docs/schema/ratelimit-file.json):
  version: 1
  defaults:            # for every entry that does not say
    rate: 20/s         # load's arrival rate (above the limiter's)
    duration: 10s      # load's length
    identities: 1      # load's API keys
    identity_header: X-API-Key
    headers: fail      # load's header policy: fail, warn or off
    timeout: 5s        # each request
    allow_undecided: false
  entries:
    - name: items      # --only picks by it; names the JUnit suite
      url: https://api.example.test/v1/items
      method: GET
      headers:
        Authorization: Bearer ${API_TOKEN}   # from the environment
      identity_header: X-API-Key
      expect: token-bucket:burst=10,rate=5/s # load --expect syntax
      limited_status: "503"                  # refusals besides 429
      allow_undecided: false
      probe: {checks: [...], skip: [...], warn_only: [...], budget: N, max_time: 1m, run: true}
      load: {rate: 20/s, duration: 10s, identities: 1, headers: warn,
             thresholds: ["p99<200ms"], expect_status: "200,429", run: true}
      fault: {inject: [pause:2s@3s], redis: "${FAULT_REDIS}", during: open,
              recover_within: 2s}

Credentials never live in the file: a URL with a password, a credential
in a URL's query or a literal Authorization, Cookie, token or API-key
header value is refused; write ${VAR} and export VAR (in CI, from a
secret). Every mistake (an unknown field, a bad model, rate or duration,
a check probe does not have, ${VAR} unset) is exit 2 naming the line and
the field, before any request is sent.

Entries run one after another (a limiter two endpoints share must not see
both loads at once); --parallel N runs N at a time when they are
independent. An entry passes when neither step failed a check; one that
decided nothing (UNDECIDED: nothing refused, most requests unanswered) does
not pass unless its allow_undecided or --allow-undecided says so. A step
that cannot reach its target fails its entry and the next entry runs.

Exit codes: 0 every entry passed, 1 an entry failed or was UNDECIDED, 2 bad
input (the file, a flag), 3 no entry failed a check but a target could not
be reached. -o junit writes one testsuite per entry (a testcase per check
of its probe and load), -o github annotates every failed check, -o json
writes the suite document (docs/json.md), which 'ratelimit report' draws
again.`,
		Example: `  # write an entry for an endpoint, then gate on it
  ratelimit init http://127.0.0.1:PORT/hello
  ratelimit check

  # in CI: JUnit for the test reporter, one entry only
  API_TOKEN=... ratelimit check ratelimit.yaml --only items -o junit > ratelimit.xml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ctx = c.Context()
			opts.File = suite.DefaultFile
			if len(args) == 1 {
				opts.File = args[0]
			}
			if run != nil {
				return run(opts)
			}
			return runCheck(opts)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&opts.Only, "only", nil, "run only the entries of these names (repeatable or comma-separated)")
	fl.IntVar(&opts.Parallel, "parallel", 1, "entries run at once (1: one after another; more only for entries whose limiters are independent)")
	fl.BoolVar(&opts.AllowUndecided, "allow-undecided", false, "an entry that decided nothing (UNDECIDED) passes, as allow_undecided: true on every entry")
	fl.StringVar(&opts.Out, "out", "", "also write the JSON document to FILE (for 'ratelimit report')")
	return c
}

// suiteVocabulary is what the file is checked against that probe, load
// and fault own.
func suiteVocabulary() suite.Vocabulary {
	return suite.Vocabulary{
		ProbeChecks: probe.CheckIDs(),
		Statuses: func(s string) error {
			_, err := load.ParseStatuses(s)
			return err
		},
		Faults: func(specs []string) error {
			_, err := fault.ParsePlan(specs)
			return err
		},
	}
}

// readSuite reads and parses FILE.
func readSuite(path string) (suite.File, error) {
	data, err := userfile.Read(path, "test file", maxSuiteFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return suite.File{}, exitcode.Usagef("%s does not exist; write one with 'ratelimit init URL'", path)
		}
		return suite.File{}, err
	}
	return suite.Parse(path, data, suiteVocabulary())
}

func runCheck(opts *checkOptions) error {
	f := opts.f
	if opts.Parallel < 1 || opts.Parallel > 64 {
		return exitcode.Usagef("--parallel %d: use 1 to 64", opts.Parallel)
	}
	em, err := f.newEmitter(opts.Out)
	if err != nil {
		return err
	}
	defer em.close()
	file, err := readSuite(opts.File)
	if err != nil {
		return err
	}
	res, err := suite.Run(opts.ctx, file, &stepRunner{f: f}, suite.Options{
		Only: trimAll(opts.Only), Parallel: opts.Parallel, AllowUndecided: opts.AllowUndecided,
		Getenv: f.Getenv, Now: f.Now,
		Done: func(e suite.EntryResult) {
			fmt.Fprintf(f.IO.ErrOut, "check: %s %s (%s)\n", report.Printable(e.Name), strings.ToUpper(e.Verdict), time.Duration(e.ElapsedMs*float64(time.Millisecond)).Round(100*time.Millisecond))
		},
	})
	if err != nil {
		return err
	}
	if err := em.emit(&res); err != nil {
		return err
	}
	return checkOutcome(res)
}

// checkOutcome is the exit of a run: nil when every entry passed, 3 when
// none failed a check but a target could not be reached, else 1.
func checkOutcome(res suite.Result) error {
	if res.Pass() {
		return nil
	}
	unreachable := true
	for _, e := range res.Entries {
		if e.Passed {
			continue
		}
		for _, st := range e.Steps {
			if st.Verdict != suite.VerdictError && st.Verdict != suite.VerdictSkipped && st.Verdict != doc.VerdictPass || st.Verdict == suite.VerdictError && st.ExitCode != exitcode.Unreachable {
				unreachable = false
			}
		}
	}
	if unreachable {
		return exitcode.Unreachablef("check: %s", strings.Join(res.Failed(), "; "))
	}
	return exitcode.Failf("check: %s", strings.Join(res.Failed(), "; "))
}

// stepRunner runs one step of an entry as its command would: the
// arguments parsed by the command's own flag set (newProbeCmd,
// newLoadCmd), the options built by the same code (probeOptions.options,
// loadOptions.loadOptions, faultPlan, run), the document stamped with the
// step's command line.
type stepRunner struct {
	f *Factory
}

// parseStep parses args with c's flags, its run func capturing the options.
func parseStep(ctx context.Context, c *cobra.Command, args []string) error {
	c.SetArgs(args)
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	c.SilenceErrors, c.SilenceUsage = true, true
	if err := c.ExecuteContext(ctx); err != nil {
		if exitcode.Code(err) == exitcode.Internal {
			return exitcode.UsageError(err) // a flag that does not parse
		}
		return err
	}
	return nil
}

func (r *stepRunner) Step(ctx context.Context, step string, args []string) (suite.Outcome, error) {
	started := r.f.Now()
	var res interface {
		DocHeader() *doc.Header
	}
	var stepErr error
	switch step {
	case suite.StepProbe:
		var opts *probeOptions
		if err := parseStep(ctx, newProbeCmd(r.f, func(o *probeOptions) error { opts = o; return nil }), args); err != nil {
			return suite.Outcome{}, err
		}
		po, err := opts.options()
		if err != nil {
			return suite.Outcome{}, err
		}
		pr, err := probe.Run(ctx, po)
		if err != nil {
			return suite.Outcome{}, err
		}
		res = &pr
	case suite.StepLoad:
		var opts *loadOptions
		if err := parseStep(ctx, newLoadCmd(r.f, func(o *loadOptions) error { opts = o; return nil }), args); err != nil {
			return suite.Outcome{}, err
		}
		o, err := opts.loadOptions()
		if err != nil {
			return suite.Outcome{}, err
		}
		plan, err := opts.faultPlan(&o)
		if err != nil {
			return suite.Outcome{}, err
		}
		if err := o.Validate(); err != nil {
			return suite.Outcome{}, err
		}
		lr, err := opts.run(o, plan, false)
		if err != nil {
			return suite.Outcome{}, err
		}
		if lr.Interrupted {
			return suite.Outcome{}, fmt.Errorf("load interrupted: %w", context.Canceled)
		}
		// what load would exit 2 or 3 for (every request unreachable, no
		// policy to read) is the step's error; its verdict is in its checks
		if err := loadOutcome(lr, true); err != nil && exitcode.Code(err) != exitcode.Failed {
			stepErr = err
		}
		res = lr
	default:
		return suite.Outcome{}, exitcode.Internalf("check: unknown step %q", step)
	}
	res.DocHeader().Stamp(doc.ToolOf(version.Get()), started, suite.Command(step, args))
	data, err := json.Marshal(res)
	if err != nil {
		return suite.Outcome{}, exitcode.Internalf("encode the %s document: %v", step, err)
	}
	checks, err := report.Checks(res)
	if err != nil {
		return suite.Outcome{}, exitcode.Internalf("%s document: %v", step, err)
	}
	return suite.Outcome{Checks: checks, Document: data}, stepErr
}
