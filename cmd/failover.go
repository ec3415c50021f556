package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/failover"
	"github.com/ratelimit-dev/ratelimit/fault"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
)

type failoverOptions struct {
	f   *Factory
	ctx context.Context

	// the limiter under test
	Algo        string
	Capacity    int64
	LimiterRate rate.Rate
	Limit       int64
	Window      time.Duration
	Burst       int64
	Cost        int64

	Rate          rate.Rate // decisions per second
	Clients       int
	Trials        int
	Before, After time.Duration
	Mode          string
	Wait          int
	WaitTimeout   time.Duration
	// MaxExtra is --max-extra, nil when not given (report only).
	MaxExtra    *int64
	AllowRemote bool
	Out         string
	// Changed holds the names of the flags given on the command line.
	Changed map[string]bool
}

// Defaults of the limiter flags for the algorithms failover.DefaultParams
// does not describe: like it, about half the default decisions admitted.
const (
	failoverDefaultLimit  = 250
	failoverDefaultWindow = time.Second
	failoverDefaultBurst  = 20
)

func newFailoverCmd(f *Factory, run func(*failoverOptions) error) *cobra.Command {
	opts := &failoverOptions{f: f, LimiterRate: failover.DefaultParams.Rate, Rate: failover.DefaultRate}
	var maxExtra int64
	c := &cobra.Command{
		Use:   "failover",
		Short: "Measure what a cluster failover costs a limiter: extra admissions and lost writes",
		Long: `Measure how generous a Redis Cluster failover makes a limiter. On a cluster
with replicas, failover sends decisions through the limiter's Lua script on one
key at --rate (from --clients clients, each on its own connection), fails the
key's primary over to its replica --before into the trial (CLUSTER FAILOVER
FORCE, or TAKEOVER with --mode takeover), keeps deciding until the new primary
answers and --after more, and compares what was allowed with what the
limiter's pure Go model allows for the same decision times.

Measured per trial, and as min/median/max over --trials:
  extra admissions  allowed minus what the model allows: what the failover
                    gave away
  lost writes       admissions the old primary acknowledged but never passed
                    on, read back from the new primary's answers (~: the best
                    fit when no count explains every answer exactly)
  dropped           decisions with no answer in time (with their share)
  takeover          the failover acknowledged until the replica reported
                    itself primary: the server's gap
  no answer         the old primary's last answer until the new primary's
                    first, as the clients saw it (their timeouts included)
  p50, p99          latency of the answered calls, retries included
  errors            what the clients met (moved, readonly, unreachable, ...)

--wait N measures every trial a second time with each script call followed by
WAIT N --wait-timeout on the same connection, and refuses an admission fewer
than N replicas confirmed (fail closed). That trades latency for durability:
the last lines say what WAIT saved (lost writes; extra admissions, at most the
no-wait median) and, apart, what it cost (p50 and p99, admissions refused as
not durable, legitimate admissions refused below the model), as medians over
the trials; a wait variant that dropped most of its decisions is called out. With more replicas per
primary than N, the replica that confirmed a write may not be the one
promoted.

The limiter is --algo with its flags, as for eval and serve, except that the
limiter's own rate is --limiter-rate (--rate is the decisions'):
  token-bucket    --capacity N --limiter-rate R   (default 20 at 250/s)
  sliding-window  --limit N --window D            (default 250 per 1s)
  fixed-window    --limit N --window D            (default 250 per 1s)
  gcra            --limiter-rate R --burst N      (default 250/s, burst 20)
Under the default 500 decisions/s about half are admitted, so a lost write is
likely to be a lost admission.

Keys are failover:{<run id>}:<trial> (one slot for the run). Trial by trial the
primary and its replica swap roles; at the end, also after Ctrl-C or an error,
the first primary is failed back gracefully (nothing is lost that way), the
run's keys are deleted and every node must report cluster_state:ok. Redis lets
a node run an election only 4 x cluster-node-timeout (at least 4s) after its
last one, so a run takes a while: on 'ratelimit sandbox' (node timeout 5s)
about 10s per failover.

Safety: the failover goes only to a replica of the key's primary, in the
cluster --redis names, and only when that URL and every node the cluster
announces is on loopback (127.0.0.0/8, ::1, localhost), as 'ratelimit sandbox'
is; anything else needs --allow-faults-on-remote, a statement that the cluster
is yours to break. This is decided from the URL before any connection. No key
but the run's own is written.

-o json (or --out FILE for 'ratelimit report'): kind "failover", version 1,
docs/json.md. -o markdown, -o junit (one testcase per check), -o github.

Exit codes: 0 no check failed (max-extra is report only without --max-extra),
1 a check failed (a trial above --max-extra, the cluster not healthy at the
end, a key left behind), 2 bad input (a flag out of range, no --redis, a
standalone or embedded server, a cluster without replicas, a remote cluster
without --allow-faults-on-remote), 3 Redis unreachable, or a cluster that
would not fail over or recover in time. A run that stops after some trials
still prints what it measured.`,
		Example: `  # a disposable cluster with a replica per primary, then 5 trials with WAIT 1
  ratelimit sandbox --cluster --replicas 1 &
  ratelimit failover --redis redis://127.0.0.1:PORT --trials 5 --wait 1

  # as a CI gate: fail when a failover gives away more than 10 admissions
  ratelimit failover --redis redis://127.0.0.1:PORT --max-extra 10 -o junit > failover.xml

  # a sliding window, 4 clients, TAKEOVER, the document for 'ratelimit report'
  ratelimit failover --redis redis://127.0.0.1:PORT --algo sliding-window --limit 100 --window 1s --clients 4 --mode takeover --out failover.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.ctx = c.Context()
			opts.Changed = map[string]bool{}
			c.Flags().Visit(func(fl *pflag.Flag) { opts.Changed[fl.Name] = true })
			opts.MaxExtra = nil
			if opts.Changed["max-extra"] {
				v := maxExtra
				opts.MaxExtra = &v
			}
			if run != nil {
				return run(opts)
			}
			return runFailover(opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Algo, "algo", string(limiter.TokenBucket), "limiter: token-bucket, sliding-window, fixed-window or gcra")
	fl.Int64Var(&opts.Capacity, "capacity", failover.DefaultParams.Capacity, "token-bucket: tokens the bucket holds")
	fl.Var(&opts.LimiterRate, "limiter-rate", "the limiter's own rate: token-bucket refill, gcra emission rate (250/s, 300/m)")
	fl.Int64Var(&opts.Limit, "limit", failoverDefaultLimit, "sliding-window, fixed-window: calls admitted per window")
	fl.DurationVar(&opts.Window, "window", failoverDefaultWindow, "sliding-window, fixed-window: window length")
	fl.Int64Var(&opts.Burst, "burst", failoverDefaultBurst, "gcra: calls that may pass at once")
	fl.Int64Var(&opts.Cost, "cost", 1, "units each decision takes")
	fl.Var(&opts.Rate, "rate", "decisions per second of all clients together, not the limiter's rate (that is --limiter-rate)")
	fl.IntVar(&opts.Clients, "clients", failover.DefaultClients, "clients deciding at once, each on its own connection")
	fl.IntVar(&opts.Trials, "trials", failover.DefaultTrials, "failovers to measure (of each variant)")
	fl.DurationVar(&opts.Before, "before", failover.DefaultBefore, "decisions before the failover, in each trial")
	fl.DurationVar(&opts.After, "after", failover.DefaultAfter, "decisions after the new primary first answered")
	fl.StringVar(&opts.Mode, "mode", string(fault.FailoverForce), "how the replica takes over: force (CLUSTER FAILOVER FORCE) or takeover")
	fl.IntVar(&opts.Wait, "wait", 0, "also measure each trial with every call followed by WAIT N (0: no such run)")
	fl.DurationVar(&opts.WaitTimeout, "wait-timeout", failover.DefaultWaitTimeout, "timeout of each WAIT (whole milliseconds)")
	fl.Int64Var(&maxExtra, "max-extra", 0, "fail (exit 1) when a trial allows more than N extra admissions (default: report only)")
	fl.BoolVar(&opts.AllowRemote, strings.TrimPrefix(fault.AllowRemoteFlag, "--"), false, "let the failover go to a cluster that is neither on loopback nor a sandbox: it must be yours to break")
	fl.StringVar(&opts.Out, "out", "", "also write the JSON document to FILE (for 'ratelimit report')")
	return c
}

// failoverFlag spells a limiter parameter as failover's flag: its --rate
// is the decisions', so the limiter's rate is --limiter-rate.
func failoverFlag(param string) string {
	if param == "rate" {
		return "limiter-rate"
	}
	return param
}

// params checks the limiter flags and builds the limiter's parameters,
// naming any bad one by its flag (exit 2).
func (opts *failoverOptions) params() (limiter.Params, error) {
	algo, err := limiter.ParseAlgo(opts.Algo)
	if err != nil {
		return limiter.Params{}, err
	}
	uses := algo.Flags()
	for _, n := range limiter.ParamWords {
		if name := failoverFlag(n); opts.Changed[name] && !slices.Contains(uses, n) {
			spelled := make([]string, len(uses))
			for i, u := range uses {
				spelled[i] = failoverFlag(u)
			}
			return limiter.Params{}, exitcode.Usagef("--%s does not apply to %s; it uses --%s", name, algo, strings.Join(spelled, " and --"))
		}
	}
	if opts.Cost < 1 {
		return limiter.Params{}, exitcode.Usagef("--cost %d must be at least 1", opts.Cost)
	}
	// the algorithm reads only its own parameters (checked above)
	p := limiter.Params{Algo: algo, Cost: opts.Cost, Capacity: opts.Capacity, Rate: opts.LimiterRate,
		Burst: opts.Burst, Limit: opts.Limit, Window: opts.Window}
	if _, err := limiter.NewLimiter(p); err != nil {
		var pe *limiter.ParamError
		if errors.As(err, &pe) {
			return limiter.Params{}, exitcode.Usagef("%s", pe.Named(func(p string) string { return "--" + failoverFlag(p) }))
		}
		return limiter.Params{}, err
	}
	return p, nil
}

// zeroes refuses the counts and durations that failover.Options reads as
// "the default" when they are 0: given as 0 on the command line, they are
// out of range, not a request for the default.
func (opts *failoverOptions) zeroes() error {
	for _, z := range []struct {
		name string
		zero bool
		use  string
	}{
		{"clients", opts.Clients == 0, fmt.Sprintf("1 to %d", failover.MaxClients)},
		{"trials", opts.Trials == 0, fmt.Sprintf("1 to %d", failover.MaxTrials)},
		{"before", opts.Before == 0, "10ms to " + failover.MaxPhase.String()},
		{"after", opts.After == 0, "10ms to " + failover.MaxPhase.String()},
		{"wait-timeout", opts.WaitTimeout == 0, "whole milliseconds from 1ms to " + failover.MaxWaitTimeout.String()},
	} {
		if z.zero {
			return exitcode.Usagef("--%s 0 is out of range; use %s", z.name, z.use)
		}
	}
	return nil
}

func runFailover(opts *failoverOptions) error {
	f := opts.f
	if _, err := f.Format(); err != nil {
		return err
	}
	if err := opts.zeroes(); err != nil {
		return err
	}
	if opts.Changed["wait-timeout"] && opts.Wait == 0 {
		return exitcode.Usagef("--wait-timeout goes with --wait N: without it no call waits")
	}
	params, err := opts.params()
	if err != nil {
		return err
	}
	mode, err := fault.ParseFailoverMode(opts.Mode)
	if err != nil {
		return err
	}
	fo := failover.Options{
		URL: f.RedisOptions().URL, AllowRemote: opts.AllowRemote, Sandboxes: f.Sandboxes,
		Params: params, Rate: opts.Rate, Clients: opts.Clients, Trials: opts.Trials,
		Before: opts.Before, After: opts.After, Mode: mode,
		Wait: opts.Wait, WaitTimeout: opts.WaitTimeout, MaxExtra: opts.MaxExtra,
	}
	// where the failover may go is decided here, from the URL, before
	// anything dials it
	if err := fo.Validate(); err != nil {
		return err
	}
	em, err := f.newEmitter(opts.Out)
	if err != nil {
		return err
	}
	defer em.close()

	conn, err := f.Redis(opts.ctx)
	if err != nil {
		return err
	}
	fo.Server = &conn.Server
	if f.IO.ErrTTY {
		variants := "without WAIT"
		if fo.Wait > 0 {
			variants = fmt.Sprintf("without WAIT and with WAIT %d", fo.Wait)
		}
		fmt.Fprintf(f.IO.ErrOut, "failover: %d trials %s; a node may run an election only 4 x cluster-node-timeout after its last, so this takes a while\n", fo.Trials, variants)
	}
	res, err := failover.Run(opts.ctx, conn.Client, fo)
	if err != nil {
		// what was measured until the run stopped is still the user's
		if failoverMeasured(res) {
			_ = em.emit(&res)
		}
		return err
	}
	if err := em.emit(&res); err != nil {
		return err
	}
	if !res.Pass() {
		var failed []string
		for _, c := range res.Checks {
			if c.Counts() && !c.Pass {
				failed = append(failed, c.ID+": "+c.Message)
			}
		}
		return exitcode.Failf("failover: %s", strings.Join(failed, "; "))
	}
	return nil
}

// failoverMeasured reports whether res holds any trial.
func failoverMeasured(res failover.Result) bool {
	for _, v := range res.Variants {
		if len(v.Trials) > 0 {
			return true
		}
	}
	return false
}
