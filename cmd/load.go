package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/ratelimit-dev/ratelimit/doc"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/fault"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/report"
	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/userfile"
)

type loadOptions struct {
	f   *Factory
	ctx context.Context

	AllowUndecided bool

	Target          string
	Rate            rate.Rate
	Duration        time.Duration
	Method          string
	Headers         []string
	Body            string
	Identities      int
	IdentityHeader  string
	ExpectStatus    string
	LimitedStatus   string
	MaxFailed       string
	PreAllocatedVUs int // 0: default (flag not given)
	MaxVUs          int // 0: default (flag not given)
	Timeout         time.Duration
	HTTPClient      string
	Out             string
	Expect          string
	Thresholds      []string
	Headers429      string
	AbortOnFail     bool
	maxFailedSet    bool // --max-failed was given

	Segment  string
	Segments int
	StartAt  string
	RunID    string

	Faults        []string
	FaultRedis    string
	AllowRemote   bool
	DuringFault   string
	RecoverWithin time.Duration
	FaultKey      string
	FailoverMode  string
}

func newLoadCmd(f *Factory, run func(*loadOptions) error) *cobra.Command {
	opts := &loadOptions{f: f}
	c := &cobra.Command{
		Use:   "load",
		Short: "Load an HTTP target at a constant arrival rate and judge its rate limiter",
		Long: `Send requests to an HTTP target at a constant arrival rate (open model, like
k6's constant-arrival-rate): iteration i is due at start + i/rate, whatever the
target does. Virtual users (--pre-allocated-vus, up to --max-vus) run the
iterations; one that falls due with no idle VU is dropped and counted, never
fired late in a burst. Latency is measured from the send and from the due time.

Every response's RateLimit, RateLimit-Policy, Retry-After and Cache-Control
headers are checked. With --expect, the admitted count is compared with what
the limiter's arithmetic admits for the arrivals actually sent (one limiter per
identity), within a tolerance derived from the rate and the observed latency.

` + modelsHelp() + `

Thresholds (k6 style, --threshold, repeatable) are checked at the end and
listed in every output: METRIC OP VALUE with OP one of < <= > >= == != and
METRIC one of
  p50 p90 p95 p99 min mean max  latency from the due time (no coordinated
                                omission), in ms, s or us (ms if no unit)
  dropped  failed               a count, or % of planned / of completed
  allowed  refused              a count, or % of responses (refused: 429)
  rps                           responses per second
--max-failed is the threshold failed<=N% (replaced by a --threshold on
failed). With --abort-on-fail the run stops as soon as a threshold can no
longer be met (dropped==0 at the first drop, failed<1% once failures pass
1% of planned, max<1s at the first slower request; percentiles, mean and
rps are only judged at the end) and is reported as aborted, exit 1.
A run that refused nothing and saw no RateLimit header says so: a note,
and a failure with --expect.

Faults (--fault, repeatable, with --fault-redis URL and --expect): while the
run goes, faults are played on the Redis behind the target, and only there:
  pause:3s@10s        CLIENT PAUSE ALL for 3s from 10s (pause-write: WRITE)
  drop-clients@10s    CLIENT KILL TYPE normal (the tool's own connection spared)
  flush-scripts@10s   SCRIPT FLUSH: the target meets NOSCRIPT
  failover@10s        CLUSTER FAILOVER on a replica of --fault-key's primary;
                      on a standalone primary with a replica: REPLICAOF NO ONE
                      on the replica, then the primary becomes its replica
  stop:3s@10s, restart@10s   SIGSTOP/SIGCONT, kill and start again: only for
                      a server this process started, which load never does
                      (it starts no sandbox), so from the command line they
                      are always refused: they serve the test suite; use
                      pause and drop-clients instead
Faults go only to --fault-redis, never to a server inferred from the target, and
only after one line on stderr says what will be done to which server; a host
other than loopback (or a sandbox) needs --allow-faults-on-remote, decided from
the URL before anything is dialled. Each fault is undone when it ends, on
error and on Ctrl-C, except failover: the promoted replica stays primary and
the old primary stays its replica (fail back yourself, e.g. CLUSTER FAILOVER
on the old primary). Faults at least 1s apart: a fault that starts before
the previous one's recovery can be judged is refused. The run needs 1s before the first fault (the baseline) and
1s after the last. It is cut into windows by the due time of each request:
before, during each fault (at least 1s) and after it; per window the admitted
count against the --expect model over the same arrivals, 429s, 5xx, errors and
the latency from the due time. Each fault is called fail-open (admitted beyond
the model), stalled (the longest wait grew by 80% of the fault's length),
fail-closed (refused what the model admits) or unaffected, and its time to
recover is when a 1s span after it is back within tolerance (admissions, no
5xx or errors, p99 near the baseline's). --during-fault open|closed|unaffected
and --recover-within D turn these into checks (exit 1 on a mismatch, naming
the fault); the whole-run --expect check becomes a warning, fault:baseline
judges the run before the first fault, and --max-failed is off unless given.

The target is --target, else $RATELIMIT_TARGET.
Exit codes: 0 pass, 1 a threshold or the verdict failed, 2 bad input, 3 the
target is unreachable (the connection check before the clock starts fails, or
every request fails to connect), 130 Ctrl-C (after the summary of what ran).

Output (-o): text, json (--out FILE saves it for 'ratelimit report'), markdown
(GitHub-flavoured tables for "$GITHUB_STEP_SUMMARY") or junit (one testcase
per threshold, header check and verdict). --out is opened before the run
(a path that cannot be written is exit 2 at once); a file it created is
removed again if the run fails before the document is written, and an
existing file is left as it was until then; a write that fails after the
run is exit 2 too, once the report is printed. The JSON document (kind
"load", version 2) is described in docs/json.md.

Ceilings, checked before anything is sent (exit 2): at most 100,000,000
planned iterations (rate x duration; 20,000,000 with --expect, which keeps
every arrival for the replay), --duration 168h, --identities 1,000,000,
--max-vus 100,000, --timeout 1h, a --body file of 16 MiB (a regular file,
never a FIFO or device). Userinfo in --target (http://user:pw@host/) is sent
as Basic auth and masked in every output and error.`,
		Example: `  # against 'ratelimit serve --addr 127.0.0.1:0 --capacity 10 --rate 5/s', at the
  # address its startup line prints (listening on http://127.0.0.1:PORT)
  ratelimit load --target http://127.0.0.1:PORT/hello --rate 20/s --duration 30s \
    --expect token-bucket:burst=10,rate=5/s

  # judge by the policy the target advertises (RateLimit-Policy): the default
  RATELIMIT_TARGET=http://127.0.0.1:PORT/hello ratelimit load --rate 20/s

  # ten API keys, a POST body, JSON for 'ratelimit report'
  ratelimit load --target https://api.example.test/v1/items -X POST \
    -H 'Content-Type: application/json' --body @item.json \
    --identities 10 --identity-header X-API-Key --rate 300/m --duration 2m --out run.json

  # does the service fail open when its Redis stalls for 2s, and recover? (the
  # Redis behind the service: the URL 'ratelimit sandbox' printed)
  ratelimit load --target http://127.0.0.1:PORT/hello --rate 100/s --duration 8s \
    --expect token-bucket:burst=10,rate=10/s --fault pause:2s@3s \
    --fault-redis redis://127.0.0.1:REDISPORT --during-fault open --recover-within 2s`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.ctx = c.Context()
			// 0 means "the default" to load.Options: a 0 the user typed is refused
			for _, name := range []string{"pre-allocated-vus", "max-vus"} {
				if c.Flags().Changed(name) {
					if n, _ := c.Flags().GetInt(name); n < 1 {
						return exitcode.Usagef("--%s %d: must be at least 1", name, n)
					}
				}
			}
			if !c.Flags().Changed("pre-allocated-vus") {
				opts.PreAllocatedVUs = 0
			}
			if !c.Flags().Changed("max-vus") {
				opts.MaxVUs = 0
			}
			opts.maxFailedSet = c.Flags().Changed("max-failed")
			if run != nil {
				return run(opts)
			}
			return runLoad(opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Target, "target", "", "URL to load (default $RATELIMIT_TARGET)")
	fl.Var(&opts.Rate, "rate", "arrival rate of requests, not the limiter's rate (that is in --expect): 20/s, 300/m, 5/100ms (required)")
	fl.DurationVar(&opts.Duration, "duration", 30*time.Second, "how long iterations fall due")
	fl.StringVarP(&opts.Method, "method", "X", "GET", "HTTP method")
	fl.StringArrayVarP(&opts.Headers, "header", "H", nil, "request header 'Name: value' (repeatable)")
	fl.StringVar(&opts.Body, "body", "", "request body; @FILE reads it from a regular file of at most 16 MiB")
	fl.IntVar(&opts.Identities, "identities", 1, "spread requests round-robin over N API keys load-<run>-<n> (0: send none)")
	fl.StringVar(&opts.IdentityHeader, "identity-header", load.DefaultIdentityHeader, "header that carries the API key")
	fl.StringVar(&opts.ExpectStatus, "expect-status", "200,429", "statuses that are not failures (e.g. 200,429 or 2xx,429); a 4xx or 5xx among them is a refusal (see --limited-status)")
	fl.StringVar(&opts.LimitedStatus, "limited-status", "", "statuses besides 429 that are the limiter's refusals, 4xx or 5xx (e.g. 503 for nginx's default), never counted as failed; default: the 4xx and 5xx of --expect-status")
	fl.StringVar(&opts.MaxFailed, "max-failed", "1%", "threshold: most failed requests allowed (unexpected status or transport error)")
	fl.IntVar(&opts.PreAllocatedVUs, "pre-allocated-vus", load.DefaultPreAllocatedVUs, "VUs started before the clock (at most --max-vus)")
	fl.IntVar(&opts.MaxVUs, "max-vus", load.DefaultMaxVUs, "most VUs, at least --pre-allocated-vus; an iteration due with none idle beyond this is dropped")
	fl.DurationVar(&opts.Timeout, "timeout", load.DefaultTimeout, "timeout of each request")
	fl.StringVar(&opts.HTTPClient, "http-client", load.HTTPClientAuto, "HTTP stack: lean (HTTP/1.1, one keep-alive connection per VU, plain http:// only), std (net/http: TLS, HTTP/2, proxies) or auto (lean for plain http:// without a proxy)")
	fl.StringVar(&opts.Out, "out", "", "also write the JSON document to FILE (for 'ratelimit report')")
	fl.BoolVar(&opts.AllowUndecided, "allow-undecided", false, "exit 0, not 1, when the run decided nothing (UNDECIDED: nothing refused, most requests unanswered)")
	fl.StringArrayVar(&opts.Thresholds, "threshold", nil, "check METRIC OP VALUE at the end, e.g. 'p99<50ms', 'dropped==0', 'failed<1%' (repeatable; see above)")
	fl.StringVar(&opts.Headers429, "headers", load.HeadersFail, "broken rate limit headers (Retry-After on 429s, a cacheable 429, r above q, t beyond the window, limited with a 5xx) fail the run (fail), are reported only (warn), or are not checked (off)")
	fl.BoolVar(&opts.AbortOnFail, "abort-on-fail", false, "stop the run as soon as a threshold can no longer be met (exit 1)")
	fl.StringVar(&opts.Segment, "segment", "", "run only execution segment I/N of the plan (I from 0), or k8s: I from $JOB_COMPLETION_INDEX and N from --segments or $RATELIMIT_SEGMENTS; merge the documents with 'ratelimit merge'")
	fl.StringVar(&opts.RunID, "run-id", "", "the run's id, in its identities load-<id>-<n> (default: random; for --segment, derived from the plan and --start-at, so every segment sends the same identities)")
	fl.IntVar(&opts.Segments, "segments", 0, "N for --segment k8s (default $RATELIMIT_SEGMENTS)")
	fl.StringVar(&opts.StartAt, "start-at", "", "start the clock at this wall-clock instant: RFC 3339 (2026-12-03T15:00:00Z; what --segment needs) or +D (D from now, e.g. +10s, for a single run)")
	fl.StringArrayVar(&opts.Faults, "fault", nil, "inject a fault into --fault-redis during the run: pause:3s@10s, pause-write:3s@10s, drop-clients@10s, flush-scripts@10s, failover@10s (a cluster: of --fault-key's primary; a standalone primary: its replica), stop:3s@10s and restart@10s (only for servers this process started: the test suite; refused from the command line) (repeatable)")
	fl.StringVar(&opts.FaultRedis, "fault-redis", "", "the Redis behind the target, where --fault goes (never inferred): loopback or a sandbox, else "+fault.AllowRemoteFlag)
	fl.BoolVar(&opts.AllowRemote, strings.TrimPrefix(fault.AllowRemoteFlag, "--"), false, "let --fault go to a server that is not on loopback")
	fl.StringVar(&opts.DuringFault, "during-fault", judge.DuringAny, "what the target may do during a fault: open (fail open or unaffected), closed (fail closed or unaffected), unaffected, or any (report only)")
	fl.DurationVar(&opts.RecoverWithin, "recover-within", 0, "fail unless the target is back within tolerance this long after each fault ends (0: report the time only)")
	fl.StringVar(&opts.FaultKey, "fault-key", "", "on a cluster, the key whose primary a failover fault fails over (the target's bucket key, e.g. rl:{ip:127.0.0.1}:token-bucket)")
	fl.StringVar(&opts.FailoverMode, "failover-mode", string(fault.FailoverForce), "how a failover fault promotes the replica: force, takeover or graceful")
	fl.StringVar(&opts.Expect, "expect", "", "judge the admitted count: "+limiter.SpecSyntax()+", several joined by +, auto (read RateLimit-Policy) or none; default: the advertised RateLimit-Policy when there is one")
	return c
}

func runLoad(opts *loadOptions) error {
	f := opts.f
	if _, err := f.Format(); err != nil {
		return err
	}
	o, err := opts.loadOptions()
	if err != nil {
		return err
	}
	plan, err := opts.faultPlan(&o)
	if err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	em, err := f.newEmitter(opts.Out)
	if err != nil {
		return err
	}
	defer em.close()
	res, err := opts.run(o, plan, f.IO.ErrTTY)
	if err != nil {
		return err
	}
	if err := em.emit(res); err != nil {
		return err
	}
	return loadOutcome(res, opts.AllowUndecided)
}

// run plays the validated plan o (check runs its entries' loads through
// it too): the fault injector when plan has faults, the progress bar
// when progress is set, then load.Run.
func (opts *loadOptions) run(o load.Options, plan fault.Plan, progress bool) (*tally.Result, error) {
	f := opts.f
	if plan != nil {
		inj, err := fault.New(opts.ctx, plan, fault.Options{
			URL: opts.FaultRedis, AllowRemote: opts.AllowRemote, Sandboxes: f.Sandboxes,
			Key: opts.FaultKey, Failover: fault.FailoverMode(opts.FailoverMode), Timeout: f.Global.RedisTimeout,
		})
		if err != nil {
			return nil, err
		}
		defer inj.Close()
		fmt.Fprintln(f.IO.ErrOut, report.Printable(inj.Statement()))
		o.Faults.Server, o.Faults.Statement = inj.Target().Shown, inj.Statement()
		o.Faults.Run = func(ctx context.Context, start time.Time) []judge.Disruption {
			outs, _ := inj.Run(ctx, start) // each outcome carries its error
			return disruptions(outs)
		}
	}
	var stop func()
	if progress {
		o.Live = &load.Live{}
		stop = loadProgress(f, o.Live, o.Duration)
	}
	restore := func() {}
	if f.Procs != nil {
		restore = f.Procs(o) // as many processors as the rate needs
	}
	res, err := load.Run(opts.ctx, o)
	restore()
	if stop != nil {
		stop()
	}
	return res, err
}

// loadOutcome maps a finished run to its exit: interrupted (130), unreachable
// (3), failed thresholds or verdict (1), else nil.
func loadOutcome(res *tally.Result, allowUndecided bool) error {
	if res.Interrupted {
		return fmt.Errorf("load stopped after %.1fs: %w", res.ElapsedS, context.Canceled)
	}
	if res.Responses == 0 && res.Completed > 0 {
		connect := true
		for kind := range res.Errors {
			if kind != "interrupted" && !load.ConnectKinds[kind] {
				connect = false
			}
		}
		if connect {
			what := fmt.Sprintf("all %d requests", res.Completed)
			if res.Completed == 1 {
				what = "its only request"
			}
			return exitcode.Unreachablef("target %s refused or could not be reached for %s; start it or check --target", res.Target, what)
		}
	}
	if err := noPolicyToRead(res); err != nil {
		return err
	}
	if res.Verdict == "fail" {
		return exitcode.Failf("load: %s", strings.Join(res.VerdictMessages, "; "))
	}
	if res.Verdict == doc.VerdictUndecided {
		return undecidedExit(allowUndecided, "load", strings.Join(res.VerdictMessages, "; "))
	}
	return nil
}

// noPolicyToRead is exit 2 for --expect auto when the target advertised no
// policy: nothing was judged for want of input, which CI must tell from a
// count the limiter got wrong (exit 1).
func noPolicyToRead(res *tally.Result) error {
	if res.Expect == nil || !res.Expect.NoPolicyToRead() {
		return nil
	}
	return exitcode.Usagef("--expect auto: %s advertised no RateLimit-Policy to read; %s", res.Target, judge.FindModelHint)
}

// loadOptions turns the flags into load.Options; every error is exit 2.
func (opts *loadOptions) loadOptions() (load.Options, error) {
	f := opts.f
	target := opts.Target
	if target == "" {
		target = f.Getenv("RATELIMIT_TARGET")
	}
	if err := load.ValidateTarget(target); err != nil {
		return load.Options{}, err
	}
	if opts.Rate.IsZero() {
		return load.Options{}, exitcode.Usagef("--rate is required, e.g. --rate 20/s")
	}
	headers, err := load.ParseHeaders(opts.Headers)
	if err != nil {
		return load.Options{}, err
	}
	var body []byte
	if name, ok := strings.CutPrefix(opts.Body, "@"); ok {
		if body, err = userfile.Read(name, "--body file", userfile.MaxBody); err != nil {
			return load.Options{}, err
		}
	} else if opts.Body != "" {
		body = []byte(opts.Body)
	}
	statuses, err := load.ParseStatuses(opts.ExpectStatus)
	if err != nil {
		return load.Options{}, err
	}
	maxFailed, err := load.ParsePercent(opts.MaxFailed)
	if err != nil {
		return load.Options{}, err
	}
	var thresholds []judge.Threshold
	noMaxFailed := false
	for _, s := range opts.Thresholds {
		th, err := judge.ParseThreshold(s)
		if err != nil {
			return load.Options{}, err
		}
		thresholds = append(thresholds, th)
		// a threshold on failed replaces the default --max-failed
		noMaxFailed = noMaxFailed || th.Metric == "failed" && !opts.maxFailedSet
	}
	limited, err := limitedStatuses(opts.LimitedStatus, statuses)
	if err != nil {
		return load.Options{}, err
	}
	expect := judge.Default()
	if opts.Expect != "" {
		if expect, err = judge.ParseExpect(opts.Expect); err != nil {
			return load.Options{}, err
		}
	}
	if opts.Timeout <= 0 {
		return load.Options{}, exitcode.Usagef("--timeout must be positive, e.g. 10s")
	}
	if strings.TrimSpace(opts.Method) == "" {
		return load.Options{}, exitcode.Usagef("-X is empty; name an HTTP method such as GET or POST")
	}
	if opts.Identities > 0 && strings.TrimSpace(opts.IdentityHeader) == "" {
		return load.Options{}, exitcode.Usagef("--identity-header is empty; name the header that carries the API key")
	}
	seg, err := opts.segment()
	if err != nil {
		return load.Options{}, err
	}
	startAt, err := parseStartAt(opts.StartAt, f.Now())
	if err != nil {
		return load.Options{}, err
	}
	runID, err := opts.runID(target, seg, startAt)
	if err != nil {
		return load.Options{}, err
	}
	return load.Options{
		Segment: seg, StartAt: startAt,
		Target: target, Method: strings.ToUpper(opts.Method), Headers: headers, Body: body,
		Rate: opts.Rate, Duration: opts.Duration,
		PreAllocatedVUs: opts.PreAllocatedVUs, MaxVUs: opts.MaxVUs, Timeout: opts.Timeout, HTTPClient: opts.HTTPClient,
		Identities: opts.Identities, IdentityHeader: opts.IdentityHeader, RunID: runID,
		ExpectStatus: statuses, LimitedStatus: limited, MaxFailed: maxFailed, NoMaxFailed: noMaxFailed, Expect: expect,
		Thresholds: thresholds, AbortOnFail: opts.AbortOnFail, HeaderMode: strings.ToLower(strings.TrimSpace(opts.Headers429)),
		Now: f.Now,
	}, nil
}

// faultPlan reads --fault and its companions into o.Faults (without the
// injector, made once the run is sure to start) and returns the plan; nil
// without --fault. Where faults may go is decided here, from the URL,
// before anything is dialled.
func (opts *loadOptions) faultPlan(o *load.Options) (fault.Plan, error) {
	if len(opts.Faults) == 0 {
		for flag, set := range map[string]bool{
			"--fault-redis": opts.FaultRedis != "", "--fault-key": opts.FaultKey != "",
			"--recover-within": opts.RecoverWithin != 0, fault.AllowRemoteFlag: opts.AllowRemote,
		} {
			if set {
				return nil, exitcode.Usagef("%s needs --fault", flag)
			}
		}
		return nil, nil
	}
	plan, err := fault.ParsePlan(opts.Faults)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(opts.FaultRedis) == "" {
		return nil, exitcode.Usagef("--fault needs --fault-redis URL: faults go only to the server you name, never to one inferred from the target")
	}
	if _, err := fault.CheckTarget(opts.FaultRedis, opts.AllowRemote, opts.f.Sandboxes); err != nil {
		return nil, err
	}
	if _, err := fault.ParseFailoverMode(opts.FailoverMode); err != nil {
		return nil, err
	}
	during := strings.ToLower(strings.TrimSpace(opts.DuringFault))
	fs := &load.Faults{FaultPlan: judge.FaultPlan{During: during, RecoverWithin: opts.RecoverWithin}}
	for _, s := range plan {
		fs.Specs = append(fs.Specs, judge.PlannedFault{Spec: s.String(), Kind: string(s.Kind), At: s.At, For: s.For})
	}
	// a placeholder until the injector exists, so Validate sees a plan
	fs.Run = func(context.Context, time.Time) []judge.Disruption { return nil }
	o.Faults = fs
	if !opts.maxFailedSet {
		// 5xx and errors during a fault are what the fault checks judge
		o.NoMaxFailed = true
	}
	return plan, nil
}

// disruptions turns the faults as played into what load judges.
func disruptions(outs []fault.Outcome) []judge.Disruption {
	ds := make([]judge.Disruption, 0, len(outs))
	for _, o := range outs {
		d := judge.Disruption{Spec: o.Spec.String(), Kind: string(o.Spec.Kind), Server: o.Server, Detail: o.Detail,
			Start: o.Start, End: o.End, Timed: o.Spec.Kind.Timed()}
		if o.Err != nil {
			d.Err = o.Err.Error()
		}
		ds = append(ds, d)
	}
	return ds
}

// segment reads --segment I/N, or k8s with the index from
// JOB_COMPLETION_INDEX (an Indexed Job) and N from --segments or
// RATELIMIT_SEGMENTS.
func (opts *loadOptions) segment() (load.Segment, error) {
	raw := strings.TrimSpace(opts.Segment)
	if raw == "" {
		if opts.Segments != 0 {
			return load.Segment{}, exitcode.Usagef("--segments needs --segment k8s")
		}
		return load.Segment{}, nil
	}
	if strings.EqualFold(raw, "k8s") {
		env := opts.f.Getenv("JOB_COMPLETION_INDEX")
		i, err := strconv.Atoi(strings.TrimSpace(env))
		if err != nil {
			return load.Segment{}, exitcode.Usagef("--segment k8s: JOB_COMPLETION_INDEX is %q, not an index (run it in an Indexed Job, completionMode: Indexed)", env)
		}
		n := opts.Segments
		if n == 0 {
			ns := opts.f.Getenv("RATELIMIT_SEGMENTS")
			if n, err = strconv.Atoi(strings.TrimSpace(ns)); err != nil {
				return load.Segment{}, exitcode.Usagef("--segment k8s needs the number of segments: --segments N or RATELIMIT_SEGMENTS (it is %q)", ns)
			}
		}
		return segmentOf(raw, i, n)
	}
	if opts.Segments != 0 {
		return load.Segment{}, exitcode.Usagef("--segments is for --segment k8s; --segment %s names its count itself", raw)
	}
	is, ns, ok := strings.Cut(raw, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || err1 != nil || err2 != nil {
		return load.Segment{}, exitcode.Usagef("--segment %q: want I/N such as 0/4 (the first of four), or k8s", raw)
	}
	return segmentOf(raw, i, n)
}

// segmentOf is segment I of N as given: a count below 1 is refused here,
// since load.Segment{} (0/0) means no --segment at all.
func segmentOf(raw string, i, n int) (load.Segment, error) {
	if n < 1 {
		return load.Segment{}, exitcode.Usagef("--segment %s: the count %d is out of range; use 1 to %d", raw, n, load.MaxSegments)
	}
	return load.Segment{Index: i, Count: n}, nil
}

// parseStartAt reads --start-at: RFC 3339, or +D after now.
func parseStartAt(raw string, now time.Time) (time.Time, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return time.Time{}, nil
	}
	if d, ok := strings.CutPrefix(raw, "+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil || dur < 0 {
			return time.Time{}, exitcode.Usagef("--start-at %q: want +D such as +10s, or an RFC 3339 time", raw)
		}
		return now.Add(dur), nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, exitcode.Usagef("--start-at %q: want an RFC 3339 time such as 2026-12-03T15:00:00Z, or +D", raw)
	}
	return t, nil
}

