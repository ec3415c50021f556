package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// data is everything the phases saw, for the checks to judge.
type data struct {
	q      int64         // quota, 0 unknown
	w      time.Duration // window, 0 unknown
	policy string        // where q and w came from

	a       []obs // identity A until its first refusal
	aRefill []obs // A again, one window after it ran out
	aWaited time.Duration
	e       []obs // identity E until its first refusal
	ePoll   []obs // E polled until admitted
	b       obs   // a fresh identity B right after A ran out
	anonMid obs   // a request without identity right after A ran out
	anon    []obs // requests without identity until refused
	spoofs  []obs // spoofing attempts after anon ran out
	c, d    obs   // first requests of C and D (reset)
	cBurst  []obs // C before its reset passed
	cAt     time.Duration
	dBurst  []obs // D after its reset passed
	dAt     time.Duration
	skipped map[string]string // check -> why it could not run
	all     []obs             // every response, in order
	peer    string            // the probe's address as the target sees it
}

// Run probes o.URL. It returns an exit-3 error when the target cannot be
// reached at all, an exit-2 error for bad options, and otherwise a Result
// whose Verdict is fail when any check failed.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	client := o.Client
	if client == nil {
		client = newClient(o.Timeout)
		defer client.CloseIdleConnections()
	}
	p := &prober{o: o, client: client, budget: math.MaxInt}
	if o.Budget > 0 {
		p.budget = o.Budget
	}
	method := o.Method
	if method == "" {
		method = http.MethodGet
	}
	res := Result{Header: doc.Header{Kind: Kind, Version: Version}, Target: secret.URL(o.URL), Method: method, Checks: []Check{}}
	start := time.Now()
	res.StartedAt = start
	id := func(letter string) string { return "probe-" + o.RunID + "-" + letter }

	first, err := p.send(ctx, id("A"))
	if err != nil {
		return res, err
	}
	if first.Err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, exitcode.Unreachablef("target %s could not be reached: %v", secret.URL(o.URL), secret.Redact(first.Err.Error()))
	}
	d := &data{skipped: map[string]string{}}
	d.learnPolicy(first.Header, o)
	if o.Budget == 0 {
		p.budget = DefaultBudget(d.q)
	}
	res.Budget = p.budget
	res.Policy = Policy{Quota: d.q, WindowMs: float64(d.w) / float64(time.Millisecond), Source: d.policy}
	p.progress("policy %s; budget %d requests", d.policyText(), p.budget)

	err = d.collect(ctx, p, id, first)
	if err != nil && !errors.Is(err, errBudget) {
		return res, err
	}
	if errors.Is(err, errBudget) {
		d.skipped["*"] = fmt.Sprintf("the request budget (%d) ran out before this check could run; raise --budget", p.budget)
	}
	res.Requests = p.sent
	res.Peer = p.peer
	d.peer = p.peer
	res.Checks = d.judge(o)
	res.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	res.Verdict = Pass
	for _, c := range res.Checks {
		if c.Status == Fail {
			res.Verdict = Fail
		}
	}
	return res, nil
}

// learnPolicy reads q and w from the first response, or from o.
func (d *data) learnPolicy(h http.Header, o Options) {
	if o.Quota > 0 {
		d.q, d.w, d.policy = o.Quota, o.Window, "--expect"
		return
	}
	if ps, err := header.ParsePolicies(header.PolicyLines(h)); err == nil && len(ps) > 0 {
		d.q, d.w, d.policy = ps[0].Quota, time.Duration(ps[0].Window)*time.Second, header.NamePolicy
		return
	}
	if l, ok := header.ParseLegacy(h); ok && l.Limit > 0 {
		d.q, d.policy = l.Limit, l.Prefix+"Limit"
	}
}

