package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// data is everything the phases saw, for the checks to judge.
type data struct {
	q      int64         // quota, 0 unknown
	w      time.Duration // window, 0 unknown
	policy string        // where q and w came from
	model  string        // the --expect model as given, when it came from there
	// others are the advertised policy items besides the one judged
	// (RateLimit-Policy may stack several: 10 per second and 1000 per
	// hour); the probe judges q and w from the tightest and checks the
	// others are never exceeded
	others []header.Policy

	shared bool // identities share one quota: the phases ran one after another
	// perInstance is the finding that the quota is kept per replica
	// behind the address ("" when nothing says so)
	perInstance string
	// cut says why the phases stopped early (the budget, --max-time, a
	// quota too large to spend): a check without its evidence is skipped
	// with this reason, never failed
	cut string

	a       []obs // identity A until its first refusal
	aRefill []obs // A again, once its quota was back
	aWaited time.Duration
	e       []obs // identity E until its first refusal
	ePoll   []obs // E polled until admitted
	// eRetries are E's moves right after a Retry-After: 0, each with the
	// answer before it
	eRetries []retryAtOnce
	b        obs   // a fresh identity B right after A ran out
	anonMid  obs   // a request without identity right after A ran out
	anon     []obs // requests without identity until refused
	spoofs   []spoofTry
	c, d     obs // first requests of C and D (reset)
	cBurst   []obs
	cAt      time.Duration // C's burst, after C's first answer
	dBurst   []obs
	dAt      time.Duration
	// unanswered says why the run decided nothing: most requests got
	// no answer
	unanswered string
	skipped    map[string]string // check -> why it could not run
	notes      []string
	limited    []int // declared refusal statuses besides 429

	mu   sync.Mutex
	all  []obs  // every response
	peer string // the probe's address as the target sees it
}

// retryAtOnce is a request sent as soon as the one before it (Ref) was
// answered: after a refusal that said Retry-After: 0, a retry at once.
type retryAtOnce struct {
	Ref, Retry obs
}

// zeroRetries is how many moves follow a Retry-After: 0.
const zeroRetries = 8

// spoofTry is one client-IP header tried against an exhausted quota:
// attempts with one spoofed address and as many controls without the
// header, interleaved in one burst.
type spoofTry struct {
	Header   string
	From     time.Time // the last answer before it (its refill counts from there)
	Controls []obs
	Attempts []obs
}

func (d *data) record(os ...obs) {
	d.mu.Lock()
	d.all = append(d.all, os...)
	d.mu.Unlock()
}