// runID is --run-id, or for a segment one derived from the plan (target,
// rate, duration, segments, start), so that every segment of one plan
// sends the same identities without being told; else random.
func (opts *loadOptions) runID(target string, seg load.Segment, startAt time.Time) (string, error) {
	if id := strings.TrimSpace(opts.RunID); id != "" {
		if len(id) > 32 || strings.ContainsFunc(id, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}) {
			return "", exitcode.Usagef("--run-id %q: use at most 32 letters, digits, - and _", id)
		}
		return id, nil
	}
	if seg.Count > 1 {
		if strings.HasPrefix(strings.TrimSpace(opts.StartAt), "+") {
			return "", exitcode.Usagef("--start-at %s is from now, so each segment would start at its own instant: give the segments one RFC 3339 time, e.g. --start-at $(date -u -d '+10 sec' +%%Y-%%m-%%dT%%H:%%M:%%SZ)", strings.TrimSpace(opts.StartAt))
		}
		if startAt.IsZero() {
			return "", exitcode.Usagef("--segment needs --start-at (the instant every segment starts) or --run-id, so the segments send the same identities")
		}
		sum := sha256.Sum256(fmt.Appendf(nil, "%s|%s|%s|%d|%s", secret.URL(target), opts.Rate, opts.Duration, seg.Count, startAt.UTC().Format(time.RFC3339Nano)))
		return hex.EncodeToString(sum[:4]), nil
	}
	return uuid.NewString()[:8], nil
}

