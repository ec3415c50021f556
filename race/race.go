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
// true is allowed, 0, false or nil is refused.
//
// # Verdict
//
// Strategies that must be atomic (watch, incr, script, a user script) fail
// when they admit more than Limit in a trial; those that must be exact
// (incr, script, a user script; see ExactExpected) also fail when they admit
// fewer than min(Limit, Concurrency) on their fresh key, so a script that
// refuses everything is not a pass. A NOPERM reply of the server's ACL is an
// exit-3 error naming the rule to add.
package race

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// Kind and Version identify a race result document.
const (
	Kind    = "race"
	Version = 1
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

// Result is the race result document (kind "race", version 1).
type Result struct {
	Kind          string           `json:"kind"`
	Version       int              `json:"version"`
	Server        redisconn.Server `json:"server"`
	RunID         string           `json:"run_id"`
	Keys          string           `json:"keys"` // the run's key pattern, race:{<run id>}:*
	Node          string           `json:"node,omitempty"`
	Concurrency   int              `json:"concurrency"`
	Limit         int64            `json:"limit"`
	Trials        int              `json:"trials"`
	WatchAttempts int              `json:"watch_attempts"`
	Strategies    []Strategy       `json:"strategies"`
	// RaceReproduced says whether naive admitted more than the limit in any
	// trial; nil when naive was not raced.
	RaceReproduced *bool    `json:"race_reproduced,omitempty"`
	Verdict        string   `json:"verdict"` // "pass" or "fail"
	Failures       []string `json:"failures"`
	Notes          []string `json:"notes"`
}

// Strategy is one strategy's outcome; every slice has one entry per trial.
type Strategy struct {
	Name           string `json:"name"`
	Label          string `json:"label"`
	AtomicExpected bool   `json:"atomic_expected"`
	Script         string `json:"script,omitempty"` // the user script's file
	Admitted       []int  `json:"admitted"`
	OverAdmitted   []int  `json:"over_admitted"`
	// FinalValue is what Redis recorded after the trial: the counter
	// (naive, multi, watch, incr) or the tokens taken from the bucket
	// (script); null for a user script, whose state is its own.
	FinalValue []*int64 `json:"final_value"`
	// LostUpdates are successful writes that the final value does not
	// show: admitted - final for GET/SET, successful INCRs - final for incr.
	LostUpdates []*int64 `json:"lost_updates"`
	Retries     []int    `json:"retries"`
	GiveUps     []int    `json:"give_ups"`
	Errors      []int    `json:"errors"`
	// TrialP50Us, TrialP99Us and WallUs are per trial: call latency
	// percentiles, and the time from the barrier opening to the last reply.
	TrialP50Us     []int64 `json:"trial_p50_us"`
	TrialP99Us     []int64 `json:"trial_p99_us"`
	WallUs         []int64 `json:"wall_us"`
	P50Us          int64   `json:"p50_us"` // over all trials' calls
	P99Us          int64   `json:"p99_us"`
	AdmittedMin    int     `json:"admitted_min"`
	AdmittedMedian float64 `json:"admitted_median"`
	AdmittedMax    int     `json:"admitted_max"`
	ErrorSample    string  `json:"error_sample,omitempty"`
}

// Pass reports whether the run's verdict is "pass".
func (r Result) Pass() bool { return r.Verdict == "pass" }

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
			case isNoPerm(cerr):
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
			if isNoPerm(err) && exitcode.Code(err) != exitcode.Unreachable {
				return Result{}, aclError(fmt.Sprintf("redis at %s refused to prepare the %s strategy", nodeAddr, s.label()), err)
			}
			return Result{}, err
		}
	}
	if err := checkMaxClients(ctx, node, opts.Concurrency); err != nil {
		return Result{}, err
	}

	res = Result{
		Kind: Kind, Version: Version,
		RunID:         opts.RunID,
		Keys:          pattern,
		Concurrency:   opts.Concurrency,
		Limit:         opts.Limit,
		Trials:        opts.Trials,
		WatchAttempts: opts.WatchAttempts,
		Failures:      []string{},
		Notes:         []string{},
	}
	if _, ok := client.(*redis.ClusterClient); ok {
		res.Node = nodeAddr
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
				if isNoPerm(err) {
					return Result{}, aclError(fmt.Sprintf("redis at %s refused to read %s after the %s trial", nodeAddr, key, s.label()), err)
				}
				return Result{}, fmt.Errorf("read %s after the %s trial: %w", key, s.name(), err)
			}
			if err := client.Del(context.WithoutCancel(ctx), key).Err(); err != nil {
				if IsUnreachable(err) {
					return Result{}, lost("deleting "+key, err)
				}
				if isNoPerm(err) {
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
	judge(&res)
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
			if isNoPerm(err) {
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

// outcome is one goroutine's request.
type outcome struct {
	admitted bool
	wrote    bool // a write of this request reached Redis
	retries  int
	gaveUp   bool
	err      error
	latency  time.Duration
}

// trial is one strategy's trial.
type trial struct {
	outcomes []outcome
	wall     time.Duration
	final    *int64
}

// runTrial starts opts.Concurrency goroutines that each take a dedicated
// connection and PING through it, waits until all are ready, opens the
// barrier and waits for every request.
func runTrial(ctx context.Context, node *redis.Client, s strategy, key string, opts Options) (trial, error) {
	n := opts.Concurrency
	outs := make([]outcome, n)
	warmErrs := make([]error, n)
	start, abort := make(chan struct{}), make(chan struct{})
	dials := make(chan struct{}, opts.WarmParallel)
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			conn := node.Conn()
			defer conn.Close()
			dials <- struct{}{}
			warmErrs[i] = conn.Ping(ctx).Err()
			<-dials
			ready.Done()
			select {
			case <-start:
			case <-abort:
				return
			}
			t0 := time.Now()
			o := s.call(ctx, conn, key, i)
			o.latency = time.Since(t0)
			outs[i] = o
		}()
	}
	ready.Wait()
	if slices.ContainsFunc(warmErrs, func(e error) bool { return e != nil }) {
		full := serverFull(ctx, node) // asked while the connections are held
		close(abort)
		done.Wait() // the connections are back: the server can be asked why
		return trial{}, warmError(ctx, node, warmErrs, full)
	}
	t0 := time.Now()
	close(start)
	done.Wait()
	wall := time.Since(t0)
	if ctx.Err() != nil {
		return trial{}, ctx.Err()
	}
	return trial{outcomes: outs, wall: wall}, nil
}

// serverFull reports whether the server refuses one more connection
// because it reached maxclients: it then writes that error at once, before
// any command. It dials a plain connection (not for TLS) and reads briefly.
func serverFull(ctx context.Context, node *redis.Client) bool {
	o := node.Options()
	if o.TLSConfig != nil {
		return false
	}
	network := o.Network
	if network == "" {
		network = "tcp"
	}
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(context.WithoutCancel(ctx), network, o.Addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	buf := make([]byte, 128)
	n, _ := io.ReadAtLeast(conn, buf, len("-ERR max number of clients reached"))
	return IsMaxClients(errors.New(string(buf[:n])))
}

// maxClients returns the server's maxclients and how many connections
// other than this client's pool count against it; ok is false when the server does
// not say (CONFIG disabled, as on many managed services).
func maxClients(ctx context.Context, node *redis.Client) (limit, others int, ok bool) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	info, err := node.Info(cctx, "clients").Result()
	if err != nil {
		return 0, 0, false
	}
	// Cluster bus links count against maxclients too (cluster_connections).
	connected, bus := -1, 0
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "connected_clients":
			connected, _ = strconv.Atoi(v)
		case "cluster_connections":
			bus, _ = strconv.Atoi(v)
		case "maxclients": // Redis 7 and later
			limit, _ = strconv.Atoi(v)
		}
	}
	if limit <= 0 {
		m, err := node.ConfigGet(cctx, "maxclients").Result()
		if err != nil {
			return 0, 0, false
		}
		limit, _ = strconv.Atoi(m["maxclients"])
	}
	if connected < 0 || limit <= 0 {
		return 0, 0, false
	}
	return limit, max(0, connected-int(node.PoolStats().TotalConns)) + bus, true
}

