package cmd

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/probe"
)

type probeOptions struct {
	f   *Factory
	ctx context.Context

	URL            string
	Method         string
	Headers        []string
	IdentityHeader string
	Budget         int
	Expect         string
	Skip           []string
	WarnOnly       []string
	Timeout        time.Duration
	MaxWait        time.Duration
	MaxTime        time.Duration
	LimitedStatus  string
	Fingerprint    bool
	AllowUndecided bool
	Out            string
}

func newProbeCmd(f *Factory, run func(*probeOptions) error) *cobra.Command {
	opts := &probeOptions{f: f}
	c := &cobra.Command{
		Use:   "probe URL",
		Short: "Audit one endpoint's rate limiter against what goes wrong in production",
		Long: `Audit one endpoint's rate limiter with a short, bounded run and print a report
card: one row per check with PASS, FAIL, WARN or SKIP, the evidence and the fix.

Checks (ids for --skip and --warn-only):
  limited-status      once the quota is gone the endpoint answers 429 (503, 500
                      and 403 make clients retry at once, elsewhere, or give up;
                      a status declared with --limited-status is a warning)
  retry-after         every refusal carries Retry-After: delay-seconds or a date
  retry-after-honest  a client that waits the advertised Retry-After is admitted,
                      and the wait is not far longer than needed (tolerance:
                      rounding up to whole seconds, plus 300ms); after
                      Retry-After: 0 (RFC 9110 allows it) the retry at once is
                      admitted
  ratelimit-headers   RateLimit and RateLimit-Policy parse (IETF draft, any of
                      06, 07 and 08 onwards; an older draft is a warning naming
                      it), r <= q, r falls by one per admitted request and is 0
                      on 429; legacy X-RateLimit-* alone is a warning
  reset               the quota is full again when RateLimit t (or the legacy
                      reset) says, and not sooner than its rounding allows
  policy              the measured burst and refill match q and w (or --expect)
  cacheable-429       no explicit freshness (max-age, s-maxage, Expires, public)
                      on a 429; missing no-store is a warning
  identity-isolation  a fresh identity has its own quota; requests without one
                      do not share the identified quota (warning); a limiter
                      keyed by the client address only is a warning
  ip-spoofing         rotating X-Forwarded-For, X-Real-IP, Forwarded and
                      True-Client-IP gives no fresh quota to a client whose own
                      ran out (judged from the probe's own address, against a
                      control without the header sent right before and after)
  headers-on-success  2xx responses carry the headers 429s carry (warning)

Each phase uses a fresh identity probe-<run>-<letter> in --identity-header;
requests without one test the client address. When the identities share one
quota (a limiter keyed by address), the phases run one after another, each
after a full reset. The probe sends at most --budget requests (default 7 x the
advertised quota + 100, at most 20000) and stops at --max-time (default a few
windows); waits longer than --max-wait are skipped, and the checks that need
them say so. Without a RateLimit-Policy the policy checks are skipped unless
--expect gives the model (the same syntax as load --expect).

--fingerprint names the limiter instead of auditing it: constant arrivals
cannot tell a sliding log from a fixed window, so it sends arrivals designed
to (a burst from a fresh key, single requests polled until the quota comes
back, a burst after a full drain, refusals kept up, bursts straddling a
key's first window and a boundary of the clock's windows) and replays every
candidate model (token bucket, GCRA, leaky bucket, fixed window from the
first request or on the clock, sliding log, sliding-window counter, with
and without counted refusals) over every request. It prints the models that
decide every request as the target did, ranked, and the nearest misses with
the request that ruled each out, in about two windows and within the budget
(default 14 x the quota + 300). Exit 1 when no model fits.

The URL is the argument, else $RATELIMIT_TARGET. Userinfo in it is sent as
Basic auth by your client only if you put it there; it is masked in every
output. Exit codes: 0 no check failed, 1 a check failed or the run was
UNDECIDED, 2 bad input, 3 the target is unreachable.

UNDECIDED: a run that decided nothing (nothing was refused, --budget or
--max-time cut it before the evidence existed, most requests got no answer)
says so with the reason, in every format, and exits 1: a CI gate never
passes on no evidence. --allow-undecided makes it exit 0.

Bursts are sent all at once (every request in flight together), so a slow
endpoint's latency does not let the refill keep up with them.`,
		Example: `  # a reference target on a free port; its startup line prints the address
  ratelimit serve --redis embedded --addr 127.0.0.1:0 --capacity 10 --rate 5/s &
  ratelimit probe http://127.0.0.1:PORT/hello

  # see a defect caught: serve answers 429 with Retry-After: 0
  ratelimit serve --redis embedded --addr 127.0.0.1:0 --capacity 10 --rate 5/s --break retry-after-zero &
  ratelimit probe http://127.0.0.1:PORT/hello -o junit > probe.xml

  # which limiter is this? (a token bucket? nginx's leaky bucket? a window on the clock?)
  ratelimit probe http://127.0.0.1:PORT/hello --fingerprint

  # a limiter without RateLimit-Policy: say what it should enforce
  ratelimit probe https://api.example.test/v1/items --expect fixed-window:limit=100,window=1m --skip ip-spoofing`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ctx = c.Context()
			if len(args) == 1 {
				opts.URL = args[0]
			}
			if run != nil {
				return run(opts)
			}
			return runProbe(opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.Method, "method", "X", "GET", "HTTP method")
	fl.StringArrayVarP(&opts.Headers, "header", "H", nil, "request header 'Name: value' (repeatable)")
	fl.StringVar(&opts.IdentityHeader, "identity-header", probe.DefaultIdentityHeader, "header that carries the probe's identities")
	fl.IntVar(&opts.Budget, "budget", 0, "most requests to send (0: 7 x the advertised quota + 100)")
	fl.StringVar(&opts.Expect, "expect", "", "the policy to judge against instead of RateLimit-Policy, as load --expect: token-bucket:burst=N,rate=R, ...")
	fl.StringSliceVar(&opts.Skip, "skip", nil, "checks not to run (repeatable or comma-separated)")
	fl.StringSliceVar(&opts.WarnOnly, "warn-only", nil, "checks whose failure is only a warning")
	fl.DurationVar(&opts.Timeout, "timeout", probe.DefaultTimeout, "timeout of each request")
	fl.DurationVar(&opts.MaxWait, "max-wait", probe.DefaultMaxWait, "longest wait for a window or a reset to pass")
	fl.DurationVar(&opts.MaxTime, "max-time", 0, "stop the whole probe after this long (0: a few policy windows, at least 1m)")
	fl.StringVar(&opts.LimitedStatus, "limited-status", "", "statuses besides 429 the limiter refuses with (e.g. 503 for nginx's default): limited-status is then a warning")
	fl.BoolVar(&opts.Fingerprint, "fingerprint", false, "name the limiter's algorithm and parameters from designed arrivals instead of auditing it (a fingerprint document)")
	fl.BoolVar(&opts.AllowUndecided, "allow-undecided", false, "exit 0, not 1, when the run decided nothing (UNDECIDED: nothing refused, cut by --budget or --max-time, most requests unanswered)")
	fl.StringVar(&opts.Out, "out", "", "also write the JSON document to FILE (for 'ratelimit report')")
	return c
}

// undecidedExit is the exit of a run that decided nothing: 1 (a gate
// must not pass on no evidence), or 0 with --allow-undecided.
func undecidedExit(allow bool, what, why string) error {
	if allow {
		return nil
	}
	return exitcode.Failf("%s: undecided: %s (--allow-undecided exits 0)", what, strings.TrimPrefix(why, "undecided: "))
}

func runProbe(opts *probeOptions) error {
	f := opts.f
	if _, err := f.Format(); err != nil {
		return err
	}
	po, err := opts.options()
	if err != nil {
		return err
	}
	em, err := f.newEmitter(opts.Out)
	if err != nil {
		return err
	}
	defer em.close()
	if f.IO.ErrTTY {
		po.Progress = f.IO.ErrOut
	}
	if opts.Fingerprint {
		return runFingerprint(opts, po, em)
	}
	res, err := probe.Run(opts.ctx, po)
	if err != nil {
		return err
	}
	if err := em.emit(&res); err != nil {
		return err
	}
	if res.Undecided() {
		return undecidedExit(opts.AllowUndecided, "probe", doc.Failures(res.CheckList())[0])
	}
	if !res.Pass() {
		var failed []string
		for _, c := range res.Checks {
			if c.Status == probe.Fail {
				failed = append(failed, c.ID+": "+c.Message)
			}
		}
		return exitcode.Failf("probe: %s", strings.Join(failed, "; "))
	}
	return nil
}

// options turns the flags into probe.Options (check runs its entries'
// probes through it too); every error is exit 2.
func (opts *probeOptions) options() (probe.Options, error) {
	f := opts.f
	url := opts.URL
	if url == "" {
		url = f.Getenv("RATELIMIT_TARGET")
	}
	if url == "" {
		return probe.Options{}, exitcode.Usagef("give the URL to probe, e.g. ratelimit probe http://127.0.0.1:8011/hello (or set RATELIMIT_TARGET)")
	}
	headers, err := load.ParseHeaders(opts.Headers)
	if err != nil {
		return probe.Options{}, err
	}
	if opts.Timeout <= 0 || opts.MaxWait <= 0 {
		return probe.Options{}, exitcode.Usagef("--timeout and --max-wait must be positive")
	}
	po := probe.Options{
		URL: url, Method: strings.ToUpper(strings.TrimSpace(opts.Method)), Header: headers,
		IdentityHeader: opts.IdentityHeader, Budget: opts.Budget,
		Skip: trimAll(opts.Skip), WarnOnly: trimAll(opts.WarnOnly),
		Timeout: opts.Timeout, MaxWait: opts.MaxWait, MaxTime: opts.MaxTime, RunID: uuid.NewString()[:8],
	}
	if strings.TrimSpace(opts.LimitedStatus) != "" {
		if po.Limited, err = load.ParseStatuses(opts.LimitedStatus); err != nil {
			return probe.Options{}, exitcode.Usagef("--limited-status %q: want statuses such as 503 or 503,403", opts.LimitedStatus)
		}
	}
	if po.Method == "" {
		return probe.Options{}, exitcode.Usagef("-X must name an HTTP method")
	}
	if opts.Fingerprint && (len(po.Skip) > 0 || len(po.WarnOnly) > 0) {
		return probe.Options{}, exitcode.Usagef("--skip and --warn-only name probe's checks; --fingerprint runs none of them")
	}
	if opts.Expect != "" {
		x, err := judge.ParseExpect(opts.Expect)
		if err != nil {
			return probe.Options{}, err
		}
		if x.Auto || x.None || len(x.Parts) != 1 {
			return probe.Options{}, exitcode.Usagef("--expect %s: probe checks one policy: give a model, e.g. token-bucket:burst=10,rate=5/s (auto is what probe does anyway: it reads RateLimit-Policy)", opts.Expect)
		}
		l, err := limiter.NewLimiter(x.Parts[0])
		if err != nil {
			return probe.Options{}, err
		}
		pol := l.Policy()
		po.Quota, po.Window = pol.Quota, time.Duration(pol.WindowSeconds)*time.Second
		po.Model, po.ModelWords = x.Parts[0].Spec(), x.Parts[0].Describe()
	}
	if err := po.Validate(); err != nil {
		return probe.Options{}, err
	}
	return po, nil
}

func trimAll(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// runFingerprint runs probe --fingerprint: exit 1 when no model fits.
func runFingerprint(opts *probeOptions, po probe.Options, em *emitter) error {
	res, err := probe.RunFingerprint(opts.ctx, po)
	if err != nil {
		return err
	}
	if err := em.emit(&res); err != nil {
		return err
	}
	if res.Verdict == doc.VerdictUndecided {
		return undecidedExit(opts.AllowUndecided, "probe --fingerprint", doc.Failures(res.Checks)[0])
	}
	if !res.Pass() {
		return exitcode.Failf("probe --fingerprint: %s", strings.Join(doc.Failures(res.Checks), "; "))
	}
	return nil
}
