package failover

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/fault"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// Waits a run bounds itself by.
const (
	healthWait  = 30 * time.Second // for cluster_state:ok and agreement on the slot's primary
	syncWait    = 30 * time.Second // for the replica to be in sync before a trial
	answerWait  = 15 * time.Second // for the new primary's first answer after the promotion
	cleanupWait = 10 * time.Second // for deleting keys on the way out
	// noReplicaWait is how long a primary may show no replica before the
	// cluster is taken to have none.
	noReplicaWait = 5 * time.Second
)

// env is what every trial of a run shares.
type env struct {
	opts    Options
	lim     *limiter.Limiter
	runID   string
	base    redis.Options
	seeds   []string
	check   func(addr string) error
	created []string // keys the run may have written
	// original is the primary of the run's slot when the first trial
	// started; finish makes it the primary again.
	original string
	// elected holds when the run last had each node run an election.
	elected map[string]time.Time
}

// Run measures opts.Trials failovers of the primary holding the run's key
// on the cluster client reaches (a *redis.ClusterClient: anything else is
// exit 2), each with the no-wait variant and, with opts.Wait, the wait
// variant. The failover goes through package fault to opts.URL's cluster,
// which must be the one client reaches. Each trial fails the slot's
// current primary over to its replica (so the two swap roles trial by
// trial), deletes its key on the new primary and waits until every node
// agrees; at the end, on an error or an interrupt too, the run's keys are
// deleted, the first primary is failed back gracefully and every node
// must report cluster_state:ok. The Result's checks hold the
// verdict (max-extra only with opts.MaxExtra); the error is for a run
// that could not be measured (exit 2 bad input, 3 unreachable or a
// cluster that would not fail over, context.Canceled on Ctrl-C), and
// comes with what was measured until then.
func Run(ctx context.Context, client redis.UniversalClient, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	cc, ok := client.(*redis.ClusterClient)
	if !ok {
		return Result{}, exitcode.Usagef("failover needs a Redis Cluster with replicas, and the server is standalone; run it against 'ratelimit sandbox --cluster --replicas 1' or a cluster that is yours to break")
	}
	lim, err := limiter.NewLimiter(opts.Params)
	if err != nil {
		return Result{}, err
	}
	e := &env{opts: opts, lim: lim, runID: opts.RunID, elected: map[string]time.Time{}}
	if e.runID == "" {
		e.runID = uuid.NewString()
	}
	co := cc.Options()
	e.base = nodeOptions(co, opts.Clients+2, opts.WaitTimeout)
	e.seeds = co.Addrs
	e.check = func(addr string) error { return fault.CheckAddr(addr, opts.AllowRemote, opts.Sandboxes) }
	for _, s := range e.seeds {
		if err := e.check(s); err != nil {
			return Result{}, err
		}
	}
	res := e.newResult()

	names := []string{VariantNoWait}
	if opts.Wait > 0 {
		names = append(names, VariantWait)
	}
	res.Variants = make([]Variant, len(names))
	for i, n := range names {
		res.Variants[i] = Variant{Name: n, Trials: []Trial{}}
		if n == VariantWait {
			res.Variants[i].WaitReplicas = opts.Wait
			res.Variants[i].WaitTimeoutMs = ms(opts.WaitTimeout)
		}
	}
	for trial := 1; trial <= opts.Trials; trial++ {
		for i := range res.Variants {
			v := &res.Variants[i]
			t, err := e.trial(ctx, trial, v.WaitReplicas)
			if err != nil {
				e.finish(ctx, &res)
				return res, fmt.Errorf("trial %d (%s): %w", trial, v.Name, err)
			}
			v.Trials = append(v.Trials, t)
		}
	}
	e.finish(ctx, &res)
	return res, nil
}

func (e *env) newResult() Result {
	o := e.opts
	p := e.lim.Params()
	res := Result{
		Header:     doc.Header{Kind: Kind, Version: Version, Server: o.Server, StartedAt: o.Now()},
		RunID:      e.runID,
		KeyPattern: "failover:{" + e.runID + "}:*",
		Algo:       string(p.Algo),
		Params:     p.Doc(),
		RatePerS:   o.Rate.PerSecond(),
		Clients:    o.Clients,
		Trials:     o.Trials,
		Mode:       string(o.Mode),
		BeforeMs:   ms(o.Before),
		AfterMs:    ms(o.After),
		MaxExtra:   o.MaxExtra,
		Checks:     []doc.Check{},
		Notes: []string{
			"each call passes now_ms from the client's clock, so the model replays the very times the script saw",
			"lost writes are read back from the new primary: its answers are replayed through the model after each prefix of the old primary's answers, and the longest prefix that explains them all is what was replicated",
		},
	}
	if o.Wait > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("wait: every call is followed by WAIT %d %d on its connection; an admission fewer replicas confirmed is refused (fail closed)", o.Wait, o.WaitTimeout.Milliseconds()))
	}
	if o.Clients > 1 {
		res.Notes = append(res.Notes, "with several clients the model replays the calls in now_ms order, which may differ by a call or two from the order the primary ran them")
	}
	return res
}

