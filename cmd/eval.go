package cmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
)

type evalOptions struct {
	f   *Factory
	ctx context.Context

	Args         []string // KEY, or KEY [KEY...] , ARG [ARG...] with --script
	Algo         string
	Capacity     int64
	Rate         rate.Rate
	Cost         int64
	Limit        int64
	Window       time.Duration
	Burst        int64
	Count        int
	Interval     time.Duration
	Identity     string
	HashIdentity bool
	Script       string
	Function     bool
	AllowNoTTL   bool
	Force        bool
	Simulate     bool
	Arrivals     rate.Rate
	For          time.Duration
	Out          string
	Expect       string
	Reply        string

	// Changed holds the names of the flags given on the command line.
	Changed map[string]bool
	// FlagLike lists the words after -- that spell one of the command's
	// own flags (-n, --interval): they go to the script, not to eval.
	FlagLike []string
}

func newEvalCmd(f *Factory, run func(*evalOptions) error) *cobra.Command {
	opts := &evalOptions{f: f}
	c := &cobra.Command{
		Use:   "eval [KEY | --script FILE KEY [KEY...] , ARG [ARG...]]",
		Short: "Run a limiter Lua script against a key, call after call",
		Long: `Run one of the embedded limiter scripts (or your own) against a key and show
what each call answers: allowed or not, remaining, how long to wait, the key's
TTL and the latency. Scripts run with EVALSHA and fall back to EVAL on NOSCRIPT,
so a SCRIPT FLUSH, restart or failover between calls is harmless.

What eval checks: that every reply reads as a limiter decision (reply shape),
that no key is left without a TTL and, with --expect, that every decision is
the model's; not that the script limits when calls arrive at once. When every call was allowed it says so: 'ratelimit race
--script FILE' tests limiting under concurrency.

Algorithms and their flags:
  token-bucket    --capacity N --rate R          (new key starts full)
  sliding-window  --limit N --window D           (log of admitted requests)
  fixed-window    --limit N --window D           (counter, TTL set when new)
  gcra            --rate R --burst N             (one stored arrival time)
All take --cost N (default 1). Rates read 5, 5/s, 300/m, 1000/h or 5/100ms.

The limiter scripts write only keys that are missing or their own: a key of
another type, or one without the script's fields or TTL (a user's session
hash, a sorted set of someone else's), is refused before anything is written
(exit 2). --force lets the script replace it.

--script FILE takes redis-cli --eval syntax: keys, a lone comma, arguments.
Arguments may hold {uuid} (a fresh UUID per call), {now_ms} (the client's
Unix time in ms) and {n} (the call's number), as race --args does.
Replies shaped like a limiter's ({allowed 0/1, remaining, retry ms, reset ms},
of which the first two or three) get labelled columns; --reply FIELDS says
what each element means otherwise, in order, from allowed, remaining, retry,
reset and ignore, retry and reset in ms or with :s in seconds, numbers given
as strings accepted (--reply allowed,remaining,retry:s,reset:s reads
go-redis/redis_rate). A negative remaining fails the reply shape. A key the
script left without a TTL fails the check (exit 1; --allow-no-ttl accepts
it).

--expect MODEL (the syntax of load --expect: token-bucket:burst=10,rate=5/s,
sliding-window:limit=100,window=1m, fixed-window:..., gcra:rate=5/s,burst=10)
compares each call's decision with the model's at that call's time
(somewhere between its send and its answer); the first call it decides
otherwise fails the run (exit 1): "call 11 allowed; the model refuses it: 10
admitted in 3.0 ms by token bucket 10 + 5/s". Without it the decisions are
shown, not judged, and the verdict says so. Put -- before the keys when an argument starts
with a dash: every word after -- goes to the script, flags included, so give
eval's own flags (-n, --interval, -o) before it; a word after -- that spells
one of them gets a warning on stderr. A script error at run time is
exit 1; one that does not compile is exit 2. A script still running when
--redis-timeout passes is reported (exit 1) with how to stop it (SCRIPT KILL
or FUNCTION KILL); it is never killed on a server this process did not start.

Calls are bounded: -n at most 100,000 (every call is kept and shown),
--interval at most 1h, and at most 24h of pauses in all; above them is exit 2
naming the ceiling.

--simulate runs the real script on the server in virtual time (the scripts'
optional now_ms argument) for a constant arrival stream and prints how many
calls would be admitted: the prediction a load test is judged against. It
covers at most 24h of virtual time and 1,000,000 arrivals.

The embedded scripts are listed, printed and exported by 'ratelimit scripts'.

Output (-o): text, json (save it for 'ratelimit report', or --out FILE
whatever -o is; kinds "eval" and "simulate", version 2, see docs/json.md),
or markdown (GitHub-flavoured tables, e.g. >> "$GITHUB_STEP_SUMMARY").`,
		Example: `  # 7 quick calls against a bucket of 5 refilled at 1 token/s
  ratelimit eval rl:{user42}:tb --algo token-bucket --capacity 5 --rate 1/s -n 7

  # a sliding window of 3 per 10s for one API key, hashed out of the key name
  ratelimit eval --identity "$API_KEY" --hash-identity --algo sliding-window --limit 3 --window 10s -n 5

  # your own script, as with redis-cli --eval, twice a second
  ratelimit eval --script bucket.lua rl:{user42}:b , 10 5 1 -n 6 --interval 500ms

  # your own token bucket judged call by call against the model it implements
  ratelimit eval --script bucket.lua rl:{user42}:b , 10 5 1 -n 13 --expect token-bucket:burst=10,rate=5/s

  # go-redis/redis_rate's GCRA reply: retry and reset are strings of seconds
  ratelimit eval --script gcra.lua rl:{user42}:g , 5 5 1 1 -n 7 --reply allowed,remaining,retry:s,reset:s

  # a sliding-window script of your own, a fresh request id and time on each call
  ratelimit eval --script sw.lua rl:{user42}:sw , 60000 100 {uuid} {now_ms} -n 5

  # the same through Redis Functions (FUNCTION LOAD + FCALL; Redis 7+; an existing
  # library of the same name with other code is never replaced)
  ratelimit eval --script bucket.lua rl:{user42}:b , 10 5 1 --function

  # predict admissions: 20 arrivals/s for 30s against a bucket of 10 at 5/s
  ratelimit eval --simulate --arrivals 20/s --duration 30s --algo token-bucket --capacity 10 --rate 5/s -o json`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.ctx = c.Context()
			opts.Args = args
			opts.Changed = map[string]bool{}
			c.Flags().Visit(func(fl *pflag.Flag) { opts.Changed[fl.Name] = true })
			if at := c.ArgsLenAtDash(); at >= 0 {
				opts.FlagLike = flagLike(c, args[at:])
			}
			if run != nil {
				return run(opts)
			}
			return runEval(opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Algo, "algo", string(limiter.TokenBucket), "algorithm: token-bucket, sliding-window, fixed-window or gcra")
	fl.Int64Var(&opts.Capacity, "capacity", 0, "token-bucket: tokens the bucket holds")
	fl.Var(&opts.Rate, "rate", "the limiter's own rate, not an arrival rate: token-bucket refill, gcra steady rate (5, 5/s, 300/m, 1000/h); --simulate's arrivals are --arrivals")
	fl.Int64Var(&opts.Cost, "cost", 1, "units each call takes")
	fl.Int64Var(&opts.Limit, "limit", 0, "sliding-window, fixed-window: calls admitted per window")
	fl.DurationVar(&opts.Window, "window", 0, "sliding-window, fixed-window: window length (10s, 1m)")
	fl.Int64Var(&opts.Burst, "burst", 0, "gcra: calls that may pass at once")
	fl.IntVarP(&opts.Count, "count", "n", 1, "number of calls")
	fl.DurationVar(&opts.Interval, "interval", 0, "pause between calls (e.g. 200ms)")
	fl.StringVar(&opts.Identity, "identity", "", "build the key as rl:{ID}:<algo> instead of giving KEY")
	fl.BoolVar(&opts.HashIdentity, "hash-identity", false, "replace the identity with a short SHA-256 prefix, so API keys never appear in key names")
	fl.StringVar(&opts.Script, "script", "", "run your own Lua FILE; keys and arguments follow: KEY [KEY...] , ARG [ARG...]")
	fl.BoolVar(&opts.AllowNoTTL, "allow-no-ttl", false, "--script: accept keys the script leaves without a TTL (by default they fail the check, exit 1)")
	fl.BoolVar(&opts.Function, "function", false, "load the script as a Redis Functions library and call it with FCALL (Redis 7+)")
	fl.BoolVar(&opts.Force, "force", false, "let the limiter script replace a key it did not write (another type, other fields, no TTL); without it such a key is refused")
	fl.BoolVar(&opts.Simulate, "simulate", false, "predict admissions for --arrivals over --duration in virtual time (no KEY)")
	fl.Var(&opts.Arrivals, "arrivals", "with --simulate: constant arrival rate, e.g. 20/s")
	fl.DurationVar(&opts.For, "duration", 0, "with --simulate: virtual duration, e.g. 30s (--for is an alias)")
	fl.StringVar(&opts.Out, "out", "", "also write the JSON document to FILE (for 'ratelimit report'); checked before anything runs")
	fl.StringVar(&opts.Expect, "expect", "", "compare each call's decision with the model's at that call's time, e.g. token-bucket:burst=10,rate=5/s (as load --expect)")
	fl.StringVar(&opts.Reply, "reply", "", "--script: what each reply element means, in order: allowed, remaining, retry, reset, ignore (retry:s, reset:ms; default allowed,remaining,retry,reset)")
	aliasFlag(fl, "for", "duration")
	return c
}

// check validates flag combinations; every problem is exit 2.
func (opts *evalOptions) check() (limiter.Algo, error) {
	set := opts.Changed
	conflict := func(mode string, names ...string) error {
		for _, n := range names {
			if set[n] {
				return exitcode.Usagef("--%s does not apply with %s", n, mode)
			}
		}
		return nil
	}
	if !opts.Simulate {
		if err := conflict("calls against a key (it needs --simulate)", "arrivals", "duration"); err != nil {
			return "", err
		}
	}
	if opts.Script == "" && set["reply"] {
		return "", exitcode.Usagef("--reply goes with --script: the embedded scripts' replies are known")
	}
	if opts.Script != "" {
		if err := conflict("--script (the script's arguments follow the comma)", "algo", "capacity", "rate", "cost", "limit", "window", "burst", "identity", "hash-identity", "simulate", "force"); err != nil {
			return "", err
		}
		if opts.Count < 1 {
			return "", exitcode.Usagef("--count %d must be at least 1", opts.Count)
		}
		return "", eval.CheckCalls(opts.Count, opts.Interval)
	}
	if set["allow-no-ttl"] {
		return "", exitcode.Usagef("--allow-no-ttl goes with --script: the embedded scripts set a TTL on every write")
	}
	algo, err := limiter.ParseAlgo(opts.Algo)
	if err != nil {
		return "", err
	}
	if err := checkAlgoFlags(algo, set); err != nil {
		return "", err
	}
	if opts.Cost < 1 {
		return "", exitcode.Usagef("--cost %d must be at least 1", opts.Cost)
	}
	if opts.Simulate {
		if err := conflict("--simulate (it uses a temporary key and virtual time)", "count", "interval", "identity", "hash-identity", "function", "force", "expect"); err != nil {
			return "", err
		}
		if len(opts.Args) > 0 {
			return "", exitcode.Usagef("--simulate uses a temporary key of its own; drop %q", opts.Args[0])
		}
		if !set["arrivals"] || !set["duration"] {
			return "", exitcode.Usagef("--simulate needs --arrivals RATE and --duration D, e.g. --arrivals 20/s --duration 30s")
		}
		return algo, nil
	}
	if len(opts.Args) > 1 {
		return "", exitcode.Usagef("eval takes one KEY, got %d arguments; for your own script use --script FILE KEY [KEY...] , ARG [ARG...]", len(opts.Args))
	}
	if opts.Count < 1 {
		return "", exitcode.Usagef("--count %d must be at least 1", opts.Count)
	}
	return algo, eval.CheckCalls(opts.Count, opts.Interval)
}

func (opts *evalOptions) params(algo limiter.Algo) limiter.Params {
	return limiter.Params{Algo: algo, Capacity: opts.Capacity, Rate: opts.Rate, Cost: opts.Cost,
		Limit: opts.Limit, Window: opts.Window, Burst: opts.Burst, Force: opts.Force}
}

func runEval(opts *evalOptions) error {
	f := opts.f
	if _, err := f.Format(); err != nil {
		return err
	}
	algo, err := opts.check()
	if err != nil {
		return err
	}
	if len(opts.FlagLike) > 0 {
		verb := "go"
		if len(opts.FlagLike) == 1 {
			verb = "goes"
		}
		fmt.Fprintf(f.IO.ErrOut, "eval: warning: %s after -- %s to the script as ARGV, not to eval; put eval's flags before --\n", quoteAll(opts.FlagLike), verb)
	}
	// Check all input before connecting, so bad input is exit 2 even when
	// no Redis is around.
	var src string
	if opts.Script == "" {
		if _, err := limiter.NewLimiter(opts.params(algo)); err != nil {
			return flagNamed(err)
		}
	} else {
		if _, _, err := eval.ParseEvalArgs(opts.Args); err != nil {
			return err
		}
		if src, err = eval.ReadScript(opts.Script); err != nil {
			return err
		}
	}
	if opts.Simulate {
		if _, err := eval.ArrivalTimes(opts.Arrivals, opts.For); err != nil {
			return err
		}
	}
	eo := eval.Options{
		Params: opts.params(algo), Identity: opts.Identity, HashIdentity: opts.HashIdentity,
		Count: opts.Count, Interval: opts.Interval, Function: opts.Function, AllowNoTTL: opts.AllowNoTTL,
	}
	if opts.Changed["expect"] {
		if eo.Expect, err = judge.ParseModel(opts.Expect); err != nil {
			return err
		}
	}
	if opts.Changed["reply"] {
		if eo.Reply, err = judge.ParseReply(opts.Reply); err != nil {
			return err
		}
	}
	if opts.Script != "" {
		eo.ScriptFile, eo.ScriptWords, eo.ScriptSource = opts.Script, opts.Args, src
	} else if !opts.Simulate {
		if len(opts.Args) == 1 {
			eo.Key = opts.Args[0]
		}
		if _, err := eval.ResolveKey(eo, algo); err != nil {
			return err
		}
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
	if opts.Simulate {
		res, err := eval.Simulate(opts.ctx, conn.Client, eval.SimOptions{
			Params: opts.params(algo), Arrivals: opts.Arrivals, For: opts.For, Server: conn.Server,
		})
		if err != nil {
			return fmt.Errorf("eval --simulate: %w", err)
		}
		return em.emit(&res)
	}
	eo.Server = conn.Server
	// Only the embedded server is this process's own: a sandbox or any
	// server given with --redis may serve others, so a runaway script
	// there is reported, never killed.
	eo.OwnServer = conn.Server.Embedded
	res, err := eval.Run(opts.ctx, conn.Client, eo)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if err := em.emit(&res); err != nil {
		return err
	}
	if !res.Pass() {
		return exitcode.Failf("%s", strings.Join(res.Failures(), "; "))
	}
	return nil
}

// flagLike returns the words that spell one of c's flags (its own or
// inherited): --name, --name=value, -x or -xVALUE for a shorthand x.
// After -- they are arguments; a user who wrote them there most likely
// meant the flag.
func flagLike(c *cobra.Command, words []string) []string {
	var out []string
	for _, w := range words {
		switch {
		case strings.HasPrefix(w, "--") && len(w) > 2:
			name, _, _ := strings.Cut(w[2:], "=")
			if c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil {
				out = append(out, w)
			}
		case strings.HasPrefix(w, "-") && len(w) > 1 && w[1] != '-':
			sh := w[1:2]
			if c.Flags().ShorthandLookup(sh) != nil || c.InheritedFlags().ShorthandLookup(sh) != nil {
				out = append(out, w)
			}
		}
	}
	return out
}

func quoteAll(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = strconv.Quote(w)
	}
	return strings.Join(q, " ")
}