// newProber validates o, fills in its defaults and makes the prober
// Run and RunFingerprint share (an unlimited budget until the policy is
// known); done releases the client it made.
func newProber(o Options) (p *prober, method string, done func(), err error) {
	if err := o.Validate(); err != nil {
		return nil, "", nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	client, done := o.Client, func() {}
	if client == nil {
		client = newClient(o.Timeout)
		done = client.CloseIdleConnections
	}
	method = o.Method
	if method == "" {
		method = http.MethodGet
	}
	return &prober{o: o, client: client, budget: math.MaxInt}, method, done, nil
}

// first sends the first request of identity id; a target that cannot be
// reached at all is exit 3.
func (p *prober) first(ctx context.Context, id string) (obs, error) {
	first, err := p.send(ctx, id)
	if err != nil {
		return first, err
	}
	if first.Err != nil {
		if ctx.Err() != nil {
			return first, ctx.Err()
		}
		return first, exitcode.Unreachablef("target %s could not be reached: %v", secret.URL(p.o.URL), secret.Redact(first.Err.Error()))
	}
	return first, nil
}

// Run probes o.URL. It returns an exit-3 error when the target cannot be
// reached at all, an exit-2 error for bad options, and otherwise a Result
// whose Verdict is fail when any check failed.
func Run(ctx context.Context, o Options) (Result, error) {
	p, method, done, err := newProber(o)
	if err != nil {
		return Result{}, err
	}
	defer done()
	o = p.o
	if o.Budget > 0 {
		p.budget = o.Budget
	}
	res := Result{Header: doc.Header{Kind: Kind, Version: Version}, Target: secret.URL(o.URL), Method: method, Checks: []Check{}}
	start := time.Now()
	res.StartedAt = start
	id := func(letter string) string { return "probe-" + o.RunID + "-" + letter }

	first, err := p.first(ctx, id("A"))
	if err != nil {
		return res, err
	}
	d := &data{skipped: map[string]string{}, limited: o.Limited}
	d.record(first)
	d.learnPolicy(first.Header, o)
	if o.Budget == 0 {
		p.budget = DefaultBudget(d.q)
	}
	maxTime := o.MaxTime
	if maxTime == 0 {
		maxTime = DefaultMaxTime(d.w)
	}
	p.deadline = start.Add(maxTime)
	res.Budget = p.budget
	res.Policy = Policy{Quota: d.q, WindowMs: float64(d.w) / float64(time.Millisecond), Source: d.policy}
	if d.policy == "--expect" {
		res.Policy.Model, res.Policy.ModelWords = o.Model, o.ModelWords
	}
	p.progress("policy %s; budget %d requests, at most %s", d.policyText(), p.budget, maxTime)

	// A fresh identity refused at once: the quota it shares (an address's,
	// spent by an earlier client, an earlier probe) is not back yet. Wait
	// for the reset it announces, once, rather than judge that.
	if first.refused() {
		if wait, ok := resetWait(first, d.w); ok && wait <= o.MaxWait && time.Now().Add(wait).Before(p.deadline) {
			d.notes = append(d.notes, fmt.Sprintf("the first request was refused (%d): the quota this client shares was spent before the probe began (an earlier probe from this address?); waited %s for its reset",
				first.Status, wait.Round(time.Millisecond)))
			p.progress("first request refused: waiting %s for the reset", wait.Round(100*time.Millisecond))
			if err := sleepUntil(ctx, first.Done.Add(wait)); err != nil {
				return res, err
			}
			if first, err = p.send(ctx, id("A")); err != nil {
				return res, err
			}
			d.record(first)
		} else {
			d.notes = append(d.notes, "the first request was refused and its reset is unknown or beyond --max-wait: the probe did not wait for it")
		}
	}

	err = d.collect(ctx, p, id, first)
	switch {
	case errors.Is(err, errBudget):
		d.cut = fmt.Sprintf("the request budget (%d) ran out before this check had its evidence; raise --budget", p.budget)
	case errors.Is(err, errTime):
		d.cut = fmt.Sprintf("--max-time (%s) passed before this check had its evidence; raise it", maxTime)
		d.notes = append(d.notes, fmt.Sprintf("the probe stopped at --max-time (%s); the checks it could not finish are skipped", maxTime))
	case err != nil:
		return res, err
	}
	if n, ev := d.instances(append(slices.Clone(d.a), d.aRefill...)); n >= 2 {
		d.perInstance = judge.InstancesFinding(n, ev)
		d.notes = append(d.notes, d.perInstance)
	}
	res.Requests = p.sent
	res.Peer = p.peer
	d.peer = p.peer
	res.Shared = d.shared
	res.Notes = d.notes
	res.Checks = d.judge(o)
	if why := d.undecided(res.Checks); why != "" {
		res.Checks = append(res.Checks, Check{Check: doc.Undecided(why), Status: Undecided})
	}
	res.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	res.Verdict = doc.VerdictOf(res.CheckList())
	return res, nil
}

// learnPolicy reads q and w from the first response (any draft of the
// RateLimit fields, or the legacy X-RateLimit-Limit without a window), or
// from o.
func (d *data) learnPolicy(h http.Header, o Options) {
	if o.Quota > 0 {
		d.q, d.w, d.policy, d.model = o.Quota, o.Window, "--expect", o.Model
		return
	}
	in := header.Inspect(http.StatusOK, h, time.Now())
	if p, ok := in.Policy(); ok && p.Quota > 0 {
		if in.PolicyErr == nil && len(in.Policies) > 1 {
			p, d.others = binding(in.Policies)
		}
		d.q, d.w, d.policy = p.Quota, time.Duration(p.Window)*time.Second, header.NamePolicy
		if in.Draft != "" && in.Draft != header.DraftCurrent {
			d.policy += " (" + in.Draft + ")"
		}
		return
	}
	if l, ok := header.ParseLegacy(h); ok && l.Limit > 0 {
		d.q, d.policy = l.Limit, l.Prefix+"Limit"
	}
}

// binding picks, of several advertised policy items, the one a burst
// from a fresh key runs into first (the smallest quota; of equal quotas,
// the longest window) and returns the others.
func binding(items []header.Policy) (header.Policy, []header.Policy) {
	best := -1
	for i, p := range items {
		if p.Quota <= 0 {
			continue
		}
		if best < 0 || p.Quota < items[best].Quota || p.Quota == items[best].Quota && p.Window > items[best].Window {
			best = i
		}
	}
	if best < 0 {
		return items[0], nil
	}
	var others []header.Policy
	for i, p := range items {
		if i != best && p.Quota > 0 && p.Window > 0 {
			others = append(others, p)
		}
	}
	return items[best], others
}

func (d *data) policyText() string {
	switch {
	case d.model != "":
		return fmt.Sprintf("%s (--expect; judged as q=%d per %s)", d.model, d.q, d.w)
	case d.q > 0 && d.w > 0:
		return fmt.Sprintf("q=%d w=%s (%s)", d.q, d.w, d.policy)
	case d.q > 0:
		return fmt.Sprintf("q=%d, window unknown (%s)", d.q, d.policy)
	}
	return "unknown (no RateLimit-Policy; pass --expect to judge the policy)"
}

// exhaustCap bounds one exhaustion: twice the quota and some, or a fixed
// cap when the quota is unknown.
func (d *data) exhaustCap() int {
	if d.q <= 0 {
		return unknownQuotaCap
	}
	return int(min(2*d.q+10, 2*MaxQuotaExhausted))
}

// resetWait is how long after o the quota it spent is fully back: the
// reset it announces (RateLimit t, a legacy reset, Retry-After, the
// largest), else the window w; plus a little for the target's rounding
// and clock. ok is false when nothing says.
func resetWait(o obs, w time.Duration) (time.Duration, bool) {
	var wait time.Duration
	ok := false
	if t, round, has := resetOf(o); has {
		wait, ok = t+round/2, true
	}
	if ra, err := header.CheckRetryAfter(o.Header, o.Done); err == nil && o.refused() && !ra.IsDate {
		wait, ok = max(wait, ra.Delay), true
	}
	if w > 0 {
		wait, ok = max(wait, w), true
	}
	return wait + 250*time.Millisecond, ok
}

// collect runs the phases: A until refused, then B and a request without
// identity right away. When B was refused too, the identities share one
// quota and the remaining phases run one after another, each after a full
// reset (sequential); otherwise each runs on its own identity, the timed
// ones at their own times (concurrent).
func (d *data) collect(ctx context.Context, p *prober, id func(string) string, first obs) error {
	d.a = []obs{first}
	if d.q > MaxQuotaExhausted {
		d.cut = fmt.Sprintf("the advertised quota (%d) is above the %d requests the probe spends on one identity, so it was not spent: give --expect a smaller policy of a test route, or probe a route with a smaller quota", d.q, MaxQuotaExhausted)
		// a bounded burst all the same: refusals long before the
		// advertised quota is spent contradict it (a lying policy)
		if first.admitted() {
			more, err := p.exhaust(ctx, id("A"), 0, unknownQuotaCap-1)
			d.a = append(d.a, more...)
			d.record(more...)
			if err != nil && !errors.Is(err, errBudget) && !errors.Is(err, errTime) {
				return err
			}
		}
		return nil
	}
	if first.admitted() {
		more, err := p.exhaust(ctx, id("A"), d.q, d.exhaustCap()-1)
		d.a = append(d.a, more...)
		d.record(more...)
		if err != nil {
			return err
		}
	}
	if n := unanswered(d.a); n > len(d.a)/2 {
		d.unanswered = fmt.Sprintf("%d of %d requests of identity A got no answer (%s)", n, len(d.a), firstError(d.a))
		return nil
	}
	last, limited := lastRefusal(d.a)
	limited = limited && d.a[0].admitted()
	p.progress("identity A: %d admitted of %d sent at once, %s", count(d.a), len(d.a), map[bool]string{true: "then refused (" + statusText(last) + ")", false: "none refused"}[limited])
	if !limited {
		return nil // nothing more to learn: the checks say why
	}

	// isolation, right after A ran out
	var err error
	if d.b, err = p.send(ctx, id("B")); err != nil {
		return err
	}
	d.record(d.b)
	if d.anonMid, err = p.send(ctx, ""); err != nil {
		return err
	}
	d.record(d.anonMid)
	if d.b.refused() {
		d.shared = true
		p.progress("a fresh identity was refused too: the identities share one quota; the phases run one after another, each from a full quota")
		return d.sequential(ctx, p, id, last)
	}
	return d.concurrent(ctx, p, id, last)
}

// instances estimates the independent counters behind the address from
// what identity os's admissions reported (judge.Instances).
func (d *data) instances(os []obs) (int, string) {
	var as []judge.Answer
	for _, o := range os {
		if !o.admitted() || o.Spoof != "" {
			continue
		}
		if r, _, _, ok := limitOf(o.Header, o.Done); ok {
			as = append(as, judge.Answer{Sent: o.Sent, Done: o.Done, Remaining: r})
		}
	}
	var perToken time.Duration
	if d.q > 0 && d.w > 0 {
		perToken = d.w / time.Duration(d.q)
	}
	return judge.Instances(as, perToken)
}

// firstError is the first transport error among os, in words.
func firstError(os []obs) string {
	for _, o := range os {
		if o.Err != nil {
			return secret.Redact(o.Err.Error())
		}
	}
	return "none"
}

// concurrent runs the phases on their own identities: the quick ones now,
// the timed ones (E's polling, C before its reset, D after it, A's refill)
// each in a goroutine at its own time, so no phase delays another.
func (d *data) concurrent(ctx context.Context, p *prober, id func(string) string, aRefusal obs) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	fail := func(err error) {
		if err == nil {
			return
		}
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		errMu.Unlock()
	}
	at := func(when time.Time, run func() error) {
		wg.Go(func() {
			if err := p.sleepUntil(ctx, when); err != nil {
				fail(err)
				return
			}
			fail(run())
		})
	}

	// reset: the first requests of C and D, and their bursts at their times
	var err error
	if d.c, err = p.send(ctx, id("C")); err != nil {
		return err
	}
	d.record(d.c)
	if d.d, err = p.send(ctx, id("D")); err != nil {
		return err
	}
	d.record(d.d)
	if when, ok := d.beforeReset(p); ok {
		at(when, func() error {
			d.cAt = time.Since(d.c.Done)
			obs, _, err := p.burst(ctx, id("C"), int(d.q))
			d.cBurst = obs
			d.record(obs...)
			return err
		})
	}
	if when, ok := d.afterReset(p); ok {
		at(when, func() error {
			d.dAt = time.Since(d.d.Done)
			obs, _, err := p.burst(ctx, id("D"), int(d.q))
			d.dBurst = obs
			d.record(obs...)
			return err
		})
	}
	// A's refill, one window after it ran out
	if d.q > 0 && d.w > 0 && d.w <= p.o.MaxWait {
		at(aRefusal.Done.Add(d.w+150*time.Millisecond), func() error {
			d.aWaited = time.Since(aRefusal.Done)
			obs, _, err := p.burst(ctx, id("A"), int(d.q+d.q/2+1))
			d.aRefill = obs
			d.record(obs...)
			return err
		})
	}

	// Retry-After: E until refused, then polled in its own time
	e, err := p.exhaust(ctx, id("E"), d.q, d.exhaustCap())
	d.e = e
	d.record(e...)
	if err != nil {
		fail(err)
	} else if le, ok := lastRefusal(e); ok {
		wg.Go(func() { fail(d.pollRetry(ctx, p, id("E"), le)) })
	}

	// client-IP spoofing: without identity until refused, then each
	// client-IP header between two controls
	if err == nil {
		fail(d.spoof(ctx, p))
	}
	wg.Wait()
	return firstErr
}