// trial measures one failover of the key's current primary to its
// replica. wait is 0 for the no-wait variant. The roles are not swapped
// back: the next trial fails over the other way (finish restores the
// first primary at the end), so each failover is an election of a node
// that has not run one for a while (see awaitElection).
func (e *env) trial(ctx context.Context, trial, wait int) (Trial, error) {
	o := e.opts
	key := fmt.Sprintf("failover:{%s}:%d", e.runID, trial)
	if wait > 0 {
		key += ":wait"
	}
	t := Trial{Trial: trial, Key: key}
	r := newRouter(e.base, key, e.seeds, e.check)
	defer r.close()
	shard, replica, err := e.ready(ctx, r)
	if err != nil {
		return t, err
	}
	t.OldPrimary = shard.Primary.Addr
	if e.original == "" {
		e.original = t.OldPrimary
	}
	inj, err := fault.New(ctx, fault.Plan{{Kind: fault.Failover, At: o.Before}}, e.faultOptions(key, o.Mode, replica.Addr))
	if err != nil {
		return t, err
	}
	defer inj.Close()
	if err := e.awaitElection(ctx, r, replica.Addr, o.Mode, o.Before); err != nil {
		return t, err
	}

	e.created = append(e.created, key)
	drv := &driver{lim: e.lim, r: r, key: key, wait: wait, waitTimeout: o.WaitTimeout, now: o.Now}
	start := o.Now()
	dr, err := startDrive(ctx, drv, o.Rate, o.Clients, start)
	if err != nil {
		return t, err
	}
	outs, err := inj.Run(ctx, start)
	if len(outs) > 0 && !outs[0].Start.IsZero() {
		e.elected[replica.Addr] = time.Now()
	}
	if err != nil {
		dr.end()
		return t, err
	}
	fo := outs[0]
	t.NewPrimary = fo.NewPrimary
	if fo.OldPrimary != t.OldPrimary {
		dr.end()
		return t, exitcode.Usagef("the cluster --redis reaches says %s serves %s but %s failed over %s: they are not the same cluster", t.OldPrimary, key, secret.URL(o.URL), fo.OldPrimary)
	}
	// keep going until the new primary answers, then o.After more
	deadline := time.Now().Add(answerWait)
	for !dr.answeredBy(fo.NewPrimary) {
		if time.Now().After(deadline) {
			dr.end()
			return t, exitcode.Unreachablef("the new primary %s did not answer a decision on %s within %s of taking over", fo.NewPrimary, key, answerWait)
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			dr.end()
			return t, err
		}
	}
	serr := sleep(ctx, o.After)
	calls, dropped := dr.end()
	if serr != nil {
		return t, serr
	}
	t.Dropped = int(dropped)
	t.FailoverMs = ms(fo.End.Sub(fo.Start))
	t.FailoverAtMs = ms(fo.Start.Sub(start))
	analyze(&t, calls, e.lim, wait, fo.End)
	for _, c := range calls {
		t.DurationMs = max(t.DurationMs, ms(c.done.Sub(start)))
	}
	if err := r.del(ctx); err != nil {
		return t, redisconn.Wrap("delete "+key, err)
	}
	return t, e.healthy(ctx, r, t.NewPrimary)
}

// ready refreshes the key's route and waits until its primary has a
// replica in sync (a trial that started with a replica still loading
// would measure the load, not the failover); it returns the first such
// replica by address.
func (e *env) ready(ctx context.Context, r *router) (fault.Shard, fault.ClusterNode, error) {
	wctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	var why string
	start := time.Now()
	for {
		shard, err := r.refresh(wctx)
		switch {
		case err != nil:
			why = err.Error()
		case len(shard.Replicas) == 0:
			// a replica attached a moment ago may not be known everywhere yet
			if time.Since(start) > noReplicaWait {
				return shard, fault.ClusterNode{}, exitcode.Usagef("primary %s (slot %d) has no replica: failover needs a cluster with replicas, e.g. 'ratelimit sandbox --cluster --replicas 1'", shard.Primary.Addr, shard.Slot)
			}
			why = fmt.Sprintf("primary %s (slot %d) has no replica", shard.Primary.Addr, shard.Slot)
		default:
			why = fmt.Sprintf("no replica of %s (slot %d) is in sync", shard.Primary.Addr, shard.Slot)
			nodes, err := fault.Nodes(wctx, r.client(shard.Primary.Addr))
			if err != nil {
				why = err.Error()
				break
			}
			for _, rep := range shard.Replicas {
				if !rep.Healthy() || e.check(rep.Addr) != nil {
					continue
				}
				if ok, err := fault.InSync(wctx, r.client(rep.Addr)); err != nil || !ok {
					continue
				}
				// every primary must know rep's role, or the election stalls
				if who := fault.Disagreeing(wctx, nodes, shard, rep, r.cmdable); who != "" {
					why = fmt.Sprintf("%s does not see %s as a replica of %s yet", who, rep.Addr, shard.Primary.Addr)
					continue
				}
				return shard, rep, nil
			}
		}
		if err := sleep(wctx, 50*time.Millisecond); err != nil {
			if ctx.Err() != nil {
				return fault.Shard{}, fault.ClusterNode{}, ctx.Err()
			}
			return fault.Shard{}, fault.ClusterNode{}, exitcode.Unreachablef("cluster not ready for a failover after %s: %s", syncWait, why)
		}
	}
}

