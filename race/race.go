// Package race reproduces the read-decide-write race of hand-rolled rate
// limiters and checks that atomic ones do not have it. N goroutines, each
// holding its own ready connection, wait at a barrier; the barrier opens
// once, and every goroutine asks the strategy under test for one request
// against a fresh key with room for Limit requests. A correct limiter admits
// exactly Limit; the classic GET, decide, SET admits nearly all N.
//
// # Connections
//
// go-redis's default pool (10 per GOMAXPROCS) would serialise the race away,
// so the caller passes a client whose pool holds at least Concurrency
// connections. Warming such a pool with N concurrent PINGs does not
// guarantee N ready connections: a PING that finishes early returns its
// connection to the pool and a later one reuses it, so fewer than N may be
// dialled, and at the barrier goroutines would queue for connections or dial
// inside the race. Instead every goroutine takes a dedicated connection
// (redis.Client.Conn) from the client of the node that owns the run's hash
// slot (for a cluster client, ClusterClient.MasterForKey; all keys of a run
// share one hash tag), PINGs through it, signals ready, and keeps that
// connection until its call is done. When the barrier opens, N goroutines
// hold N distinct, handshaken connections on the right node. Dialling during
// the warm-up is limited to a few dozen at a time, so a burst of 10000
// connections does not overflow the server's listen backlog.
//
// # Keys
//
// Strategy s in trial t uses the key race:{<run id>}:<s>:<t>, fresh for that
// trial. Every write also sets a TTL of at most an hour as a safety net
// (the counters get KeyTTL; the token bucket script sets its own, the time
// until the bucket is full again, which the race's refill rate keeps under
// KeyTTL), and every key of the run is deleted after its trial and again
// when Run returns, including after cancellation (Ctrl-C) or an error.
// Nothing else is read or written.
//
// # Unreachable servers
//
// When the server cannot be reached or stops answering during a run
// (connection refused or reset, end of file, an i/o or pool timeout), Run
// returns an exit-3 error naming its address instead of a result: the
// trial then says nothing about the limiter. Exit 1 is left to
// over-admission.
//
// # User scripts
//
// A user script (--script FILE) is called as EVALSHA with KEYS[1] = the
// trial's key and ARGV built from Args, where {limit} is replaced by the
// limit, {uuid} by a fresh random UUID for every call and {now_ms} by the
// client's Unix time in milliseconds at the call. The first element of the
// reply (or the reply itself, if it is not an array) is the decision: 1 or
// true is allowed, 0, false or nil is refused; UserScript.Reply (--reply)
// reads other shapes (judge.Reply).
//
// # Verdict
//
// Strategies that must be atomic (watch, incr, script, a user script) fail
// when they admit more than Limit in a trial; those that must be exact
// (incr, script, a user script; see ExactExpected) also fail when they admit
// fewer than min(Limit, Concurrency) on their fresh key, so a script that
// refuses everything is not a pass. A user script given a model
// (UserScript.Expect, --expect) is judged by it instead: each call's send
// and answer are kept, measured from the barrier's opening, and judge.Trial
// bounds the trial's admissions between the model's with every call decided
// at its send and the most it admits with every call decided within its
// span, so a script that refills during a slow trial passes and one that
// admits a token too many or too few fails. A NOPERM reply of the server's
// ACL is an exit-3 error naming the rule to add.
package race

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// Defaults of the command's flags.
const (
	DefaultConcurrency   = 200
	DefaultLimit         = 10
	DefaultTrials        = 3
	DefaultWatchAttempts = 10
)

// Bounds on the options.
const (
	maxLimit  = 1_000_000_000 // the token bucket's largest capacity
	maxTrials = 1000
	maxConc   = 1_000_000
)

// KeyTTL is the safety-net expiry every write sets, in case the process is
// killed before it can delete its keys.
const KeyTTL = time.Hour

// Options configure a run.
type Options struct {
	// Concurrency is the number of goroutines behind the barrier.
	Concurrency int
	// Limit is the number of requests the limiter may admit per trial.
	Limit int64
	// Trials is how often each strategy is raced, each time on a fresh key.
	Trials int
	// Strategies are built-in strategy names (see Names); nil means all.
	// An explicit empty slice runs only the user script.
	Strategies []string
	// User is the user's own limiter script (--script), raced after the
	// built-in strategies; nil for none.
	User *UserScript
	// WatchAttempts bounds the WATCH/MULTI/EXEC attempts of one request of
	// the watch strategy; 0 means DefaultWatchAttempts.
	WatchAttempts int
	// RunID names the run's keys; empty means a fresh random id.
	RunID string
	// Progress, when set, is called after each strategy's trial with the
	// number of strategy trials done and the total.
	Progress func(done, total int)
	// WarmParallel bounds concurrent connection set-ups during the warm-up;
	// 0 means 64.
	WarmParallel int
}