// sequential runs the phases one after another, each after the quota is
// fully back, for a limiter whose identities share one quota: no phase
// sees what another spent.
func (d *data) sequential(ctx context.Context, p *prober, id func(string) string, last obs) error {
	// waitReset waits until the quota last spent is back; false when no
	// reset is known or it is beyond --max-wait (the phase is skipped)
	waitReset := func(check string) (bool, error) {
		wait, ok := resetWait(last, d.w)
		switch {
		case !ok:
			// no reset to read: poll until the quota is back
			back, err := d.awaitFull(ctx, p, last)
			if err != nil {
				return false, err
			}
			if back == "" {
				return true, nil
			}
			d.skipped[check] = back
			return false, nil
		case wait > p.o.MaxWait:
			d.skipped[check] = fmt.Sprintf("the identities share one quota whose reset (%s) is beyond --max-wait", wait.Round(time.Second))
			return false, nil
		case time.Now().Add(wait).After(p.deadline):
			d.skipped[check] = "the identities share one quota, and waiting for its reset would pass --max-time"
			return false, nil
		}
		p.progress("waiting %s for the shared quota", time.Until(last.Done.Add(wait)).Round(100*time.Millisecond))
		return true, sleepUntil(ctx, last.Done.Add(wait))
	}
	lastOf := func(os []obs, fallback obs) obs {
		if len(os) == 0 {
			return fallback
		}
		return os[len(os)-1]
	}

	// A's refill: the quota back after a full reset (and spent again)
	if ok, err := waitReset("refill"); err != nil {
		return err
	} else if ok && d.q > 0 {
		d.aWaited = time.Since(last.Done)
		obs, _, err := p.burst(ctx, id("A"), int(d.q+d.q/2+1))
		d.aRefill = obs
		d.record(obs...)
		if err != nil {
			return err
		}
		last = lastOf(obs, last)
	}
	// Retry-After: the refusal that ends it, polled until admitted
	if last.refused() {
		d.e = []obs{last}
		if err := d.pollRetry(ctx, p, id("E"), last); err != nil {
			return err
		}
		last = lastOf(d.ePoll, last)
	} else {
		e, err := p.exhaust(ctx, id("E"), d.q, d.exhaustCap())
		d.e = e
		d.record(e...)
		if err != nil {
			return err
		}
		if le, ok := lastRefusal(e); ok {
			if err := d.pollRetry(ctx, p, id("E"), le); err != nil {
				return err
			}
		}
		last = lastOf(d.ePoll, lastOf(e, last))
	}
	// reset, C: from a full quota, one request, a burst before its reset
	if ok, err := waitReset(CheckReset); err != nil {
		return err
	} else if ok {
		var err error
		if d.c, err = p.send(ctx, id("C")); err != nil {
			return err
		}
		d.record(d.c)
		if when, ok := d.beforeReset(p); ok {
			if err := sleepUntil(ctx, when); err != nil {
				return err
			}
			d.cAt = time.Since(d.c.Done)
			obs, _, err := p.burst(ctx, id("C"), int(d.q))
			d.cBurst = obs
			d.record(obs...)
			if err != nil {
				return err
			}
			last = lastOf(obs, d.c)
		} else {
			last = d.c
		}
	}
	// reset, D: from a full quota, one request, a burst after its reset
	if ok, err := waitReset(CheckReset); err != nil {
		return err
	} else if ok {
		var err error
		if d.d, err = p.send(ctx, id("D")); err != nil {
			return err
		}
		d.record(d.d)
		if when, ok := d.afterReset(p); ok {
			if err := sleepUntil(ctx, when); err != nil {
				return err
			}
			d.dAt = time.Since(d.d.Done)
			obs, _, err := p.burst(ctx, id("D"), int(d.q))
			d.dBurst = obs
			d.record(obs...)
			if err != nil {
				return err
			}
			last = lastOf(obs, d.d)
		} else {
			last = d.d
		}
	}
	// client-IP spoofing, from a full quota
	if ok, err := waitReset(CheckSpoofing); err != nil {
		return err
	} else if ok {
		return d.spoof(ctx, p)
	}
	return nil
}