// checkMaxClients fails early, before opening n connections, when the
// server's maxclients cannot take them.
func checkMaxClients(ctx context.Context, node *redis.Client, n int) error {
	limit, others, ok := maxClients(ctx, node)
	if !ok || others+n <= limit {
		return nil
	}
	return maxClientsError(node.Options().Addr, n, limit, others)
}

func maxClientsError(addr string, n, limit, others int) error {
	return exitcode.Usagef("redis at %s accepts at most %d clients (maxclients) and already has %d other %s, so %d more do not fit; lower --concurrency to %d or raise maxclients (CONFIG SET maxclients %d, with an open-file limit to match)",
		addr, limit, others, plural(others, "connection", "connections"), n, max(1, limit-others), others+n+100)
}

// warmError turns the first failed warm-up into an error that says what to
// do: the server's maxclients, the process's open-file limit, or an
// unreachable server.
func warmError(ctx context.Context, node *redis.Client, errs []error, full bool) error {
	failed, first := 0, error(nil)
	for _, e := range errs {
		if e != nil {
			failed++
			if first == nil {
				first = e
			}
		}
	}
	if first == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	n, addr := len(errs), node.Options().Addr
	// A server over its maxclients answers "max number of clients reached"
	// and closes the connection, which the client may see only as a broken
	// pipe or a reset: ask the server when the error is not explicit.
	if limit, others, ok := maxClients(ctx, node); full || IsMaxClients(first) || (ok && others+n > limit) {
		if ok {
			return maxClientsError(addr, n, limit, others)
		}
		return exitcode.Usagef("redis at %s refused %d of %d connections: max number of clients reached; lower --concurrency or raise the server's maxclients (CONFIG SET maxclients %d, with an open-file limit to match)", addr, failed, n, n+100)
	}
	switch {
	case strings.Contains(first.Error(), "too many open files"):
		return exitcode.Usagef("opening %s to %s: too many open files; raise the limit with 'ulimit -n %d' or lower --concurrency", count(n, "connection", "connections"), addr, 2*n+100)
	}
	if failed == n && IsUnreachable(first) {
		return lostError(addr, "opening "+count(n, "connection", "connections"), "", first)
	}
	if isNoPerm(first) {
		return aclError(fmt.Sprintf("open %s to %s: %d failed", count(n, "connection", "connections"), addr, failed), first)
	}
	hint := ""
	if failed < n {
		hint = "; if the server limits its clients (maxclients), lower --concurrency"
	}
	return exitcode.UnreachableError(fmt.Errorf("open %s to %s: %d failed: %w%s", count(n, "connection", "connections"), addr, failed, first, hint))
}