func (d *data) policyText() string {
	switch {
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
	return int(min(2*d.q+10, 500_000))
}

// collect runs the phases. The waits (a window for the refill, the reset
// times of C and D) are scheduled together after the quick phases, so the
// probe takes about one window.
func (d *data) collect(ctx context.Context, p *prober, id func(string) string, first obs) error {
	record := func(os ...obs) { d.all = append(d.all, os...) }
	d.a = []obs{first}
	record(first)
	if first.admitted() {
		more, err := p.exhaust(ctx, id("A"), d.exhaustCap()-1)
		d.a = append(d.a, more...)
		record(more...)
		if err != nil {
			return err
		}
	}
	last := d.a[len(d.a)-1]
	if last.Err != nil {
		return exitcode.Unreachablef("target %s stopped answering: %v", secret.URL(p.o.URL), secret.Redact(last.Err.Error()))
	}
	limited := last.refused() && len(d.a) > 1
	p.progress("identity A: %d admitted, then %s", len(d.a)-btoi(last.refused()), statusText(last))
	if !limited {
		return nil // nothing more to learn: the checks say why
	}
	t0 := last.Done

	// isolation, right after A ran out
	var err error
	if d.b, err = p.send(ctx, id("B")); err != nil {
		return err
	}
	record(d.b)
	if d.anonMid, err = p.send(ctx, ""); err != nil {
		return err
	}
	record(d.anonMid)

	// reset: the first requests of C and D, and when to look again
	if d.c, err = p.send(ctx, id("C")); err != nil {
		return err
	}
	record(d.c)
	if d.d, err = p.send(ctx, id("D")); err != nil {
		return err
	}
	record(d.d)

	// Retry-After: E until refused, then poll until admitted
	e, err := p.exhaust(ctx, id("E"), d.exhaustCap())
	d.e = e
	record(e...)
	if err != nil {
		return err
	}
	if le := e[len(e)-1]; le.refused() {
		if ra, rerr := header.CheckRetryAfter(le.Header, le.Done); rerr == nil && ra.Delay > 0 {
			deadline := le.Done.Add(ra.Delay + 2*time.Second)
			step := min(max(ra.Delay/20, 20*time.Millisecond), 250*time.Millisecond)
			for time.Now().Before(deadline) {
				if err := sleepUntil(ctx, time.Now().Add(step)); err != nil {
					return err
				}
				ob, err := p.send(ctx, id("E"))
				if err != nil {
					return err
				}
				d.ePoll = append(d.ePoll, ob)
				record(ob)
				if ob.admitted() || ob.Err != nil {
					break
				}
			}
		}
	}

	// client-IP spoofing: without identity until refused, then rotate the
	// client-IP headers
	anon, err := p.exhaust(ctx, "", d.exhaustCap())
	d.anon = anon
	record(anon...)
	if err != nil {
		return err
	}
	if la := anon[len(anon)-1]; la.refused() {
		n := 0
		for _, h := range spoofHeaders {
			for range 2 {
				n++
				ip := fmt.Sprintf("203.0.113.%d", n)
				v := ip
				if h == "Forwarded" {
					v = "for=" + ip
				}
				ob, err := p.send(ctx, "", h, v)
				if err != nil {
					return err
				}
				d.spoofs = append(d.spoofs, ob)
				record(ob)
			}
		}
	}

	// the waits: C just before its reset, D just after, A one window on
	type event struct {
		at  time.Time
		run func() error
	}
	var events []event
	if tc, round, ok := resetOf(d.c); ok && tc >= round+time.Second && d.c.admitted() && d.q > 0 {
		// before the reset by more than its rounding: the quota must not be full yet
		at := tc - round - 500*time.Millisecond
		if at <= p.o.MaxWait {
			events = append(events, event{d.c.Done.Add(at), func() error {
				d.cAt = time.Since(d.c.Done)
				obs, _, err := p.burst(ctx, id("C"), int(d.q))
				d.cBurst = obs
				record(obs...)
				return err
			}})
		}
	}
	if td, _, ok := resetOf(d.d); ok && d.d.admitted() && d.q > 0 {
		at := td + 150*time.Millisecond
		if at <= p.o.MaxWait {
			events = append(events, event{d.d.Done.Add(at), func() error {
				d.dAt = time.Since(d.d.Done)
				obs, _, err := p.burst(ctx, id("D"), int(d.q))
				d.dBurst = obs
				record(obs...)
				return err
			}})
		}
	}
	if d.q > 0 && d.w > 0 {
		if d.w <= p.o.MaxWait {
			events = append(events, event{t0.Add(d.w + 150*time.Millisecond), func() error {
				d.aWaited = time.Since(t0)
				obs, _, err := p.burst(ctx, id("A"), int(d.q+d.q/2+1))
				d.aRefill = obs
				record(obs...)
				return err
			}})
		}
	}
	sort.Slice(events, func(i, j int) bool { return events[i].at.Before(events[j].at) })
	for _, ev := range events {
		p.progress("waiting %s", time.Until(ev.at).Round(100*time.Millisecond))
		if err := sleepUntil(ctx, ev.at); err != nil {
			return err
		}
		if err := ev.run(); err != nil {
			return err
		}
	}
	return nil
}

var spoofHeaders = []string{"X-Forwarded-For", "X-Real-IP", "Forwarded", "True-Client-IP"}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func statusText(o obs) string {
	if o.Err != nil {
		return "error: " + secret.Redact(o.Err.Error())
	}
	return fmt.Sprintf("%d", o.Status)
}

// limitOf reads the remaining quota and the reset from h: RateLimit's r
// and t, or the legacy fields (an epoch reset turned into seconds from
// now); legacy is true for the latter.
func limitOf(h http.Header, now time.Time) (r, t int64, legacy, ok bool) {
	if ls, err := header.ParseLimits(header.LimitLines(h)); err == nil && len(ls) > 0 {
		return ls[0].Remaining, ls[0].Reset, false, true
	}
	if l, lok := header.ParseLegacy(h); lok && l.Remaining >= 0 {
		t := l.Reset
		if l.ResetIsEpoch {
			t = max(l.Reset-now.Unix(), 0)
		}
		return l.Remaining, t, true, true
	}
	return 0, 0, false, false
}

// resetOf is the reset a response announces, and the rounding it carries:
// RateLimit's t (whole seconds, rounded up: 1 s), or a legacy reset (delta
// seconds: 1 s; a Unix time in whole seconds, read against the response's
// arrival: 2 s).
func resetOf(o obs) (reset, rounding time.Duration, ok bool) {
	if ls, err := header.ParseLimits(header.LimitLines(o.Header)); err == nil && len(ls) > 0 {
		if ls[0].Reset < 0 {
			return 0, 0, false
		}
		return time.Duration(ls[0].Reset) * time.Second, time.Second, true
	}
	if l, lok := header.ParseLegacy(o.Header); lok && l.Reset >= 0 {
		if l.ResetIsEpoch {
			return max(time.Unix(l.Reset, 0).Sub(o.Done), 0), 2 * time.Second, true
		}
		return time.Duration(l.Reset) * time.Second, time.Second, true
	}
	return 0, 0, false
}

// judge turns the data into the checks, in CheckIDs order, applying
// --skip and --warn-only.
func (d *data) judge(o Options) []Check {
	checks := []Check{
		d.limitedStatus(), d.retryAfter(), d.retryAfterHonest(), d.headers(), d.reset(),
		d.policyCheck(), d.cacheable(), d.isolation(o), d.spoofing(), d.headersOnSuccess(),
	}
	for i := range checks {
		c := &checks[i]
		if why, ok := d.skipped["*"]; ok && c.Status == Skip && c.Message == "" {
			c.Message = why
		}
		if slices.Contains(o.Skip, c.ID) {
			*c = Check{Check: doc.Check{ID: c.ID, Message: "skipped by --skip " + c.ID}, Status: Skip}
		}
		if c.Status == Fail && slices.Contains(o.WarnOnly, c.ID) {
			c.Status = Warn
			c.Message += " (a warning by --warn-only " + c.ID + ")"
		}
		c.Pass = c.Status == Pass || c.Status == Skip
		c.Warning = c.Status == Warn
		c.Skipped = c.Status == Skip
	}
	return checks
}

func skip(id, why string) Check { return Check{Check: doc.Check{ID: id, Message: why}, Status: Skip} }

// refusal is A's first refusal, when A was limited.
func (d *data) refusal() (obs, bool) {
	if len(d.a) < 2 {
		return obs{}, false
	}
	last := d.a[len(d.a)-1]
	return last, last.refused()
}

func (d *data) admittedA() int {
	n := 0
	for _, o := range d.a {
		if o.admitted() {
			n++
		}
	}
	return n
}

// refusals are every refused response that carried no error.
func (d *data) refusals() []obs {
	var out []obs
	for _, o := range d.all {
		if o.refused() && o.Err == nil {
			out = append(out, o)
		}
	}
	return out
}

func (d *data) limitedStatus() Check {
	c := Check{Check: doc.Check{ID: CheckLimitedStatus}}
	first := d.a[0]
	if !first.admitted() {
		c.Status = Fail
		c.Message = fmt.Sprintf("the first request of a fresh identity was answered %d: the endpoint refuses before any quota is used (or all identities share one exhausted bucket)", first.Status)
		c.Evidence = []string{evidenceLine(first)}
		c.Fix = "point the probe at an endpoint that answers 2xx, and check --identity-header"
		return c
	}
	r, ok := d.refusal()
	if !ok {
		c.Status = Fail
		c.Message = fmt.Sprintf("never limited: %d requests of one identity were all admitted", len(d.a))
		if d.q > 0 {
			c.Message += fmt.Sprintf(" (the advertised quota is %d)", d.q)
		}
		c.Evidence = []string{fmt.Sprintf("%d × %d", len(d.a), first.Status)}
		c.Fix = "put a limiter in front of this endpoint, or check that it keys clients by --identity-header"
		return c
	}
	c.Evidence = []string{fmt.Sprintf("%d admitted, then %s", d.admittedA(), evidenceLine(r))}
	if r.Status == http.StatusTooManyRequests {
		c.Status, c.Message = Pass, fmt.Sprintf("limited with 429 after %d admitted requests", d.admittedA())
		return c
	}
	c.Status = Fail
	why := map[int]string{
		503: "503 means the service is down: clients, proxies and load balancers retry at once, elsewhere, or mark the backend unhealthy",
		500: "500 reads as a server bug: clients retry and monitoring pages someone",
		403: "403 says the client may never do this: clients give up instead of waiting",
	}[r.Status]
	if why == "" {
		why = "only 429 tells clients they are being limited and should wait"
	}
	c.Message = fmt.Sprintf("limited with %d, not 429: %s", r.Status, why)
	c.Fix = "answer 429 Too Many Requests (RFC 6585) when the limiter refuses"
	return c
}

func (d *data) retryAfter() Check {
	c := Check{Check: doc.Check{ID: CheckRetryAfter}}
	refs := d.refusals()
	if len(refs) == 0 {
		return skip(c.ID, "no refusal to inspect")
	}
	bad := 0
	var first string
	for _, o := range refs {
		if _, err := header.CheckRetryAfter(o.Header, o.Done); err != nil {
			bad++
			if first == "" {
				first = err.Error()
			}
		}
	}
	if bad > 0 {
		c.Status = Fail
		c.Message = fmt.Sprintf("%d of %d refusals lack a valid Retry-After: %s", bad, len(refs), strings.TrimPrefix(first, header.ErrInvalid.Error()+": "))
		c.Evidence = []string{evidenceLine(refs[0])}
		c.Fix = "send Retry-After with the seconds until the quota returns, rounded up, at least 1"
		return c
	}
	c.Status = Pass
	c.Message = fmt.Sprintf("all %d refusals carry a valid Retry-After (e.g. %s)", len(refs), refs[0].Header.Get(header.NameRetryAfter))
	return c
}

// retryAfterSlack is how much later than Retry-After the quota may return
// before a client that waits exactly Retry-After counts as refused: the
// polling step and a round trip.
const retryAfterSlack = 300 * time.Millisecond

func (d *data) retryAfterHonest() Check {
	c := Check{Check: doc.Check{ID: CheckRetryAfterHonest}}
	if len(d.e) == 0 || !d.e[len(d.e)-1].refused() {
		return skip(c.ID, "identity E was not limited")
	}
	ref := d.e[len(d.e)-1]
	ra, err := header.CheckRetryAfter(ref.Header, ref.Done)
	if err != nil || ra.Delay <= 0 {
		return skip(c.ID, "no valid Retry-After to judge (see retry-after)")
	}
	if len(d.ePoll) == 0 {
		return skip(c.ID, "no polling requests were sent")
	}
	lastPoll := d.ePoll[len(d.ePoll)-1]
	c.Evidence = []string{fmt.Sprintf("Retry-After %s on %s", ref.Header.Get(header.NameRetryAfter), evidenceLine(ref)),
		fmt.Sprintf("%d polls every %s", len(d.ePoll), pollStep(d.ePoll, ref))}
	if !lastPoll.admitted() {
		c.Status = Fail
		c.Message = fmt.Sprintf("Retry-After said %s, but the quota had not returned %s after the refusal: clients that wait as told are refused again and hammer the limiter",
			ra.Delay.Round(time.Millisecond), lastPoll.Sent.Sub(ref.Done).Round(time.Millisecond))
		c.Fix = "compute Retry-After from the limiter's own retry time, rounded up to whole seconds"
		return c
	}
	measured := lastPoll.Sent.Sub(ref.Done)
	c.Evidence = append(c.Evidence, fmt.Sprintf("first admitted %s after the refusal", measured.Round(time.Millisecond)))
	// Retry-After is whole seconds rounded up: up to 1 s more than the
	// measured wait is honest, plus the polling slack.
	switch {
	case measured > ra.Delay+retryAfterSlack:
		c.Status = Fail
		c.Message = fmt.Sprintf("too short: Retry-After %s, but the quota returned only after %s; a client waiting as told is refused again",
			ra.Delay, measured.Round(time.Millisecond))
		c.Fix = "compute Retry-After from the limiter's own retry time, rounded up to whole seconds"
	case ra.Delay > measured+time.Second+retryAfterSlack:
		c.Status = Fail
		c.Message = fmt.Sprintf("too long: Retry-After %s, but the quota returned after %s; clients wait far longer than they must",
			ra.Delay, measured.Round(time.Millisecond))
		c.Fix = "compute Retry-After from the limiter's own retry time, rounded up to whole seconds"
	default:
		c.Status = Pass
		c.Message = fmt.Sprintf("Retry-After %s, quota back after %s (tolerance: rounding up to whole seconds, plus %s)",
			ra.Delay, measured.Round(time.Millisecond), retryAfterSlack)
	}
	return c
}

func pollStep(polls []obs, ref obs) time.Duration {
	if len(polls) == 0 {
		return 0
	}
	return (polls[len(polls)-1].Sent.Sub(ref.Done) / time.Duration(len(polls))).Round(time.Millisecond)
}

func (d *data) headers() Check {
	c := Check{Check: doc.Check{ID: CheckHeaders}}
	var bad []string
	standard, legacy := 0, 0
	for _, o := range d.all {
		if o.Err != nil {
			continue
		}
		in := header.Inspect(o.Status, o.Header, o.Done)
		if in.HasPolicy || in.HasLimit {
			standard++
		} else if in.HasLegacy {
			legacy++
		}
		for _, e := range []error{in.PolicyErr, in.LimitErr} {
			if e != nil {
				bad = append(bad, e.Error())
			}
		}
		if o.Status == http.StatusTooManyRequests {
			if r, _, _, ok := limitOf(o.Header, o.Done); ok && r != 0 {
				bad = append(bad, fmt.Sprintf("a 429 says %d remaining (r must be 0 when refused)", r))
			}
		}
	}
	// r falls by one per admitted request of A (the refill during the
	// burst may give some back)
	prev := int64(-1)
	var prevT time.Time
	for _, o := range d.a {
		r, _, _, ok := limitOf(o.Header, o.Done)
		if !ok || !o.admitted() {
			continue
		}
		if prev >= 0 {
			refill := int64(0)
			if d.q > 0 && d.w > 0 {
				refill = int64(math.Ceil(float64(d.q) * o.Done.Sub(prevT).Seconds() / d.w.Seconds()))
			}
			if r > prev-1+refill || r < prev-1-1 {
				bad = append(bad, fmt.Sprintf("r went from %d to %d across one admitted request", prev, r))
			}
		}
		prev, prevT = r, o.Done
	}
	switch {
	case len(bad) > 0:
		c.Status = Fail
		c.Message = fmt.Sprintf("%d problems; first: %s", len(bad), bad[0])
		c.Evidence = firstN(bad, 3)
		c.Fix = "send RateLimit-Policy: \"name\";q=Q;w=W and RateLimit: \"name\";r=R;t=T as the IETF draft defines them"
	case standard == 0 && legacy == 0:
		c.Status = Fail
		c.Message = "no RateLimit, RateLimit-Policy or X-RateLimit-* headers on any response: clients cannot pace themselves"
		c.Fix = "send RateLimit-Policy and RateLimit (IETF draft) on every response"
	case standard == 0:
		c.Status = Warn
		c.Message = fmt.Sprintf("only legacy X-RateLimit-* headers (%d responses); they parse, but the IETF RateLimit fields are the standard", legacy)
		c.Fix = "add RateLimit-Policy and RateLimit next to the legacy fields"
	default:
		c.Status = Pass
		c.Message = fmt.Sprintf("RateLimit fields parse on %d responses, r <= q, r falls by one per admitted request and is 0 on 429", standard)
	}
	return c
}

func firstN(xs []string, n int) []string {
	if len(xs) > n {
		return append(slices.Clone(xs[:n]), fmt.Sprintf("and %d more", len(xs)-n))
	}
	return xs
}

func (d *data) reset() Check {
	c := Check{Check: doc.Check{ID: CheckReset}}
	tc, roundC, okc := resetOf(d.c)
	td, _, okd := resetOf(d.d)
	if d.c.Header == nil || (!okc && !okd) {
		if _, ok := d.refusal(); !ok {
			return skip(c.ID, "the endpoint was not limited")
		}
		return skip(c.ID, "no reset time (RateLimit t or X-RateLimit-Reset) to judge")
	}
	if d.q <= 0 {
		return skip(c.ID, "the quota is unknown: pass --expect to judge the reset")
	}
	var fails, evidence []string
	if len(d.cBurst) > 0 {
		n := countAdmitted(d.cBurst)
		evidence = append(evidence, fmt.Sprintf("identity C: reset %s after its first request; %d of %d admitted %s later", tc, n, len(d.cBurst), d.cAt.Round(time.Millisecond)))
		if n >= int(d.q) {
			fails = append(fails, fmt.Sprintf("the reset said %s, but the whole quota (%d) was back after %s, sooner than its rounding (%s) allows: it overstates the wait", tc, d.q, d.cAt.Round(time.Millisecond), roundC))
		}
	}
	if len(d.dBurst) > 0 {
		n := countAdmitted(d.dBurst)
		evidence = append(evidence, fmt.Sprintf("identity D: reset %s after its first request; %d of %d admitted %s later", td, n, len(d.dBurst), d.dAt.Round(time.Millisecond)))
		if n < int(d.q) {
			fails = append(fails, fmt.Sprintf("the reset said %s, but %s later only %d of %d were admitted: it understates the wait", td, d.dAt.Round(time.Millisecond), n, d.q))
		}
	}
	c.Evidence = evidence
	switch {
	case len(fails) > 0:
		c.Status = Fail
		c.Message = strings.Join(fails, "; ")
		c.Fix = "send t as the seconds until the full quota is back, counting down (not a constant)"
	case len(evidence) == 0:
		return skip(c.ID, fmt.Sprintf("the reset (%s) is too short to check before it passes, or longer than --max-wait", max(tc, td)))
	default:
		c.Status = Pass
		c.Message = "the quota was full again when t said, and not sooner (tolerance: 1 s of rounding)"
	}
	return c
}

func countAdmitted(os []obs) int {
	n := 0
	for _, o := range os {
		if o.admitted() {
			n++
		}
	}
	return n
}

func (d *data) policyCheck() Check {
	c := Check{Check: doc.Check{ID: CheckPolicy}}
	if d.q <= 0 {
		return skip(c.ID, "no advertised policy (RateLimit-Policy) and no --expect")
	}
	ref, ok := d.refusal()
	if !ok {
		return skip(c.ID, "the endpoint was not limited")
	}
	burst := d.admittedA()
	elapsed := ref.Done.Sub(d.a[0].Sent)
	tol := int64(1)
	if d.w > 0 {
		tol += int64(math.Ceil(float64(d.q) * elapsed.Seconds() / d.w.Seconds()))
	}
	var fails []string
	c.Evidence = []string{fmt.Sprintf("identity A: %d admitted in %s before the first refusal (advertised q=%d, tolerance ±%d for refill and rounding)", burst, elapsed.Round(time.Millisecond), d.q, tol)}
	if diff := int64(burst) - d.q; diff > tol || -diff > tol {
		fails = append(fails, fmt.Sprintf("the burst was %d, the policy advertises %d", burst, d.q))
	}
	if len(d.aRefill) > 0 {
		n := countAdmitted(d.aRefill)
		send := d.aRefill[len(d.aRefill)-1].Done.Sub(d.aRefill[0].Sent)
		tol2 := int64(1) + int64(math.Ceil(float64(d.q)*send.Seconds()/d.w.Seconds()))
		c.Evidence = append(c.Evidence, fmt.Sprintf("identity A again %s later: %d of %d admitted (expected %d ±%d)", d.aWaited.Round(time.Millisecond), n, len(d.aRefill), d.q, tol2))
		if diff := int64(n) - d.q; diff > tol2 || -diff > tol2 {
			fails = append(fails, fmt.Sprintf("one window (%s) after running out, %d were admitted, the policy advertises %d per window", d.w, n, d.q))
		}
	}
	if len(fails) > 0 {
		c.Status = Fail
		c.Message = strings.Join(fails, "; ") + ": the headers describe a policy the limiter does not enforce"
		c.Fix = "advertise the limiter's real quota and window in RateLimit-Policy (or fix the limiter)"
		return c
	}
	c.Status = Pass
	c.Message = fmt.Sprintf("burst %d and refill match q=%d", burst, d.q)
	if d.w > 0 {
		c.Message += fmt.Sprintf(" per %s", d.w)
	}
	if len(d.aRefill) == 0 && d.w > 0 {
		c.Message += fmt.Sprintf("; the window (%s) is longer than --max-wait, so the refill was not measured", d.w)
	}
	return c
}

func (d *data) cacheable() Check {
	c := Check{Check: doc.Check{ID: CheckCacheable}}
	var notes []string
	n429 := 0
	for _, o := range d.all {
		if o.Status != http.StatusTooManyRequests {
			continue
		}
		n429++
		switch level, why := header.Cache429(o.Header); level {
		case header.CacheBad:
			c.Status = Fail
			c.Message = "a 429 may be cached: " + why
			c.Evidence = []string{evidenceLine(o)}
			c.Fix = "send Cache-Control: no-store on every 429"
			return c
		case header.CacheNote:
			notes = append(notes, why)
		}
	}
	switch {
	case n429 == 0:
		return skip(c.ID, "no 429 to inspect")
	case len(notes) > 0:
		c.Status = Warn
		c.Message = fmt.Sprintf("%d of %d 429s: %s", len(notes), n429, notes[0])
		c.Fix = "send Cache-Control: no-store on every 429"
	default:
		c.Status = Pass
		c.Message = fmt.Sprintf("all %d 429s carry Cache-Control: no-store", n429)
	}
	return c
}

func (d *data) isolation(o Options) Check {
	c := Check{Check: doc.Check{ID: CheckIsolation}}
	if _, ok := d.refusal(); !ok {
		return skip(c.ID, "the endpoint was not limited")
	}
	c.Evidence = []string{"fresh identity B right after A ran out: " + evidenceLine(d.b), "no identity right after A ran out: " + evidenceLine(d.anonMid)}
	if !d.b.admitted() {
		c.Status = Fail
		c.Message = fmt.Sprintf("a fresh %s was refused right after another ran out: identities share one quota", o.identityName())
		c.Fix = fmt.Sprintf("key the limiter by the client's identity (%s), not by a global or per-address bucket; or pass --identity-header", o.identityName())
		return c
	}
	if !d.anonMid.admitted() {
		c.Status = Warn
		c.Message = fmt.Sprintf("a request without %s was refused right after identity A ran out: anonymous requests may share the quota of identified ones", o.identityName())
		c.Fix = "give requests without an identity their own per-address quota"
		return c
	}
	c.Status = Pass
	c.Message = fmt.Sprintf("a fresh %s has its own quota, and so do requests without one", o.identityName())
	return c
}

func (d *data) spoofing() Check {
	c := Check{Check: doc.Check{ID: CheckSpoofing}}
	if len(d.anon) == 0 {
		return skip(c.ID, "the endpoint was not limited")
	}
	if !d.anon[len(d.anon)-1].refused() {
		return skip(c.ID, fmt.Sprintf("requests without an identity were not limited (%d admitted)", len(d.anon)))
	}
	var fresh []string
	for _, o := range d.spoofs {
		if o.admitted() {
			name, _, _ := strings.Cut(o.Spoof, ":")
			if !slices.Contains(fresh, name) {
				fresh = append(fresh, name)
			}
		}
	}
	c.Evidence = []string{fmt.Sprintf("no identity: %d admitted, then refused; %d attempts with rotated %s", countAdmitted(d.anon), len(d.spoofs), strings.Join(spoofHeaders, ", "))}
	if len(fresh) > 0 {
		c.Status = Fail
		c.Message = fmt.Sprintf("rotating %s gave fresh quota to a client at %s whose own had run out: the limiter trusts a client-IP header from this peer, so any client that reaches the service the way the probe did can bypass it",
			strings.Join(fresh, ", "), d.peerOr())
		c.Fix = "take the client address from the peer, or only from the hop your own proxy appends (trust exactly the proxies you run)"
		return c
	}
	c.Status = Pass
	c.Message = "rotating X-Forwarded-For, X-Real-IP, Forwarded and True-Client-IP gave no fresh quota"
	return c
}

// peerOr is the probe's address as the target saw it, when known.
func (d *data) peerOr() string {
	if d.peer != "" {
		return d.peer
	}
	return "the probe's address"
}

func (d *data) headersOnSuccess() Check {
	c := Check{Check: doc.Check{ID: CheckHeadersOnSuccess}}
	has := func(h http.Header) bool {
		_, legacy := header.ParseLegacy(h)
		return len(header.PolicyLines(h)) > 0 || len(header.LimitLines(h)) > 0 || legacy
	}
	refused, admitted, admittedWith := false, 0, 0
	for _, o := range d.all {
		switch {
		case o.refused() && has(o.Header):
			refused = true
		case o.admitted():
			admitted++
			if has(o.Header) {
				admittedWith++
			}
		}
	}
	switch {
	case !refused:
		return skip(c.ID, "no refusal carried RateLimit headers to compare with")
	case admittedWith < admitted:
		c.Status = Warn
		c.Message = fmt.Sprintf("%d of %d admitted responses lack the RateLimit headers that refusals carry: clients cannot slow down before they are refused", admitted-admittedWith, admitted)
		c.Fix = "send RateLimit-Policy and RateLimit on every response, not only on 429"
	default:
		c.Status = Pass
		c.Message = fmt.Sprintf("all %d admitted responses carry the RateLimit headers", admitted)
	}
	return c
}

// evidenceLine is one response in a line: status and the limiter's headers.
func evidenceLine(o obs) string {
	if o.Err != nil {
		return "error: " + secret.Redact(o.Err.Error())
	}
	parts := []string{fmt.Sprintf("%d", o.Status)}
	for _, name := range []string{header.NameRetryAfter, header.NameRateLimit, header.NamePolicy, "Cache-Control", "Etag"} {
		if v := o.Header.Values(name); len(v) > 0 {
			parts = append(parts, name+": "+strings.Join(v, ", "))
		}
	}
	if o.Spoof != "" {
		parts = append(parts, "(sent "+o.Spoof+")")
	}
	return strings.Join(parts, "; ")
}