// awaitFull waits, when the shared quota's reset cannot be read, until
// the quota is back: single requests ever further apart until one passes
// (the time t one unit of quota takes to come back, at most), then q x t
// more so a refilling bucket is full too, within --max-wait and
// --max-time. It returns why the phase cannot run ("" when it can).
func (d *data) awaitFull(ctx context.Context, p *prober, last obs) (string, error) {
	step := 50 * time.Millisecond
	from := last.Done
	for {
		if time.Since(from) > p.o.MaxWait {
			return fmt.Sprintf("the identities share one quota whose reset is not announced, and no request passed again within --max-wait (%s)", p.o.MaxWait), nil
		}
		if err := p.sleepUntil(ctx, time.Now().Add(step)); err != nil {
			if errors.Is(err, errTime) {
				return "the identities share one quota whose reset is not announced, and --max-time passed while waiting for it", nil
			}
			return "", err
		}
		ob, err := p.send(ctx, "")
		if err != nil {
			if errors.Is(err, errBudget) || errors.Is(err, errTime) {
				return "the identities share one quota whose reset is not announced, and the budget or --max-time ran out while polling for it", nil
			}
			return "", err
		}
		d.record(ob)
		if ob.admitted() {
			back := ob.Done.Sub(from)
			q := max(d.q, 1)
			full := min(time.Duration(q)*back, p.o.MaxWait)
			if time.Now().Add(full).After(p.deadline) {
				return "the identities share one quota whose reset is not announced; waiting for all of it to come back would pass --max-time", nil
			}
			d.notes = append(d.notes, fmt.Sprintf("the shared quota's reset is not announced: a request passed again %s after the refusal; waited %s more for the whole quota", back.Round(time.Millisecond), full.Round(time.Millisecond)))
			p.progress("reset unknown: quota back after %s; waiting %s for all of it", back.Round(10*time.Millisecond), full.Round(100*time.Millisecond))
			return "", sleepUntil(ctx, time.Now().Add(full))
		}
		step = min(step*3/2, time.Second)
	}
}