// summarize turns a strategy's trials into its result entry.
func summarize(s strategy, trials []trial, opts Options) Strategy {
	out := Strategy{Name: s.name(), Label: s.label(), AtomicExpected: s.atomic()}
	if u, ok := s.(*userStrategy); ok {
		out.Script = u.script.Path
	}
	var all []time.Duration
	for _, tr := range trials {
		admitted, wrote, retries, giveUps, errs := 0, int64(0), 0, 0, 0
		lat := make([]time.Duration, 0, len(tr.outcomes))
		for _, o := range tr.outcomes {
			if o.admitted {
				admitted++
			}
			if o.wrote {
				wrote++
			}
			if o.gaveUp {
				giveUps++
			}
			retries += o.retries
			if o.err != nil {
				errs++
				if out.ErrorSample == "" {
					out.ErrorSample = o.err.Error()
				}
			}
			lat = append(lat, o.latency)
		}
		slices.Sort(lat)
		all = append(all, lat...)
		out.Admitted = append(out.Admitted, admitted)
		out.OverAdmitted = append(out.OverAdmitted, max(0, admitted-int(opts.Limit)))
		out.FinalValue = append(out.FinalValue, tr.final)
		var lost *int64
		if tr.final != nil {
			l := max(0, wrote-*tr.final)
			lost = &l
		}
		out.LostUpdates = append(out.LostUpdates, lost)
		out.Retries = append(out.Retries, retries)
		out.GiveUps = append(out.GiveUps, giveUps)
		out.Errors = append(out.Errors, errs)
		out.TrialP50Us = append(out.TrialP50Us, percentile(lat, 50).Microseconds())
		out.TrialP99Us = append(out.TrialP99Us, percentile(lat, 99).Microseconds())
		out.WallUs = append(out.WallUs, tr.wall.Microseconds())
	}
	slices.Sort(all)
	out.P50Us = percentile(all, 50).Microseconds()
	out.P99Us = percentile(all, 99).Microseconds()
	out.AdmittedMin, out.AdmittedMedian, out.AdmittedMax = spread(out.Admitted)
	return out
}