// Validate checks the options a user gives; errors are exit-2 errors.
func (o Options) Validate() error {
	if o.Concurrency <= 0 || o.Concurrency > maxConc {
		return exitcode.Usagef("--concurrency must be from 1 to %d, got %d", maxConc, o.Concurrency)
	}
	if o.Limit <= 0 || o.Limit > maxLimit {
		return exitcode.Usagef("--limit must be from 1 to %d, got %d", maxLimit, o.Limit)
	}
	if o.Trials <= 0 || o.Trials > maxTrials {
		return exitcode.Usagef("--trials must be from 1 to %d, got %d", maxTrials, o.Trials)
	}
	if o.WatchAttempts < 0 {
		return exitcode.Usagef("--watch-attempts must be at least 1, got %d", o.WatchAttempts)
	}
	names, err := ParseStrategies(o.Strategies)
	if err != nil {
		return err
	}
	// --strategies ' ' or ',' name nothing, just as --strategies none.
	if len(names) == 0 && o.User == nil {
		return exitcode.Usagef("no strategy to race; pass --strategies with one or more of %s, or --script FILE", strings.Join(Names(), ", "))
	}
	return nil
}

// ParseStrategies checks and de-duplicates built-in strategy names, keeping
// their order; nil means all of them.
func ParseStrategies(names []string) ([]string, error) {
	if names == nil {
		return Names(), nil
	}
	var out []string
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		if _, ok := builtins[n]; !ok {
			return nil, exitcode.Usagef("unknown strategy %q; use %s (or --script FILE for your own)", n, strings.Join(Names(), ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// ACL returns the least an ACL user needs to race the built-in
// strategies: the commands the strategies and their clean-up send, what
// the token bucket script calls (eval's Limiter.ACL, EVAL included as the
// fallback when the script cache was flushed) and the run's keys. On a
// cluster the client also needs ClusterACL to find the node of the run's
// slot. INFO tells a cluster from a single server when connecting and
// gives the maxclients check its numbers; CONFIG GET is optional. A user
// script needs what it calls as well.
func ACL() []string {
	rules := []string{"+ping", "+info", "+get", "+set", "+multi", "+exec", "+watch", "+unwatch", "+incr", "+pexpire", "+del",
		"+script|load", "+hget"}
	tb := &tokenBucket{limit: 1}
	if l, err := tb.newLimiter(); err == nil {
		for _, r := range strings.Fields(l.ACL()) {
			if !slices.Contains(rules, r) {
				rules = append(rules, r)
			}
		}
	}
	return append(rules, "~race:*")
}

// ClusterACL is what a cluster client needs on top of ACL.
var ClusterACL = []string{"+cluster|slots"}

// Key returns the key of strategy in trial (1-based) of run id.
func Key(runID, strategy string, trial int) string {
	return fmt.Sprintf("race:{%s}:%s:%d", runID, strategy, trial)
}

// NewRunID returns a short random run id.
func NewRunID() string {
	return strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
}

// Run races the strategies and returns the result. client's pool must hold
// at least Concurrency connections (redisconn.Conn.NewClient(n)). Result.Server
// is left for the caller to fill. Keys of the run are deleted before Run
// returns, whatever happens.
func Run(ctx context.Context, client redis.UniversalClient, opts Options) (res Result, err error) {
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	names, _ := ParseStrategies(opts.Strategies)
	if opts.WatchAttempts == 0 {
		opts.WatchAttempts = DefaultWatchAttempts
	}
	if opts.WarmParallel <= 0 {
		opts.WarmParallel = 64
	}
	if opts.RunID == "" {
		opts.RunID = NewRunID()
	}
	strats := make([]strategy, 0, len(names)+1)
	for _, n := range names {
		strats = append(strats, builtins[n](opts))
	}
	if opts.User != nil {
		strats = append(strats, newUserStrategy(opts.User, opts.Limit))
	}

	var keys []string
	for t := 1; t <= opts.Trials; t++ {
		for _, s := range strats {
			keys = append(keys, Key(opts.RunID, s.name(), t))
		}
	}
	pattern := fmt.Sprintf("race:{%s}:*", opts.RunID)
	var (
		node     *redis.Client
		nodeAddr string
	)
	defer func() {
		if cerr := deleteKeys(ctx, client, keys); cerr != nil && err == nil {
			err = fmt.Errorf("delete the run's keys %s: %w; delete them by hand", pattern, cerr)
			switch {
			case IsUnreachable(cerr):
				err = lostError(nodeAddr, "deleting the run's keys", pattern, cerr)
			case redisconn.Classify(cerr) == redisconn.NoPerm:
				err = aclError(fmt.Sprintf("delete the run's keys %s (they expire within an hour)", pattern), cerr)
			}
		}
	}()

	node, nodeAddr, err = nodeFor(ctx, client, keys[0])
	if err != nil {
		return Result{}, err
	}
	lost := func(doing string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return lostError(nodeAddr, doing, pattern, err)
	}
	for _, s := range strats {
		if err := s.prepare(ctx, node); err != nil {
			if IsUnreachable(err) {
				return Result{}, lost("preparing the "+s.label()+" strategy", err)
			}
			if redisconn.Classify(err) == redisconn.NoPerm && exitcode.Code(err) != exitcode.Unreachable {
				return Result{}, aclError(fmt.Sprintf("redis at %s refused to prepare the %s strategy", nodeAddr, s.label()), err)
			}
			return Result{}, err
		}
	}
	if err := checkMaxClients(ctx, node, opts.Concurrency); err != nil {
		return Result{}, err
	}

	res = Result{
		Header:        doc.Header{Kind: Kind, Version: Version},
		RunID:         opts.RunID,
		KeyPattern:    pattern,
		Concurrency:   opts.Concurrency,
		Limit:         opts.Limit,
		Trials:        opts.Trials,
		WatchAttempts: opts.WatchAttempts,
		Checks:        []doc.Check{},
		Notes:         []string{},
	}
	if _, ok := client.(*redis.ClusterClient); ok {
		res.Node = nodeAddr
	}
	if opts.User != nil && opts.User.Expect != nil {
		res.Expect = opts.User.Expect.Spec
	}
	trials := make([][]trial, len(strats))
	total, done := opts.Trials*len(strats), 0
	for t := 1; t <= opts.Trials; t++ {
		for i, s := range strats {
			key := Key(opts.RunID, s.name(), t)
			tr, err := runTrial(ctx, node, s, key, opts)
			if err != nil {
				return Result{}, err
			}
			if err := callsError(s, tr, t, nodeAddr, pattern); err != nil {
				return Result{}, err
			}
			if tr.final, err = s.final(ctx, client, key); err != nil {
				if IsUnreachable(err) {
					return Result{}, lost(fmt.Sprintf("reading %s after trial %d", key, t), err)
				}
				if redisconn.Classify(err) == redisconn.NoPerm {
					return Result{}, aclError(fmt.Sprintf("redis at %s refused to read %s after the %s trial", nodeAddr, key, s.label()), err)
				}
				return Result{}, fmt.Errorf("read %s after the %s trial: %w", key, s.name(), err)
			}
			if err := client.Del(context.WithoutCancel(ctx), key).Err(); err != nil {
				if IsUnreachable(err) {
					return Result{}, lost("deleting "+key, err)
				}
				if redisconn.Classify(err) == redisconn.NoPerm {
					return Result{}, aclError(fmt.Sprintf("redis at %s refused to delete %s", nodeAddr, key), err)
				}
				return Result{}, fmt.Errorf("delete %s: %w", key, err)
			}
			trials[i] = append(trials[i], tr)
			done++
			if opts.Progress != nil {
				opts.Progress(done, total)
			}
		}
	}
	for i, s := range strats {
		res.Strategies = append(res.Strategies, summarize(s, trials[i], opts))
	}
	setVerdict(&res)
	return res, nil
}

// nodeFor returns the single-node client that serves key: the client
// itself, or the cluster's primary for key's slot.
func nodeFor(ctx context.Context, client redis.UniversalClient, key string) (*redis.Client, string, error) {
	switch c := client.(type) {
	case *redis.Client:
		return c, c.Options().Addr, nil
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, key)
		if err != nil {
			if redisconn.Classify(err) == redisconn.NoPerm {
				return nil, "", aclError("find the cluster node for "+key, err)
			}
			return nil, "", exitcode.UnreachableError(fmt.Errorf("find the cluster node for %s: %w", key, err))
		}
		return n, n.Options().Addr, nil
	}
	return nil, "", fmt.Errorf("race needs a single-node or cluster client, got %T", client)
}

// deleteKeys deletes keys (all in one slot) even when ctx is cancelled.
func deleteKeys(ctx context.Context, client redis.UniversalClient, keys []string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := client.Del(cctx, keys[:n]...).Err(); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}