// beforeReset is when C's burst goes: before C's announced reset by more
// than its rounding and half a second, so a full quota then means the
// reset overstated the wait. ok is false when the reset is too short for
// that, or beyond --max-wait.
func (d *data) beforeReset(p *prober) (time.Time, bool) {
	tc, round, ok := resetOf(d.c)
	if !ok || tc < round+time.Second || !d.c.admitted() || d.q <= 0 {
		return time.Time{}, false
	}
	at := tc - round - 500*time.Millisecond
	if at > p.o.MaxWait {
		return time.Time{}, false
	}
	return d.c.Done.Add(at), true
}

// afterReset is when D's burst goes: just after D's announced reset.
func (d *data) afterReset(p *prober) (time.Time, bool) {
	td, _, ok := resetOf(d.d)
	if !ok || !d.d.admitted() || d.q <= 0 {
		return time.Time{}, false
	}
	at := td + 150*time.Millisecond
	if at > p.o.MaxWait {
		return time.Time{}, false
	}
	return d.d.Done.Add(at), true
}

// pollRetry follows a refusal's Retry-After: after "0", one retry at once
// (the client's very next move); after a delay, polls until admitted.
func (d *data) pollRetry(ctx context.Context, p *prober, identity string, ref obs) error {
	ra, err := header.CheckRetryAfter(ref.Header, ref.Done)
	if err != nil {
		return nil
	}
	if ra.Zero() {
		// the client's very next move, and again after each refusal
		// that says 0: a retry admitted because the quota came back
		// just then is luck, not proof, so up to zeroRetries moves are
		// sampled, stopping at the first refused one
		prev := ref
		for range zeroRetries {
			ob, err := p.send(ctx, identity)
			if err != nil {
				return err
			}
			d.eRetries = append(d.eRetries, retryAtOnce{Ref: prev, Retry: ob})
			d.record(ob)
			if ob.refused() {
				if ra, err := header.CheckRetryAfter(ob.Header, ob.Done); err != nil || !ra.Zero() || prev.refused() {
					return nil
				}
			}
			prev = ob
		}
		return nil
	}
	if ra.Delay <= 0 || ra.Delay > p.o.MaxWait {
		return nil
	}
	deadline := ref.Done.Add(ra.Delay + 2*time.Second)
	step := min(max(ra.Delay/20, 20*time.Millisecond), 250*time.Millisecond)
	for time.Now().Before(deadline) {
		if err := sleepUntil(ctx, time.Now().Add(step)); err != nil {
			return err
		}
		ob, err := p.send(ctx, identity)
		if err != nil {
			return err
		}
		d.ePoll = append(d.ePoll, ob)
		d.record(ob)
		if ob.admitted() || ob.Err != nil {
			break
		}
	}
	return nil
}