// percentile returns the nearest-rank p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

// spread returns the minimum, median and maximum of xs.
func spread(xs []int) (lo int, median float64, hi int) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	sort.Ints(s)
	m := len(s) / 2
	median = float64(s[m])
	if len(s)%2 == 0 {
		median = float64(s[m-1]+s[m]) / 2
	}
	return s[0], median, s[len(s)-1]
}

// ExactExpected reports whether strategy name promises to admit exactly
// min(limit, concurrency) requests against a fresh key: incr, the built-in
// Lua script and a user script (--script), which claim atomic exactness.
// Fewer is a failed check (under-admission: the limiter refuses requests it
// has room for). watch is atomic but not exact: a request that loses
// --watch-attempts conflicts gives up, so it may admit fewer under
// contention, which is noted, not failed; naive and multi promise nothing.
func ExactExpected(name string) bool {
	switch name {
	case Incr, Script, User:
		return true
	}
	return false
}

// judge sets the verdict, the failures and the notes.
func judge(r *Result) {
	want := min(r.Limit, int64(r.Concurrency)) // what an exact limiter admits on a fresh key
	for _, s := range r.Strategies {
		calls := r.Concurrency * len(s.Admitted)
		for t, a := range s.Admitted {
			switch {
			case s.AtomicExpected && a > int(r.Limit):
				r.Failures = append(r.Failures, fmt.Sprintf("over-admission: %s admitted %d of %d with limit %d in trial %d", s.Label, a, r.Concurrency, r.Limit, t+1))
			case ExactExpected(s.Name) && int64(a) < want:
				msg := fmt.Sprintf("under-admission: %s admitted %d of %d with limit %d in trial %d", s.Label, a, r.Concurrency, r.Limit, t+1)
				if t < len(s.Errors) && s.Errors[t] > 0 {
					msg += " (" + count(s.Errors[t], "call", "calls") + " failed)"
				}
				r.Failures = append(r.Failures, msg)
			}
		}
		if errs := sum(s.Errors); errs > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d of %d calls failed, e.g. %s", s.Label, errs, calls, s.ErrorSample))
		}
		if s.Name == Watch && sum(s.GiveUps) > 0 && s.AdmittedMin < int(r.Limit) && r.Concurrency >= int(r.Limit) {
			r.Notes = append(r.Notes, fmt.Sprintf("%s admitted fewer than the limit because %s gave up after %s; raise --watch-attempts to at least the limit", s.Label, count(sum(s.GiveUps), "request", "requests"), count(r.WatchAttempts, "attempt", "attempts")))
		}
		if s.Name == Naive {
			reproduced := s.AdmittedMax > int(r.Limit)
			r.RaceReproduced = &reproduced
			if !reproduced {
				note := fmt.Sprintf("the race was not reproduced at this concurrency: %s admitted at most the limit of %d", s.Label, r.Limit)
				if r.Concurrency <= int(r.Limit) {
					note += fmt.Sprintf("; --concurrency %d cannot exceed it, raise it above the limit", r.Concurrency)
				} else {
					note += "; try a higher --concurrency"
				}
				r.Notes = append(r.Notes, note)
			}
		}
	}
	r.Verdict = "pass"
	if len(r.Failures) > 0 {
		r.Verdict = "fail"
	}
}

// plural picks the noun for n: "call" for 1, "calls" otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// count writes n with its noun: "1 call", "2 calls".
func count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + plural(n, one, many)
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// IsMaxClients reports whether err is the server refusing a connection
// because of its maxclients setting.
func IsMaxClients(err error) bool {
	return err != nil && strings.Contains(err.Error(), "max number of clients reached")
}

