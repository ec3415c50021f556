package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/race"
)

type raceOptions struct {
	f             *Factory
	ctx           context.Context
	Concurrency   int
	Limit         int64
	Trials        int
	Strategies    []string // nil: all built-in strategies
	ScriptFile    string
	ScriptArgs    string
	ArgsSet       bool
	Expect        string
	ExpectSet     bool
	Reply         string
	ReplySet      bool
	WatchAttempts int
	Out           string
}

func newRaceCmd(f *Factory, run func(*raceOptions) error) *cobra.Command {
	opts := &raceOptions{f: f}
	var strategies []string
	c := &cobra.Command{
		Use:   "race",
		Short: "Prove that a limiter does not over-admit when requests arrive at once",
		Long: `Race N goroutines against one fresh key with room for --limit requests. Every
goroutine holds its own ready connection and waits at a barrier that opens
once, so the requests really overlap. A correct limiter admits exactly the
limit; the classic GET, decide in the application, SET admits nearly all N.

Strategies (--strategies, default all):
  naive   GET, decide, SET used+1: the classic race
  multi   GET, decide, MULTI/SET/EXEC: still racy, the decision is outside
  watch   WATCH, GET, decide, MULTI/SET/EXEC, retried on conflict at most
          --watch-attempts times (then it gives up): correct but costly
  incr    INCR, then compare with the limit: correct for a plain counter
  script  the built-in token bucket Lua script, capacity = limit; every
          call passes the same now_ms, so nothing refills during a trial

--script FILE adds your own limiter script. It is called with KEYS[1] = the
trial's key and ARGV from --args, split at spaces, where {limit} becomes the
limit, {uuid} a fresh UUID for every call (for sliding-window request ids)
and {now_ms} the client's Unix time in ms; any other {name} is an error. The
first element of the reply is the decision: 1 allowed, 0 refused; --reply
FIELDS says what each element means otherwise (allowed, remaining, retry,
reset, ignore; retry:s and reset:s for seconds; numbers may be strings), e.g.
--reply allowed,remaining,retry:s,reset:s for go-redis/redis_rate, whose
allowed is the count admitted. Keep the script's state in KEYS[1]: only that
key is deleted afterwards. With --strategies none only your script is raced.
The file must be a regular file of at most 1 MiB and not empty. 'ratelimit
scripts --export DIR' writes the embedded scripts; their ARGV are in each
file's header.

A script that refills during a trial (a token bucket reading the server's
TIME, a sliding window with a short window) rightly admits more than --limit
when a trial takes long: 1,000 goroutines on a busy machine can take 600 ms,
in which a bucket of 10 at 5/s refills 3. Judge such a script by the model
it implements with --expect MODEL (the syntax of load --expect, e.g.
token-bucket:burst=10,rate=5/s, sliding-window:limit=10,window=1s,
gcra:rate=5/s,burst=10): each trial's admissions must lie between the
model's with every call decided at its send and the most it admits with
every call decided somewhere between its send and its answer. Over- and
under-admission both fail. A trial that refills little leaves little room:
the model of a bucket that refills less than a token per trial admits
exactly its capacity.

Each strategy and trial uses its own key race:{<run id>}:<strategy>:<trial>
(one hash tag per run, so on a cluster all keys live in one slot); every key
is deleted afterwards, also after Ctrl-C or an error, and nothing else on
the server is touched. As a safety net every write sets a TTL of at most an
hour, so the keys of a killed run expire (the script strategy's bucket
refills fully in just under an hour, and the script sets its TTL to that).

Exit 1 when a strategy that must be atomic (watch, incr, script, --script)
admitted more than the limit in any trial (over-admission), or when one that
must be exact (incr, script, --script) admitted fewer than the limit (or
--concurrency, if lower) on its fresh key (under-admission: a script that
refuses everything, or reads the wrong ARGV, fails here); with --expect,
when --script admitted outside the model's bounds in any trial (the failure
names both and the trial's duration). watch may admit
fewer under contention, as a request gives up after --watch-attempts
conflicts: that is a note, not a failure. When naive did not over-admit, a
note says the race was not reproduced at this concurrency (not a failure).
Exit 2 when the server's maxclients or the open-file limit cannot take
--concurrency connections (the message says how to raise them), when
--script is empty, not a regular file or over 1 MiB, or fails on every
call. Exit 3 when Redis cannot be reached or stops answering during the run
(connection refused or reset, timeouts), when its ACL refuses a command or
key (the message names the rule to add), or when it refuses every call of a
strategy (maxmemory, a replica).

Minimal ACL for the default strategies (what they, their clean-up and the
built-in Lua script send; on a cluster add ` + strings.Join(race.ClusterACL, " ") + `, and for
--script what your script calls; +config|get is optional):
  ` + strings.Join(race.ACL(), " ") + `

JSON (-o json, or --out FILE for 'ratelimit report'; docs/json.md): kind
"race", version 2, the envelope (tool, started_at, server, command),
run_id, key_pattern, node (cluster), concurrency, limit, expect, trials,
watch_attempts, race_reproduced, checks (one per strategy: id, pass,
message), verdict ("pass" or "fail"), notes, and strategies: name, label,
atomic_expected, script_file, and per trial allowed, over_limit,
final_value (the counter, or tokens taken; null for --script),
lost_updates, retries, give_ups, errors, trial_p50_ms, trial_p99_ms,
wall_ms, expected (with --expect: model, description, observed, of, low,
high, unknown, span_ms, pass); across trials p50_ms, p99_ms, allowed_min,
allowed_median, allowed_max, error_sample. --out is checked before the run (a path that
cannot be written is exit 2 at once).

Other outputs: -o markdown (GitHub-flavoured tables, e.g. >> "$GITHUB_STEP_SUMMARY")
and -o junit (one testcase per strategy; an atomic one that over-admitted is
a <failure>).`,
		Example: `  # the default race on the embedded server, whatever else runs here
  ratelimit race --redis embedded

  # on a real server: the URL 'ratelimit sandbox' printed
  ratelimit race --redis redis://127.0.0.1:PORT

  # 10000 goroutines as a CI gate with a JSON report, against a sandbox
  # started with room for them:
  #   ratelimit sandbox --server-arg=--maxclients --server-arg=20000
  # (about 2 minutes on 2 cores; 10000 connections need --redis-timeout 10s)
  ratelimit race --redis redis://127.0.0.1:PORT --concurrency 10000 --limit 100 --redis-timeout 10s -o json --out race.json

  # the embedded sliding-window script (ARGV: window ms, limit, request id),
  # written by 'ratelimit scripts --export .'
  ratelimit race --script sliding_window.lua --args "60000 {limit} {uuid}"

  # the embedded token bucket as if it were yours (ARGV: capacity, tokens per
  # second): it refills during a slow trial, so judge it by its model
  ratelimit race --strategies none --script token_bucket.lua --args "{limit} 5" --expect token-bucket:burst=10,rate=5/s

  # --reply names each reply element (go-redis/redis_rate's GCRA answers
  # strings of seconds: --reply allowed,remaining,retry:s,reset:s)
  ratelimit race --strategies none --script gcra.lua --args "5 {limit}" --reply allowed,remaining,retry,reset --expect gcra:rate=5/s,burst=10

  # only the fixed-window script (ARGV: window ms, limit), against naive
  ratelimit race --strategies naive --script fixed_window.lua --args "60000 {limit}"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.ctx = c.Context()
			if c.Flags().Changed("strategies") {
				opts.Strategies = append([]string{}, strategies...)
				if len(strategies) == 1 && strings.EqualFold(strings.TrimSpace(strategies[0]), "none") {
					opts.Strategies = []string{}
				}
			}
			opts.ArgsSet = c.Flags().Changed("args")
			opts.ExpectSet, opts.ReplySet = c.Flags().Changed("expect"), c.Flags().Changed("reply")
			if run != nil {
				return run(opts)
			}
			return runRace(opts)
		},
	}
	fl := c.Flags()
	fl.IntVar(&opts.Concurrency, "concurrency", race.DefaultConcurrency, "goroutines behind the barrier, each with its own connection")
	fl.Int64Var(&opts.Limit, "limit", race.DefaultLimit, "requests the limiter may admit per trial")
	fl.IntVar(&opts.Trials, "trials", race.DefaultTrials, "trials per strategy, each on a fresh key")
	fl.StringSliceVar(&strategies, "strategies", race.Names(), "strategies to race: naive, multi, watch, incr, script (none: only --script)")
	fl.StringVar(&opts.ScriptFile, "script", "", "your own limiter Lua script to race as well (KEYS[1] = the key, reply {allowed, ...})")
	fl.StringVar(&opts.ScriptArgs, "args", "", "ARGV for --script, split at spaces; placeholders {limit}, {uuid}, {now_ms}")
	fl.StringVar(&opts.Expect, "expect", "", "judge --script by the model it implements over each trial as it ran, e.g. token-bucket:burst=10,rate=5/s (as load --expect)")
	fl.StringVar(&opts.Reply, "reply", "", "what each element of --script's reply means, in order: allowed, remaining, retry, reset, ignore (retry:s, reset:ms; default: the first element is allowed)")
	fl.IntVar(&opts.WatchAttempts, "watch-attempts", race.DefaultWatchAttempts, "attempts of one watch request before it gives up")
	fl.StringVar(&opts.Out, "out", "", "also save the JSON document to FILE (for 'ratelimit report')")
	return c
}

func runRace(opts *raceOptions) error {
	f := opts.f
	if _, err := f.Format(); err != nil {
		return err
	}
	if opts.WatchAttempts <= 0 {
		return exitcode.Usagef("--watch-attempts must be at least 1, got %d", opts.WatchAttempts)
	}
	ro := race.Options{
		Concurrency:   opts.Concurrency,
		Limit:         opts.Limit,
		Trials:        opts.Trials,
		Strategies:    opts.Strategies,
		WatchAttempts: opts.WatchAttempts,
	}
	if opts.ScriptFile != "" {
		src, err := eval.ReadScript(opts.ScriptFile)
		if err != nil {
			return err
		}
		args, err := race.ParseArgs(opts.ScriptArgs)
		if err != nil {
			return err
		}
		ro.User = &race.UserScript{Path: opts.ScriptFile, Source: src, Args: args}
		if opts.ExpectSet {
			if ro.User.Expect, err = judge.ParseModel(opts.Expect); err != nil {
				return err
			}
		}
		if opts.ReplySet {
			if ro.User.Reply, err = judge.ParseReply(opts.Reply); err != nil {
				return err
			}
		}
	} else {
		for _, fl := range []struct {
			set  bool
			name string
		}{{opts.ArgsSet, "args"}, {opts.ExpectSet, "expect"}, {opts.ReplySet, "reply"}} {
			if fl.set {
				return exitcode.Usagef("--%s needs --script FILE (the built-in strategies are judged against --limit)", fl.name)
			}
		}
	}
	if err := ro.Validate(); err != nil {
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
	lim, err := race.EnsureFDLimit(race.FDsNeeded(opts.Concurrency, conn.Server.Embedded))
	if err != nil {
		return err
	}
	if lim.Raised() {
		fmt.Fprintf(f.IO.ErrOut, "notice: raised the open-file limit from %d to %d for %d connections\n", lim.Before, lim.After, opts.Concurrency)
	}
	client := conn.NewClient(opts.Concurrency + 8)
	defer client.Close()

	finish := func() {}
	if f.IO.ErrTTY {
		ro.Progress, finish = raceProgress(opts.ctx, f, ro)
	}
	res, err := race.Run(opts.ctx, client, ro)
	finish()
	if err != nil {
		return err
	}
	res.Server = &conn.Server
	if err := em.emit(&res); err != nil {
		return err
	}
	if !res.Pass() {
		return exitcode.Failf("%s", strings.Join(res.Failures(), "; "))
	}
	return nil
}

// raceProgress draws a bar over the strategy trials on ErrOut; finish
// removes it, so the report that follows starts on a clean line.
func raceProgress(ctx context.Context, f *Factory, ro race.Options) (progress func(done, total int), finish func()) {
	names, _ := race.ParseStrategies(ro.Strategies)
	total := len(names) * ro.Trials
	if ro.User != nil {
		total += ro.Trials
	}
	p := mpb.NewWithContext(ctx, mpb.WithConsoleWriter(f.ProgressWriter()), mpb.WithWidth(40))
	noun := "strategy trials"
	if total == 1 {
		noun = "strategy trial"
	}
	bar := p.AddBar(int64(total),
		mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name("race "), decor.CountersNoUnit("%d/%d "+noun+" ")),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO)),
	)
	progress = func(done, _ int) { bar.SetCurrent(int64(done)) }
	finish = func() {
		if !bar.Completed() {
			bar.Abort(true)
		}
		p.Wait()
	}
	return progress, finish
}