var spoofHeaders = []string{"X-Forwarded-For", "X-Real-IP", "Forwarded", "True-Client-IP"}

// spoofAttempts is how many requests each spoofed address sends, and as
// many controls without the header go with them in the same burst: more
// than the refill can admit while the burst is in flight (measured on
// identity A's burst), by half the quota (3 to 50).
func (d *data) spoofAttempts() int {
	refill, _ := d.burstTolerance(d.a)
	return int(min(refill+max(d.q/2, 3), 50))
}

// spoof runs requests without identity until refused, then, for each
// client-IP header, one burst in which controls without the header and
// attempts with one made-up address are all in flight at once: both
// share whatever the refill gives while it is in flight, so a bypass
// shows as attempts admitted beyond that, while the controls are not.
func (d *data) spoof(ctx context.Context, p *prober) error {
	anon, err := p.exhaust(ctx, "", d.q, d.exhaustCap())
	d.anon = anon
	d.record(anon...)
	if err != nil {
		return err
	}
	if !refusedAny(anon) {
		return nil
	}
	k := d.spoofAttempts()
	for n, h := range spoofHeaders {
		ip := fmt.Sprintf("203.0.113.%d", n+1)
		v := ip
		if h == "Forwarded" {
			v = "for=" + ip
		}
		try := spoofTry{Header: h, From: lastDone(anon)}
		if len(d.spoofs) > 0 {
			try.From = lastDone(append(d.spoofs[len(d.spoofs)-1].Controls, d.spoofs[len(d.spoofs)-1].Attempts...))
		}
		// one burst, controls and attempts interleaved: whatever the
		// refill gives goes to either alike
		both, _, err := p.burstEach(ctx, "", 2*k, func(i int) []string {
			if i%2 == 1 {
				return []string{h, v}
			}
			return nil
		})
		d.record(both...)
		if err != nil {
			return err
		}
		for _, o := range both {
			if o.Spoof != "" {
				try.Attempts = append(try.Attempts, o)
			} else {
				try.Controls = append(try.Controls, o)
			}
		}
		d.spoofs = append(d.spoofs, try)
	}
	return nil
}