// limitedStatuses reads --limited-status (a list of statuses, as
// --expect-status), or, without it, the refusals --expect-status implies
// (judge.DeclaredRefusals).
func limitedStatuses(flag string, expected []int) ([]int, error) {
	var given []int
	if strings.TrimSpace(flag) != "" {
		var err error
		if given, err = load.ParseStatuses(flag); err != nil {
			return nil, exitcode.Usagef("--limited-status %q: want statuses such as 503 or 503,403", flag)
		}
	}
	out := judge.DeclaredRefusals(given, expected)
	if _, err := judge.NewRule(out); err != nil {
		return nil, exitcode.Usagef("--limited-status %v", err)
	}
	return out, nil
}

// modelsHelp lists every --expect model with its parameters and options,
// generated from the limiter registry, so an option added there is listed
// here without an edit.
func modelsHelp() string {
	var b strings.Builder
	b.WriteString("Models for --expect (MODEL:key=value,..., several joined by + must all admit;\nauto reads RateLimit-Policy, none judges nothing):\n")
	forms := strings.Split(limiter.SpecSyntax(), ", ")
	for i, a := range limiter.Algos() {
		e := limiter.Lookup(a)
		form := string(a)
		if i < len(forms) {
			form = forms[i]
		}
		fmt.Fprintf(&b, "  %s  (%s)\n", form, e.Words)
		for _, o := range e.Options {
			value := "V"
			if len(o.Values) > 0 {
				value = strings.Join(o.Values, "|")
			}
			line := fmt.Sprintf("      %s=%s  %s", o.Key, value, o.Help)
			if o.Default != "" {
				line += " (default " + o.Default + ")"
			}
			b.WriteString(line + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