// IsUnreachable reports whether err means the server could not be reached
// or stopped answering: a refused, reset or broken connection, end of
// file, an i/o or connection pool timeout, a server still loading its data
// (redisconn.Classify's Unreachable class). Error replies of the server
// (OOM, NOPERM, a script error) are not.
func IsUnreachable(err error) bool {
	return redisconn.Classify(err) == redisconn.Unreachable
}

// isNoPerm reports whether err is the server's ACL refusing a command or a
// key, also from inside a script (Redis 7.0 words that differently).
func isNoPerm(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return redisconn.Classify(err) == redisconn.NoPerm ||
		strings.Contains(msg, "user executing the script can't") || strings.Contains(msg, "can't run this command or subcommand")
}

// aclError is the exit-3 error for a command or key the ACL user may not
// use: the race cannot run with this user, and the message names the rule
// to add.
func aclError(what string, err error) error {
	if exitcode.Code(err) == exitcode.Unreachable {
		// already says what to add (eval's limiter names its script's rules)
		return exitcode.UnreachableError(fmt.Errorf("%s: %w", what, err))
	}
	hint := redisconn.ACLHint(err)
	msg := err.Error()
	if !strings.Contains(msg, "run the '") && strings.Contains(msg, "key") {
		hint = "the ACL user may not touch the run's keys: add ~race:* to its rules (ACL SETUSER <user> ~race:*), see README \"Safety\" for race's minimal ACL"
	}
	return exitcode.UnreachableError(fmt.Errorf("%s: %w; %s", what, err, hint))
}

// lostError is the exit-3 error for a server that could not be reached or
// went away while the run was doing something; pattern, when not empty,
// names keys of the run that may be left.
func lostError(addr, doing, pattern string, err error) error {
	hint := "check that it is up and run again"
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, redis.ErrPoolTimeout) {
		hint = "check that it is up, or raise --redis-timeout if it is only slow, and run again"
	}
	if pattern != "" {
		hint += fmt.Sprintf(" (the run's keys %s expire within an hour)", pattern)
	}
	return exitcode.UnreachableError(fmt.Errorf("redis at %s did not answer while %s: %w; %s", addr, doing, err, hint))
}

// callsError turns the failed calls of a trial into the run's error: exit
// 3 when any call failed because the server could not be reached (the
// trial says nothing about the limiter then), exit 3 naming the ACL rule
// to add when the ACL refused any call, exit 2 when every call of a
// user script failed (the script or its --args are wrong), exit 3 when the
// server refused every call of a built-in strategy with an error reply (it
// cannot serve the race: maxmemory, ACL, a replica). Other failed calls are
// counted and noted in the report.
func callsError(s strategy, tr trial, t int, addr, pattern string) error {
	failed, unreachable, noperm := 0, 0, 0
	var first, firstLost, firstACL error
	for _, o := range tr.outcomes {
		if o.err == nil {
			continue
		}
		failed++
		if first == nil {
			first = o.err
		}
		switch {
		case IsUnreachable(o.err):
			unreachable++
			if firstLost == nil {
				firstLost = o.err
			}
		case isNoPerm(o.err):
			noperm++
			if firstACL == nil {
				firstACL = o.err
			}
		}
	}
	n := len(tr.outcomes)
	switch {
	case unreachable > 0:
		return lostError(addr, fmt.Sprintf("racing %s in trial %d (%d of %d calls failed)", s.label(), t, unreachable, n), pattern, firstLost)
	case noperm > 0:
		// Even one refused call leaves the strategy half done (an INCR
		// without its PEXPIRE): the trial says nothing about the limiter.
		return aclError(fmt.Sprintf("redis at %s refused %d of %d %s calls in trial %d", addr, noperm, n, s.label(), t), firstACL)
	case failed == 0 || failed < n:
		return nil
	case s.name() == User:
		hint := "fix the script or its --args"
		var rerr redis.Error
		if !errors.As(first, &rerr) {
			hint = "its reply must start with 1 (allowed) or 0 (refused)"
		}
		return exitcode.Usagef("--script %s failed on every call in trial %d: %v; %s", s.label(), t, first, hint)
	default:
		return exitcode.UnreachableError(fmt.Errorf("redis at %s refused every %s call in trial %d: %w; make sure the server accepts writes to %s (maxmemory, ACL, not a replica) and run again",
			addr, s.label(), t, first, pattern))
	}
}