func statusText(o obs) string {
	if o.Err != nil {
		return "error: " + secret.Redact(o.Err.Error())
	}
	return fmt.Sprintf("%d", o.Status)
}

// limitOf reads the remaining quota and the reset from h: RateLimit's r
// and t in whichever draft (see header.Inspect), or the legacy fields
// (an epoch reset turned into seconds from now); legacy is true for the
// latter.
func limitOf(h http.Header, now time.Time) (r, t int64, legacy, ok bool) {
	in := header.Inspect(http.StatusOK, h, now)
	if in.HasLimit && in.LimitErr == nil && len(in.Limits) > 0 {
		return in.Limits[0].Remaining, in.Limits[0].Reset, false, true
	}
	if l, lok := header.ParseLegacy(h); lok && l.Remaining >= 0 {
		if d, _, ok := l.Until(now); ok {
			return l.Remaining, int64(math.Ceil(d.Seconds())), true, true
		}
		return l.Remaining, -1, true, true
	}
	return 0, 0, false, false
}

// resetOf is the reset a response announces, and the rounding it carries:
// RateLimit's t in any draft (whole seconds, rounded up: 1 s), or a legacy
// reset (delta seconds: 1 s; a Unix time in whole seconds, read against
// the response's arrival: 2 s; a decimal Unix time: 1 s).
func resetOf(o obs) (reset, rounding time.Duration, ok bool) {
	in := header.Inspect(http.StatusOK, o.Header, o.Done)
	if in.HasLimit && in.LimitErr == nil && len(in.Limits) > 0 {
		if in.Limits[0].Reset < 0 {
			return 0, 0, false
		}
		return time.Duration(in.Limits[0].Reset) * time.Second, time.Second, true
	}
	if l, lok := header.ParseLegacy(o.Header); lok {
		return l.Until(o.Done)
	}
	return 0, 0, false
}