// awaitElection waits, before a failover that is an election (force or
// graceful; takeover is none), until addr's last election this run made
// is 4 x max(cluster-node-timeout, 1s) old, counting lead, the time until
// the failover is sent. Redis 7.0 keeps a replica's election state for
// that long (2 x its auth timeout, itself 2 x the node timeout, at least
// 2s): a manual failover sooner reuses the old votes and "wins" with an
// old configuration epoch, and the cluster soon takes the slots back.
func (e *env) awaitElection(ctx context.Context, r *router, addr string, mode fault.FailoverMode, lead time.Duration) error {
	last, ok := e.elected[addr]
	if !ok || mode == fault.FailoverTakeover {
		return nil
	}
	nt := 15 * time.Second // Redis's default, when CONFIG GET is refused
	if m, err := r.client(addr).ConfigGet(ctx, "cluster-node-timeout").Result(); err == nil {
		if v, err := strconv.ParseInt(m["cluster-node-timeout"], 10, 64); err == nil && v > 0 {
			nt = time.Duration(v) * time.Millisecond
		}
	}
	gap := 2*max(2*nt, 2*time.Second) + electionSlack
	return sleep(ctx, time.Until(last.Add(gap))-lead)
}

// electionSlack is added to the election gap Redis needs.
const electionSlack = 250 * time.Millisecond

func (e *env) faultOptions(key string, mode fault.FailoverMode, replica string) fault.Options {
	return fault.Options{
		URL: e.opts.URL, AllowRemote: e.opts.AllowRemote, Sandboxes: e.opts.Sandboxes,
		Key: key, Failover: mode, Replica: replica, TLSConfig: e.base.TLSConfig,
	}
}

// failBack makes primary the key's primary again, if it is not, with a
// graceful failover (the current primary holds its clients until primary
// has caught up, so nothing is lost), and waits until every node agrees.
func (e *env) failBack(ctx context.Context, r *router, primary string) error {
	shard, err := r.refresh(ctx)
	if err != nil {
		return err
	}
	if shard.Primary.Addr == primary {
		return nil
	}
	if _, _, err := e.ready(ctx, r); err != nil {
		return err
	}
	inj, err := fault.New(ctx, fault.Plan{{Kind: fault.Failover}}, e.faultOptions(r.key, fault.FailoverGraceful, primary))
	if err != nil {
		return err
	}
	defer inj.Close()
	if err := e.awaitElection(ctx, r, primary, fault.FailoverGraceful, 0); err != nil {
		return err
	}
	if _, err := inj.Run(ctx, time.Now()); err != nil {
		return fmt.Errorf("fail back to %s: %w", primary, err)
	}
	e.elected[primary] = time.Now()
	return e.healthy(ctx, r, primary)
}

// healthy waits until every node of the cluster reports cluster_state:ok
// and, when primary is set, says primary serves r's key.
func (e *env) healthy(ctx context.Context, r *router, primary string) error {
	wctx, cancel := context.WithTimeout(ctx, healthWait)
	defer cancel()
	var why string
	for {
		why = e.unhealthy(wctx, r, primary)
		if why == "" {
			return nil
		}
		if err := sleep(wctx, 25*time.Millisecond); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return exitcode.Unreachablef("the cluster is not healthy %s after the failover: %s", healthWait, why)
		}
	}
}

// unhealthy says why the cluster is not healthy yet, or "".
func (e *env) unhealthy(ctx context.Context, r *router, primary string) string {
	var nodes []fault.ClusterNode
	var err error
	for _, s := range r.known() {
		if nodes, err = fault.Nodes(ctx, r.client(s)); err == nil {
			break
		}
	}
	if err != nil {
		return err.Error()
	}
	for _, n := range nodes {
		if n.Addr == "" || e.check(n.Addr) != nil {
			return fmt.Sprintf("node %s has no address the run may use", n.ID)
		}
		c := r.client(n.Addr)
		ok, state, err := fault.ClusterOK(ctx, c)
		if err != nil {
			return n.Addr + ": " + err.Error()
		}
		if !ok {
			return n.Addr + " reports " + state
		}
		if primary != "" {
			s, err := fault.FindShard(ctx, c, r.key)
			if err != nil {
				return n.Addr + ": " + err.Error()
			}
			if s.Primary.Addr != primary {
				return fmt.Sprintf("%s says %s serves slot %d, not %s", n.Addr, s.Primary.Addr, s.Slot, primary)
			}
		}
	}
	return ""
}

// finish waits for a healthy cluster, checks the keys are gone, and
// fills in the statistics, the checks and the verdict.
func (e *env) finish(ctx context.Context, res *Result) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthWait+cleanupWait)
	defer cancel()
	e.cleanup(cctx)
	r := newRouter(e.base, "failover:{"+e.runID+"}:health", e.seeds, e.check)
	defer r.close()
	var healthErr error
	if e.original != "" {
		healthErr = e.failBack(cctx, r, e.original)
	}
	if healthErr == nil {
		healthErr = e.healthy(cctx, r, e.original)
	}
	res.ClusterOK = healthErr == nil
	var left []string
	var keyErr error
	for _, k := range e.created {
		kr := newRouter(e.base, k, e.seeds, e.check)
		there, err := kr.exists(cctx)
		kr.close()
		if err != nil {
			keyErr = err
		}
		if there {
			left = append(left, k)
		}
	}
	res.KeysDeleted = keyErr == nil && len(left) == 0

	for i := range res.Variants {
		summarize(&res.Variants[i])
	}
	if len(res.Variants) == 2 {
		nw, w := res.Variants[0], res.Variants[1]
		var notDurable []float64
		for _, t := range w.Trials {
			notDurable = append(notDurable, float64(t.NotDurable))
		}
		res.Tradeoff = &Tradeoff{
			LostWritesSaved:   nw.LostWrites.Median - w.LostWrites.Median,
			ExtraAllowedSaved: ExtraSaved(nw.ExtraAllowed.Median, w.ExtraAllowed.Median),
			P50CostMs:         round3(w.P50Ms.Median - nw.P50Ms.Median),
			P99CostMs:         round3(w.P99Ms.Median - nw.P99Ms.Median),
			NotDurable:        spread(notDurable).Median,
		}
	}

	res.Checks = res.Checks[:0]
	for _, v := range res.Variants {
		id := CheckMaxExtra
		if v.Name == VariantWait {
			id = CheckMaxExtraWait
		}
		res.Checks = append(res.Checks, maxExtraCheck(id, v, e.opts.MaxExtra))
	}
	c := doc.Check{ID: CheckClusterOK, Pass: res.ClusterOK, Message: "every node reports cluster_state:ok"}
	if healthErr != nil {
		c.Message = healthErr.Error()
	}
	res.Checks = append(res.Checks, c)
	c = doc.Check{ID: CheckKeysDeleted, Pass: res.KeysDeleted, Message: fmt.Sprintf("all %d keys of the run deleted (%s)", len(e.created), res.KeyPattern)}
	switch {
	case keyErr != nil:
		c.Message = "cannot tell whether the run's keys are gone: " + keyErr.Error()
	case len(left) > 0:
		c.Message = "keys left behind: " + strings.Join(left, ", ")
	}
	res.Checks = append(res.Checks, c)
	res.Verdict = doc.Verdict(res.Checks)
}

// maxExtraCheck judges a variant's extra admissions per trial.
func maxExtraCheck(id string, v Variant, maxExtra *int64) doc.Check {
	per := make([]string, len(v.Trials))
	worst := 0
	for i, t := range v.Trials {
		per[i] = fmt.Sprint(t.ExtraAllowed)
		if i == 0 || t.ExtraAllowed > worst {
			worst = t.ExtraAllowed
		}
	}
	list := strings.Join(per, ", ")
	if maxExtra == nil {
		return doc.Check{ID: id, Pass: true, Skipped: true,
			Message: fmt.Sprintf("%s: extra admissions per trial %s; report only (pass --max-extra N to judge)", v.Name, list)}
	}
	return doc.Check{ID: id, Pass: len(v.Trials) > 0 && int64(worst) <= *maxExtra,
		Message: fmt.Sprintf("%s: extra admissions per trial %s (max %d), --max-extra %d", v.Name, list, worst, *maxExtra)}
}

// cleanup deletes every key the run may have written (on the way out of
// a failed or interrupted run too).
func (e *env) cleanup(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupWait)
	defer cancel()
	for _, k := range e.created {
		r := newRouter(e.base, k, e.seeds, e.check)
		_ = r.del(cctx)
		r.close()
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
