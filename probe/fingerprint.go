package probe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// A fingerprint names a black-box limiter's algorithm and parameters from
// outside. Constant arrivals cannot tell a sliding log from a fixed window
// (both admit alike), so the probe sends arrivals designed to: a burst
// from a fresh key (the quota), single requests polled after it (the
// refill's rate or the window's end), a burst as soon as one is back (all
// of it, or one), a burst after a full drain (nginx's burst + 1 for a new
// key, burst after), refused requests kept up (do refusals count?), a
// burst straddling the end of a key's first window (fixed, sliding log or
// weighted counter?) and one straddling a clock boundary (are windows on
// the clock?). Every candidate model is then replayed over every request
// sent; those that decide every request as the target did (at its send or
// at its answer) fit, ranked; the nearest misses say which request ruled
// them out.

// The fingerprint document.
const (
	FingerprintKind    = "fingerprint"
	FingerprintVersion = 1
	// CheckFingerprint: at least one model fits every observation.
	CheckFingerprint = "fingerprint"
)

// Fingerprint is the fingerprint document (kind "fingerprint").
type Fingerprint struct {
	doc.Header
	Target    string  `json:"target"`
	Method    string  `json:"method"`
	Peer      string  `json:"peer,omitempty"`
	ElapsedMs float64 `json:"elapsed_ms"`
	// Policy is the hint the candidates were built from: RateLimit-Policy,
	// --expect, or what the first burst and the refill showed.
	Policy   Policy `json:"policy"`
	Requests int    `json:"requests"`
	Budget   int    `json:"budget"`
	// Phases are the designed arrivals, each with what it saw.
	Phases []Phase `json:"phases"`
	// Fits are the models that decide every request as the target did,
	// best first; Equivalent says when some of them cannot be told apart
	// from outside.
	Fits       []Candidate `json:"fits"`
	Equivalent string      `json:"equivalent,omitempty"`
	// NearMisses are the models that failed on the fewest requests, with
	// the request that ruled each out.
	NearMisses []Candidate `json:"near_misses"`
	Candidates int         `json:"candidates"` // models tried
	// Observations are every request sent and its answer, in send
	// order: the evidence every fit and miss was judged on.
	Observations []Observation `json:"observations"`
	Notes        []string      `json:"notes,omitempty"`
	Checks       []doc.Check   `json:"checks"`
	// Verdict is pass (something fits), fail (nothing fits), or
	// undecided (nothing refused, the refill never seen, most requests
	// unanswered: no model can be named from that; the decided check
	// says why)
	Verdict string `json:"verdict"`
}

// Phase is one designed group of arrivals.
type Phase struct {
	Name     string  `json:"name"`
	Identity string  `json:"identity"`
	Why      string  `json:"why"`
	Sent     int     `json:"sent"`
	Admitted int     `json:"admitted"`
	StartMs  float64 `json:"start_ms"` // after the first request
	EndMs    float64 `json:"end_ms"`
}

// Observation is one request of the fingerprint.
type Observation struct {
	Phase    string  `json:"phase"`
	Identity string  `json:"identity"`
	SentMs   float64 `json:"sent_ms"` // after the first request
	DoneMs   float64 `json:"done_ms"`
	Status   int     `json:"status"` // 0: no answer (a transport error)
	// Batch is the burst the request went out in (released at once with
	// the others of its batch); 0 for a request sent on its own.
	Batch int `json:"batch,omitempty"`
}

// Candidate is one model and how it fared.
type Candidate struct {
	Model       string `json:"model"` // a load --expect spec
	Description string `json:"description"`
	// Mismatches counts the requests the model decides otherwise than the
	// target, at the send and at the answer alike; Exact is true when it
	// agrees at every send.
	Mismatches int    `json:"mismatches"`
	Exact      bool   `json:"exact"`
	RuledOutBy string `json:"ruled_out_by,omitempty"`
	// odd ranks the fits: how many of its parameters are not round
	// numbers or disagree with the advertised policy
	odd int
}

// CheckList is the fingerprint's one check.
func (f Fingerprint) CheckList() []doc.Check { return f.Checks }

// Pass reports whether some model fits.
func (f Fingerprint) Pass() bool { return f.Verdict == Pass }

// DocHeader returns the envelope, for cmd to stamp.
func (f *Fingerprint) DocHeader() *doc.Header { return &f.Header }

// shot is one request of the fingerprint and what came back.
type shot struct {
	obs
	phase string
	key   string // the identity
}

// fp runs one fingerprint.
type fp struct {
	p      *prober
	d      *data // policy hints
	id     func(string) string
	mu     sync.Mutex
	shots  []shot
	phases []Phase
	start  time.Time
	notes  []string
	// shared: the identities share one quota (keyed by address)
	shared bool
	// cut says why the phases stopped early (the budget, --max-time)
	cut string
	// unmeasured: with no policy advertised, the first request after the
	// refusals passed, so the refill could not be timed
	unmeasured bool
	// bare counts the admissions served without the limiter's decision
	// (no RateLimit field where the others carry one): not judged
	bare int
	// windowLo and windowHi bound a window measured end to end (no
	// policy said it): the round windows between them are candidates
	windowLo, windowHi time.Duration
	// refillFrom is when the burst the refill is timed from began
	refillFrom time.Time
}

func (f *fp) add(phase, why, key string, os []obs) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ph := Phase{Name: phase, Identity: key, Why: why, Sent: len(os), Admitted: count(os)}
	if len(os) > 0 {
		ph.StartMs = msSince(f.start, os[0].Sent)
		ph.EndMs = msSince(f.start, os[len(os)-1].Done)
	}
	f.phases = append(f.phases, ph)
	for _, o := range os {
		f.shots = append(f.shots, shot{obs: o, phase: phase, key: key})
	}
}

func msSince(t0, t time.Time) float64 { return float64(t.Sub(t0).Microseconds()) / 1000 }

// RunFingerprint fingerprints o.URL's limiter. Errors as Run's.
func RunFingerprint(ctx context.Context, o Options) (Fingerprint, error) {
	p, method, done, err := newProber(o)
	if err != nil {
		return Fingerprint{}, err
	}
	defer done()
	o = p.o
	res := Fingerprint{Header: doc.Header{Kind: FingerprintKind, Version: FingerprintVersion}, Target: secret.URL(o.URL), Method: method,
		Phases: []Phase{}, Fits: []Candidate{}, NearMisses: []Candidate{}, Observations: []Observation{}, Checks: []doc.Check{}}
	f := &fp{p: p, id: func(l string) string { return "fp-" + o.RunID + "-" + l }, start: time.Now()}
	res.StartedAt = f.start

	first, err := p.first(ctx, f.id("A"))
	if err != nil {
		return res, err
	}
	f.d = &data{skipped: map[string]string{}}
	f.d.learnPolicy(first.Header, o)
	p.budget = o.Budget
	if p.budget == 0 {
		p.budget = FingerprintBudget(f.d.q)
	}
	maxTime := o.MaxTime
	if maxTime == 0 {
		maxTime = DefaultMaxTime(f.d.w)
	}
	p.deadline = f.start.Add(maxTime)
	res.Budget = p.budget
	undecided := ""
	if first.refused() {
		// a fresh identity refused: the quota is shared (keyed by
		// address) and something spent it, perhaps a probe just before;
		// wait for a request to pass and start from there
		waited, err := f.awaitQuota(ctx, first)
		switch {
		case errors.Is(err, errBudget) || errors.Is(err, errTime) || err == nil && waited.refused():
			undecided = fmt.Sprintf("every request was refused (%d, from the first of a fresh identity on) and none passed again within --max-wait (%s), the budget and --max-time: nothing to fingerprint from", first.Status, o.MaxWait)
		case err != nil:
			return res, err
		default:
			f.notes = append(f.notes, fmt.Sprintf("a fresh identity's first request was refused: the quota is shared and was spent; the fingerprint began %s later, when a request passed again", waited.Sent.Sub(first.Sent).Round(10*time.Millisecond)))
			first = waited
			f.start = first.Sent
			res.StartedAt = f.start
		}
	}
	if undecided != "" {
		res.Requests, res.Peer = p.sent, p.peer
		res.Notes = f.notes
		res.ElapsedMs = msSince(f.start, time.Now())
		res.Checks = []doc.Check{doc.Undecided(undecided)}
		res.Verdict = doc.VerdictOf(res.Checks)
		return res, nil
	}
	err = f.collect(ctx, first)
	switch {
	case errors.Is(err, errBudget):
		f.cut = fmt.Sprintf("the request budget (%d) ran out", p.budget)
	case errors.Is(err, errTime):
		f.cut = fmt.Sprintf("--max-time (%s) passed", maxTime)
	case err != nil:
		return res, err
	}
	if f.cut != "" {
		f.notes = append(f.notes, f.cut+": the later phases did not run, so fewer models are ruled out")
	}
	res.Requests, res.Peer = p.sent, p.peer
	res.Phases = f.phases
	res.Policy = Policy{Quota: f.d.q, WindowMs: float64(f.d.w) / float64(time.Millisecond), Source: f.d.policy}
	cands := f.candidates()
	res.Candidates = len(cands)
	res.Observations = f.observations()
	f.failedOpen()
	judged := f.judged() - f.bare
	if f.bare > 0 {
		f.notes = append(f.notes, fmt.Sprintf("%d admitted responses carried no RateLimit field while the others did: a limiter failing open (serving without a decision when its store misses the deadline) answered them; they were not judged", f.bare))
	}
	if why := f.undecided(judged); why != "" {
		res.Notes = f.notes
		res.ElapsedMs = msSince(f.start, time.Now())
		res.Checks = []doc.Check{doc.Undecided(why)}
		res.Verdict = doc.VerdictOf(res.Checks)
		return res, nil
	}
	f.judge(&res, cands)
	if n, ev := f.instances(); n >= 2 {
		f.notes = append(f.notes, judge.InstancesFinding(n, ev))
	}
	res.Notes = f.notes
	res.ElapsedMs = msSince(f.start, time.Now())
	c := doc.Check{ID: CheckFingerprint, Pass: len(res.Fits) > 0}
	if c.Pass {
		c.Message = fmt.Sprintf("%s fits every one of the %d requests judged", res.Fits[0].Description, judged)
		if n := len(f.shots) - judged; n > 0 {
			c.Message += fmt.Sprintf(" (%d got no answer or no decision and were not judged)", n)
		}
		if len(res.Fits) > 1 {
			c.Message += fmt.Sprintf(" (and %d more models)", len(res.Fits)-1)
		}
	} else {
		c.Message = fmt.Sprintf("none of %d models fits every request", len(cands))
		if len(res.NearMisses) > 0 {
			c.Message += fmt.Sprintf("; the nearest, %s, misses %d: %s", res.NearMisses[0].Description, res.NearMisses[0].Mismatches, res.NearMisses[0].RuledOutBy)
		}
		if n, ev := f.instances(); n >= 2 {
			c.Message += "; " + judge.InstancesFinding(n, ev)
		}
	}
	res.Checks = []doc.Check{c}
	res.Verdict = doc.VerdictOf(res.Checks)
	return res, nil
}

// judged counts the requests that got an answer: the only ones a model
// is judged on.
func (f *fp) judged() int {
	n := 0
	for _, s := range f.shots {
		if s.Err == nil {
			n++
		}
	}
	return n
}

// undecided says why the fingerprint cannot name a model ("" when it
// can): most requests got no answer, nothing was refused, or the budget
// or time cut the run before the quota was seen to come back.
func (f *fp) undecided(judged int) string {
	if n := len(f.shots) - judged; n > len(f.shots)/2 {
		return fmt.Sprintf("%d of %d requests got no answer (or an admission without the limiter's decision): too few answers to judge any model on", n, len(f.shots))
	}
	refused, back := false, false
	for _, s := range f.shots {
		if s.refused() && s.Err == nil {
			refused = true
		}
		if refused && s.admitted() {
			back = true
		}
	}
	switch {
	case !refused && f.cut != "":
		return f.cut + " before anything was refused: no model can be told from no limiter"
	case !refused:
		return fmt.Sprintf("nothing was refused: all %d requests (bursts in flight at once) were admitted, so no model can be told from no limiter at this load; the quota is above the probe's cap, or there is no limiter (raise --budget)", judged)
	case f.unmeasured:
		return "no policy says the window, and the very first request after the refusals was admitted: the refill is faster than the probe can time, or the refusals were not a limit (a target that refuses at random); pass --expect with the policy to judge it"
	case !back && f.cut != "":
		return f.cut + " before any request passed again after the first refusal: the refill, which tells the models apart, was not seen"
	case !back:
		return "no request passed again after the first refusal within --max-wait: the refill, which tells the models apart, was not seen"
	}
	return ""
}

// instances estimates the independent counters behind the address from
// the admissions of the first identity's phases.
func (f *fp) instances() (int, string) {
	var os []obs
	for _, s := range f.shots {
		if s.key == "A" {
			os = append(os, s.obs)
		}
	}
	return f.d.instances(os)
}

// FingerprintBudget is the request budget for a quota q (0: unknown):
// about a dozen quotas and the polling.
func FingerprintBudget(q int64) int {
	if q <= 0 {
		q = unknownQuotaCap / 4
	}
	return int(min(14*q+300, MaxBudget))
}

// quota is the burst the first phase measured, or the advertised quota.
func (f *fp) burstCap() int {
	if f.d.q > 0 {
		return int(min(4*f.d.q+10, MaxQuotaExhausted))
	}
	return unknownQuotaCap
}

// collect runs the phases. A's run (burst, refill, burst, drain, burst)
// goes first; the straddles and the refusal run are on identities of
// their own, side by side, so the whole takes about two windows.
func (f *fp) collect(ctx context.Context, first obs) error {
	p := f.p
	a, err := f.spend(ctx, first)
	f.add("burst", "a burst from a fresh key: the quota at once", "A", a)
	if err != nil {
		return err
	}
	b := count(a)
	if b == len(a) {
		f.notes = append(f.notes, fmt.Sprintf("a burst of %d was never refused: the limiter is looser than the probe's cap, or there is none", len(a)))
		return nil
	}
	// isolation: a fresh identity right after A ran out. Refused, the
	// identities share one quota (a limiter keyed by address): the
	// phases then run one after another, and every request is replayed
	// on one key.
	iso, err := p.send(ctx, f.id("B"))
	if err != nil {
		return err
	}
	f.shared = iso.refused()
	f.add("isolation", "one request from a fresh identity right after the burst ran out: its own quota, or one shared by address", "B", []obs{iso})
	if f.shared {
		f.notes = append(f.notes, "a fresh identity was refused right after the burst: the identities share one quota (a limiter keyed by address), so the phases ran one after another")
	}
	if f.d.q <= 0 {
		f.d.q, f.d.policy = int64(b), "the first burst"
	}
	// the refill: single requests, further and further apart, until one
	// passes, then the next one
	const refillWhy = "single requests after the burst, ever further apart, until three pass: the refill's rate, or the window's end"
	poll, err := f.pollUntil(ctx, "A", lastDone(a), 3, false)
	guessed := f.d.w <= 0
	if err == nil && guessed && len(poll) > 0 && poll[0].admitted() {
		// the very first request after the refusals passed: a refill
		// faster than the probe can time, or a window's end (windows on
		// the clock end where they will) fell right after the burst. The
		// quota is spent once more and the refill timed from there: the
		// next end is a whole window away
		f.add("refill-early", refillWhy+"; the first passed at once, so the burst ran again", "A", poll)
		f.notes = append(f.notes, "the first request after the refusals passed at once (a window's end right after the burst, or a refill faster than the probe can time): the quota was spent once more and the refill timed from there")
		a, err = f.spend(ctx)
		f.add("burst-again", "the quota spent once more, the refill timed from here", "A", a)
		if err != nil {
			return err
		}
		poll, err = f.pollUntil(ctx, "A", lastDone(a), 3, false)
	}
	if len(a) > 0 {
		f.refillFrom = a[0].Sent
	}
	f.add("refill", refillWhy, "A", poll)
	if err != nil {
		return err
	}
	firstBack := -1
	for i, o := range poll {
		if o.admitted() {
			firstBack = i
			break
		}
	}
	if firstBack < 0 {
		f.notes = append(f.notes, "no request passed again within the probe's wait: the refill phases did not run")
		return nil
	}
	back := poll[firstBack].Done.Sub(a[0].Sent)
	if guessed && firstBack == 0 {
		// nothing says how long a window is, and the very first request
		// after the refusals passed: the refill is faster than the probe
		// can time, or the refusals were no limit at all (a random
		// admitter); no model can be named from that
		f.unmeasured = true
		return nil
	}
	if guessed {
		f.d.w = back.Round(100 * time.Millisecond)
	}
	after, _, err := p.burst(ctx, f.id("A"), b+2)
	f.add("after-refill", "a burst as soon as a request passed again: all of the quota back (a window's end), or a few (a refill)", "A", after)
	if err != nil {
		return err
	}
	// the refill's rate, from the first two requests that passed again
	var ratePerS float64
	var passed []obs
	for _, o := range poll {
		if o.admitted() {
			passed = append(passed, o)
		}
	}
	// the first pass may come late (the polling was sparse by then);
	// the next ones were polled 20 ms apart, so their gap is the rate's
	if len(passed) > 2 {
		if gap := passed[2].Sent.Sub(passed[1].Sent); gap > 0 {
			ratePerS = 1 / gap.Seconds()
		}
	} else if len(passed) > 1 {
		if gap := passed[1].Sent.Sub(passed[0].Sent); gap > 0 {
			ratePerS = 1 / gap.Seconds()
		}
	}
	// the quota back at once: what the burst got and what the polling
	// took since the first request passed again
	if guessed && count(after)+len(passed) >= b-1 {
		// the whole quota came back at once, so a window ended; with no
		// policy to say how long windows are, time the next one from
		// this one's end
		next, err := f.pollUntil(ctx, "A", lastDone(after), 1, true)
		f.add("next-window", "single requests until the quota is back again: one window's length, end to end", "A", next)
		if err != nil {
			return err
		}
		// each window's end lies between the last refused request and
		// the first admitted one; the window is the distance between two
		// ends, within these bounds
		b1lo, b1hi := boundary(poll, firstBack, lastObs(a))
		for i, o := range next {
			if o.admitted() {
				b2lo, b2hi := boundary(next, i, lastObs(after))
				f.windowLo, f.windowHi = b2lo.Sub(b1hi), b2hi.Sub(b1lo)
				f.d.w = ((f.windowLo + f.windowHi) / 2).Round(100 * time.Millisecond)
				break
			}
		}
	} else if guessed && ratePerS > 0 {
		f.d.w = time.Duration(float64(b) / ratePerS * float64(time.Second)).Round(100 * time.Millisecond)
	}
	// a full drain, then a burst: nginx gives burst + 1 to a new key and
	// burst after draining; a bucket gives its capacity both times
	drain := max(f.d.w, back) + 300*time.Millisecond
	if ratePerS > 0 {
		drain = max(drain, time.Duration(float64(b)/ratePerS*float64(time.Second))+300*time.Millisecond)
	}
	if err := f.wait(ctx, lastDone(after), drain); err != nil {
		return err
	}
	again, _, err := p.burst(ctx, f.id("A"), b+2)
	f.add("after-drain", "a burst once everything drained: the capacity again, or one less (a leaky bucket's key is not new any more)", "A", again)
	if err != nil {
		return err
	}

	rest := []func(context.Context, int) error{f.refusalsCount, f.straddleFirst, f.straddleClock}
	if f.shared {
		// one quota: each phase after a full drain, one after another
		last := lastDone(again)
		for _, run := range rest {
			if err := f.wait(ctx, last, drain); err != nil {
				return err
			}
			if err := run(ctx, b); err != nil {
				return err
			}
			last = f.lastDone()
		}
		return nil
	}
	// the rest side by side, each on its own identity
	var wg sync.WaitGroup
	errs := make(chan error, len(rest))
	for _, run := range rest {
		wg.Go(func() { errs <- run(ctx, b) })
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// spend sends A's requests until the quota is spent: waves in flight at
// once, up to the probe's cap, and a few more once one was refused. The
// burst goes on from lead (the first request, on the first burst).
func (f *fp) spend(ctx context.Context, lead ...obs) ([]obs, error) {
	a := lead
	more, err := f.p.exhaust(ctx, f.id("A"), f.d.q, f.burstCap()-len(a))
	a = append(a, more...)
	// and a few more refused, so the quota is surely spent
	if err == nil && refusedAny(a) {
		extra, _, e := f.p.burst(ctx, f.id("A"), 3)
		a, err = append(a, extra...), e
	}
	return a, err
}

// lastDone is when the latest answer so far came back.
func (f *fp) lastDone() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var t time.Time
	for _, s := range f.shots {
		if s.Done.After(t) {
			t = s.Done
		}
	}
	return t
}

// lastDone is when the last of os was answered (requests in flight
// together are answered in any order).
func lastDone(os []obs) time.Time { return lastObs(os).Done }

// lastObs is the request of os answered last.
func lastObs(os []obs) obs {
	last := os[0]
	for _, o := range os[1:] {
		if o.Done.After(last.Done) {
			last = o
		}
	}
	return last
}

// boundary bounds when the quota came back before polls[i], the first
// admitted poll: after the send of the refused request before it (a poll,
// or before for the first), and before its answer.
func boundary(polls []obs, i int, before obs) (lo, hi time.Time) {
	lo = before.Sent
	if i > 0 {
		lo = polls[i-1].Sent
	}
	return lo, polls[i].Done
}

// observations are the shots in send order, as the document keeps them.
func (f *fp) observations() []Observation {
	shots := slices.Clone(f.shots)
	sort.SliceStable(shots, func(i, j int) bool { return shots[i].Sent.Before(shots[j].Sent) })
	out := make([]Observation, 0, len(shots))
	for _, s := range shots {
		out = append(out, Observation{Phase: s.phase, Identity: s.key, SentMs: msSince(f.start, s.Sent), DoneMs: msSince(f.start, s.Done), Status: s.Status, Batch: s.Batch})
	}
	return out
}

// awaitQuota polls single requests of identity A, ever further apart,
// until one passes or --max-wait passes; it returns the last answer.
func (f *fp) awaitQuota(ctx context.Context, refused obs) (obs, error) {
	step := 50 * time.Millisecond
	last := refused
	for time.Since(refused.Done) < f.p.o.MaxWait {
		if err := sleepUntil(ctx, last.Done.Add(step)); err != nil {
			return last, err
		}
		o, err := f.p.send(ctx, f.id("A"))
		if err != nil {
			return last, err
		}
		last = o
		if o.admitted() {
			return o, nil
		}
		step = min(time.Duration(float64(step)*1.4), 2*time.Second)
	}
	return last, nil
}

// wait sleeps until d after t, unless that passes --max-wait or
// --max-time (errTime).
func (f *fp) wait(ctx context.Context, t time.Time, d time.Duration) error {
	if d > f.p.o.MaxWait || !f.p.deadline.IsZero() && t.Add(d).After(f.p.deadline) {
		return errTime
	}
	return sleepUntil(ctx, t.Add(d))
}

// pollUntil sends single requests as identity after t, 20 ms apart at
// first and 1.4 times further apart each time (at most a tenth of the
// window once known), until n have passed or the wait passes --max-wait.
//
// timing says the polling measures a window whose length is not known
// yet: it then waits up to --max-wait, 100 ms apart at most.
func (f *fp) pollUntil(ctx context.Context, key string, t time.Time, n int, timing bool) ([]obs, error) {
	var out []obs
	step := 20 * time.Millisecond
	limit := f.p.o.MaxWait
	if f.d.w > 0 && !timing {
		limit = min(limit, 2*f.d.w+time.Second)
	}
	passed := 0
	next := t
	for time.Since(t) < limit && passed < n {
		next = next.Add(step)
		if err := sleepUntil(ctx, next); err != nil {
			return out, err
		}
		o, err := f.p.send(ctx, f.id(key))
		if err != nil {
			return out, err
		}
		out = append(out, o)
		if o.admitted() {
			passed++
			step = 20 * time.Millisecond // the next one comes at the rate
			next = o.Done
			continue
		}
		if timing {
			step = min(time.Duration(float64(step)*1.4), 100*time.Millisecond)
		} else if f.d.w > 0 {
			step = min(time.Duration(float64(step)*1.4), max(f.d.w/10, 20*time.Millisecond))
		} else {
			// no policy: a window's end found within an eighth of the
			// wait so far, so two ends measure the window
			step = min(time.Duration(float64(step)*1.4), max(100*time.Millisecond, time.Since(t)/8))
		}
	}
	return out, nil
}

// refusalsCount spends a fresh key's quota, keeps sending while refused
// for half a window, waits half a window and sends a burst: a limiter
// that counts its refusals (haproxy, INCR-first scripts) is still closed.
func (f *fp) refusalsCount(ctx context.Context, b int) error {
	burst, _, err := f.p.burst(ctx, f.id("H"), b)
	if err != nil {
		return err
	}
	var hammer []obs
	end := time.Now().Add(f.d.w / 2)
	for time.Now().Before(end) {
		o, err := f.p.send(ctx, f.id("H"))
		if err != nil {
			return err
		}
		hammer = append(hammer, o)
		if err := sleepUntil(ctx, time.Now().Add(max(f.d.w/40, 10*time.Millisecond))); err != nil {
			return err
		}
	}
	f.add("refused-kept-up", "a fresh key's quota spent, then requests kept up while refused", "H", append(burst, hammer...))
	if len(hammer) == 0 {
		return nil
	}
	if err := f.wait(ctx, lastDone(hammer), f.d.w/2+f.d.w/4); err != nil {
		return err
	}
	after, _, err := f.p.burst(ctx, f.id("H"), b+2)
	f.add("after-refusals", "a burst three quarters of a window later: refused if the refusals were counted", "H", after)
	return err
}

// straddleFirst: one request from a fresh key, the rest of its quota just
// before that key's first window ends, a burst just after: a fixed
// window from the first request admits the whole quota again, a sliding
// log one, a weighted counter about none.
func (f *fp) straddleFirst(ctx context.Context, b int) error {
	one, err := f.p.send(ctx, f.id("C"))
	if err != nil {
		return err
	}
	w := f.d.w
	if err := f.wait(ctx, one.Done, w-250*time.Millisecond); err != nil {
		return err
	}
	rest, _, err := f.p.burst(ctx, f.id("C"), b-1)
	if err != nil {
		return err
	}
	if err := f.wait(ctx, one.Done, w+150*time.Millisecond); err != nil {
		return err
	}
	after, _, err := f.p.burst(ctx, f.id("C"), b+2)
	f.add("first-window-edge", "one request, the rest of the quota just before that key's first window ends, a burst just after it", "C", append(append([]obs{one}, rest...), after...))
	return err
}

// straddleClock: a fresh key's quota spent just before a boundary of the
// clock's windows (a multiple of the window in Unix time), a burst just
// after: windows on the clock admit it, windows from the first request
// do not.
func (f *fp) straddleClock(ctx context.Context, b int) error {
	w := f.d.w
	now := time.Now().UnixMilli()
	wm := w.Milliseconds()
	if wm <= 0 {
		return nil
	}
	boundary := (now/wm + 1) * wm
	if boundary-now < 400 {
		boundary += wm
	}
	at := time.UnixMilli(boundary - 300)
	if err := f.wait(ctx, time.Now(), time.Until(at)); err != nil {
		return err
	}
	before, _, err := f.p.burst(ctx, f.id("D"), b)
	if err != nil {
		return err
	}
	if err := sleepUntil(ctx, time.UnixMilli(boundary+150)); err != nil {
		return err
	}
	after, _, err := f.p.burst(ctx, f.id("D"), b+2)
	f.add("clock-edge", "a fresh key's quota spent just before a boundary of the clock's windows, a burst just after", "D", append(before, after...))
	return err
}

// candidates are the models worth trying: every family with the quota
// the first burst showed and the windows and rates the policy and the
// refill suggest.
func (f *fp) candidates() []limiter.Params {
	var b int64
	for _, s := range f.shots {
		if s.phase == "burst" && s.admitted() {
			b++
		}
	}
	if b == 0 {
		return nil
	}
	windows := map[time.Duration]bool{}
	rates := map[string]bool{}
	if f.d.w > 0 {
		windows[f.d.w] = true
		rates[rateText(float64(b)/f.d.w.Seconds())] = true
		if f.d.q > 0 {
			rates[rateText(float64(f.d.q)/f.d.w.Seconds())] = true
		}
	}
	// the refill: the interval between the first two requests that
	// passed again, and the time from the burst's start to the first
	var back []obs
	for _, s := range f.shots {
		if s.phase == "refill" && s.admitted() {
			back = append(back, s.obs)
		}
	}
	if len(back) > 0 && !f.refillFrom.IsZero() {
		windows[back[0].Done.Sub(f.refillFrom).Round(100*time.Millisecond)] = true
	}
	for i := 1; i < len(back) && i < 3; i++ {
		if gap := back[i].Sent.Sub(back[i-1].Sent); gap > 0 {
			rates[rateText(1/gap.Seconds())] = true
		}
	}
	// a rate or window read off the clock is approximate: the round
	// values near it are tried too, and the replay tells which is right
	for rt := range maps.Clone(rates) {
		if r, err := rateParse(rt); err == nil {
			for _, n := range roundRates(r.PerSecond()) {
				rates[n] = true
			}
		}
	}
	for w := range maps.Clone(windows) {
		if s := w.Round(time.Second); s > 0 && absDur(s-w) <= w/5 {
			windows[s] = true
		}
	}
	for _, w := range roundWindows(f.windowLo, f.windowHi) {
		windows[w] = true
	}
	// the quota: what the burst got, the advertised quota, and what the
	// burst got less the refill while it ran at each rate (a slow target
	// answers the burst's first request before the rest go, and a large
	// burst takes a while to work through)
	caps := map[int64]bool{b: true}
	if f.d.q > 0 {
		caps[f.d.q] = true
	}
	refillCaps := f.d.policy != header.NamePolicy // an advertised quota is tried as it is
	var burstLo, burstHi time.Time
	for _, s := range f.shots {
		if s.phase != "burst" {
			continue
		}
		if burstLo.IsZero() || s.Sent.Before(burstLo) {
			burstLo = s.Sent
		}
		if s.Sent.After(burstHi) {
			burstHi = s.Sent
		}
	}
	for rt := range rates {
		if r, err := rateParse(rt); err == nil && refillCaps {
			refill := int64(r.PerSecond() * burstHi.Sub(burstLo).Seconds())
			for k := refill - 1; k <= refill+1; k++ {
				if k > 0 && b-k > 0 {
					caps[b-k] = true
				}
			}
		}
	}
	var out []limiter.Params
	add := func(p limiter.Params) {
		p.Cost = 1
		if p.Validate() == nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for rt := range rates {
		r, err := rateParse(rt)
		if err != nil {
			continue
		}
		for c := range caps {
			add(limiter.Params{Algo: limiter.TokenBucket, Capacity: c, Rate: r})
			add(limiter.Params{Algo: limiter.GCRA, Burst: c, Rate: r})
			add(limiter.Params{Algo: limiter.LeakyBucket, Burst: c - 1, Rate: r})
		}
	}
	for w := range windows {
		if w <= 0 {
			continue
		}
		if f.d.q > 0 && f.d.q != b {
			add(limiter.Params{Algo: limiter.FixedWindow, Limit: f.d.q, Window: w})
			add(limiter.Params{Algo: limiter.FixedWindow, Limit: f.d.q, Window: w, Align: limiter.AlignClock})
			add(limiter.Params{Algo: limiter.SlidingWindow, Limit: f.d.q, Window: w})
		}
		add(limiter.Params{Algo: limiter.FixedWindow, Limit: b, Window: w})
		add(limiter.Params{Algo: limiter.FixedWindow, Limit: b, Window: w, Align: limiter.AlignClock})
		for _, cr := range []bool{false, true} {
			add(limiter.Params{Algo: limiter.SlidingWindow, Limit: b, Window: w, CountRefused: cr})
			for _, round := range []string{limiter.RoundFloor, limiter.RoundNearest, limiter.RoundNone} {
				for _, al := range []string{limiter.AlignClock, limiter.AlignFirst} {
					add(limiter.Params{Algo: limiter.SlidingWindowCounter, Limit: b, Window: w, Round: round, Align: al, CountRefused: cr})
				}
			}
		}
	}
	return out
}

// roundRates are the whole rates per second (or per minute, below one a
// second) within a quarter of perSec: a rate timed by polling is off by a
// poll's step.
func roundRates(perSec float64) []string {
	var out []string
	unit, per := "/s", perSec
	if perSec < 1 {
		unit, per = "/m", perSec*60
	}
	// whole numbers near small rates, round ones near large: 5, 6, 7 for
	// 6.2; 35, 40, ... 55 for 45
	step := math.Max(1, math.Pow(10, math.Floor(math.Log10(per)))/2)
	seen := map[float64]bool{}
	add := func(n float64) {
		if n >= 1 && n >= per*0.75 && n <= per*1.25 && !seen[n] {
			seen[n] = true
			out = append(out, strconv.FormatFloat(n, 'f', 0, 64)+unit)
		}
	}
	add(math.Floor(per))
	add(math.Ceil(per))
	for n := math.Ceil(per*0.75/step) * step; n <= per*1.25; n += step {
		add(n)
	}
	return out
}

// roundWindows are the whole seconds between lo and hi, or when there is
// none, the tenths of a second (at most ten, nearest the middle first).
func roundWindows(lo, hi time.Duration) []time.Duration {
	if lo <= 0 || hi < lo {
		return nil
	}
	var out []time.Duration
	for w := (lo + time.Second - 1).Truncate(time.Second); w <= hi; w += time.Second {
		out = append(out, w)
	}
	if len(out) > 0 {
		return out
	}
	for w := (lo + 100*time.Millisecond - 1).Truncate(100 * time.Millisecond); w <= hi && len(out) < 10; w += 100 * time.Millisecond {
		out = append(out, w)
	}
	return out
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func rateText(perSec float64) string {
	// two significant digits: a rate read off a refill is approximate
	return strconv.FormatFloat(perSec, 'g', 2, 64) + "/s"
}

// judge replays every candidate over the shots, per identity, at the
// sends and at the answers, and ranks them.
func (f *fp) judge(res *Fingerprint, cands []limiter.Params) {
	shots := slices.Clone(f.shots)
	sort.SliceStable(shots, func(i, j int) bool { return shots[i].Sent.Before(shots[j].Sent) })
	var all []Candidate
	for _, p := range cands {
		l, err := limiter.NewLimiter(p)
		if err != nil {
			continue
		}
		c := Candidate{Model: p.Spec(), Description: p.Describe(), Exact: true, odd: f.oddness(p)}
		for _, group := range f.byKey(shots) {
			replayGroup(l, group, &c, f.why)
		}
		all = append(all, c)
	}
	// fits first (exact before those agreeing only between send and
	// answer, then in the registry's order); misses by how few they miss
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.Mismatches != b.Mismatches {
			return a.Mismatches < b.Mismatches
		}
		if a.odd != b.odd {
			return a.odd < b.odd
		}
		return a.Exact && !b.Exact
	})
	// the near misses: the nearest of each family that has no fit first
	// (what rules out a fixed window, a sliding log...), then the nearest
	// of the rest
	family := func(c Candidate) string { a, _, _ := strings.Cut(c.Model, ":"); return a }
	fitted, shown := map[string]bool{}, map[string]bool{}
	for _, c := range all {
		if c.Mismatches == 0 {
			res.Fits = append(res.Fits, c)
			fitted[family(c)] = true
		}
	}
	var rest []Candidate
	for _, c := range all {
		switch {
		case c.Mismatches == 0:
		case !fitted[family(c)] && !shown[family(c)] && len(res.NearMisses) < maxNearMisses:
			res.NearMisses = append(res.NearMisses, c)
			shown[family(c)] = true
		default:
			rest = append(rest, c)
		}
	}
	for _, c := range rest {
		if len(res.NearMisses) < maxNearMisses {
			res.NearMisses = append(res.NearMisses, c)
		}
	}
	res.Equivalent = equivalence(res.Fits)
}

// oddness counts p's parameters that are read off the clock rather than
// round (a window not a whole second, a rate not whole per second or per
// minute) or that disagree with an advertised policy: between models
// that fit alike, the plainer one is what an operator configured.
func (f *fp) oddness(p limiter.Params) int {
	n := 0
	if p.Window > 0 && p.Window%time.Second != 0 {
		n++
	}
	if !p.Rate.IsZero() {
		ps := p.Rate.PerSecond()
		if ps != math.Trunc(ps) && ps*60 != math.Trunc(ps*60) {
			n++
		}
	}
	if f.d.q > 0 && f.d.w > 0 && f.d.policy != "the first burst" {
		l, err := limiter.NewLimiter(p)
		if err == nil {
			if adv := l.Policy(); adv.Quota != f.d.q || time.Duration(adv.WindowSeconds)*time.Second != f.d.w {
				n++
			}
		}
		// a rate other than the advertised quota per window: a policy
		// rounds its window to whole seconds, so 5 + 6/s advertises
		// q=5;w=1 as well as 5 + 5/s does
		if !p.Rate.IsZero() && math.Abs(p.Rate.PerSecond()-float64(f.d.q)/f.d.w.Seconds()) > 1e-9 {
			n++
		}
	}
	return n
}

// byKey groups the shots (in send order) by the quota they spend: one
// group per identity, or one for all when the identities share a quota.
func (f *fp) byKey(shots []shot) [][]shot {
	var keys []string
	groups := map[string][]shot{}
	undecided := f.failedOpen()
	for _, s := range shots {
		if s.Err != nil || undecided(s) {
			continue
		}
		k := s.key
		if f.shared {
			k = ""
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], s)
	}
	out := make([][]shot, 0, len(keys))
	for _, k := range keys {
		out = append(out, groups[k])
	}
	return out
}

// replayGroup replays one key's shots through l's model. The target
// decided each request at some moment between its send and its answer,
// in an order nobody outside sees when requests overlap (a burst sent at
// once), so the shots are replayed in clusters: a cluster is a run of
// requests whose send-to-answer spans overlap or follow each other
// closely (clusterGap), and the question is how many of them the target
// admitted. Each cluster is tried at moments from its first send to its
// last answer (widened by clockSlack), every request at that moment kept
// within its own span. The model fits when some choice of moments, one
// per cluster, admits as many as the target did in every cluster (a
// search: the earliest moments first, earlier clusters revisited when a
// later one cannot be explained, then the latest moments first).
// Otherwise each cluster misses by the
// difference at its nearest moment. Exact is true when every cluster is
// explained at its first send.
func replayGroup(l *limiter.Limiter, group []shot, c *Candidate, why func([]shot, int, int) string) {
	slack := clockSlack.Milliseconds()
	cls := clusters(group)
	wants := make([]int, len(cls))
	for k, cl := range cls {
		for _, s := range cl {
			if s.admitted() {
				wants[k]++
			}
		}
	}
	// place replays history, then cl at moment t (each request kept
	// within its own span and the slack), and says how many it admits
	place := func(history []int64, cl []shot, t moment) ([]int64, int) {
		m, _ := replayed(l, history)
		at := placedAt(history, cl, t, slack) // a model's clock never goes back
		got := 0
		for _, ti := range at {
			if m.Allow(ti, 1).Allowed {
				got++
			}
		}
		return at, got
	}
	// a search for moments that explain every cluster: the first moment
	// that explains a cluster is tried first; when a later cluster cannot
	// be explained, the earlier ones try their other moments, within a
	// budget of placements
	budget := 0
	exact := true
	late := false
	hopeless := false
	var search func(k int, history []int64, atSend bool) bool
	search = func(k int, history []int64, atSend bool) bool {
		if k == len(cls) {
			exact = atSend
			return true
		}
		ms := moments(cls[k], slack)
		if late {
			slices.Reverse(ms)
		}
		nearest := math.MaxInt
		type tried struct {
			m   moment
			at  []int64
			got int
		}
		var spreads []tried // the spreads from the first send, by their end
		for j, t := range ms {
			if budget == 0 || hopeless {
				return false
			}
			budget--
			at, got := place(history, cls[k], t)
			nearest = min(nearest, abs(got-wants[k]))
			if abs(got-wants[k]) <= roundingOf(cls[k]) && search(k+1, append(history[:len(history):len(history)], at...), atSend && j == 0 && !late && got == wants[k]) {
				return true
			}
			if t.split == 0 {
				spreads = append(spreads, tried{t, at, got}) // spreads and instants (a spread of none)
			}
		}
		// a count between two neighbouring spreads' counts is reached by
		// a spread between them: each request's moment moves on
		// continuously as the spread's end does, and the count follows
		// one request at a time (large bursts, whose spreads are tried
		// coarsely); the nearer neighbour stands for it in the history
		slices.SortFunc(spreads, func(a, b tried) int { return cmp.Or(cmp.Compare(a.m.from, b.m.from), cmp.Compare(a.m.to, b.m.to)) })
		for i := 1; i < len(spreads) && len(cls[k]) >= 50; i++ {
			a, b := spreads[i-1], spreads[i]
			// neighbours of one family: the same start, the end moved
			if a.m.from != b.m.from || (wants[k]-a.got)*(wants[k]-b.got) >= 0 || budget == 0 || hopeless {
				continue
			}
			near := a
			if abs(b.got-wants[k]) < abs(a.got-wants[k]) {
				near = b
			}
			budget--
			if search(k+1, append(history[:len(history):len(history)], near.at...), false) {
				return true
			}
		}
		// missed at every moment by more than moving the earlier
		// clusters within their spans could make up: no backtracking
		// (a model far off is ruled out at once, not by the budget)
		if nearest > max(3, len(cls[k])/20) {
			hopeless = true
		}
		return false
	}
	// the earliest moments first, then the latest first: a search that
	// must move an early cluster far back to explain a late one finds it
	// from the other end within its budget
	farOff := false
	for _, late = range []bool{false, true} {
		budget, hopeless = searchBudget, false
		if search(0, nil, true) {
			c.Exact = c.Exact && exact
			return
		}
		farOff = farOff || hopeless
	}
	// no moments explain every cluster: count what the nearest moments
	// miss, cluster by cluster
	misses, ruledOut := 0, ""
	var history []int64
	for k, cl := range cls {
		var best []int64
		bestDiff := math.MaxInt
		for _, t := range moments(cl, slack) {
			at, got := place(history, cl, t)
			if diff := abs(got - wants[k]); diff < bestDiff {
				best, bestDiff = at, diff
			}
			if bestDiff == 0 {
				break
			}
		}
		if bestDiff > 0 {
			misses += bestDiff
			if ruledOut == "" {
				ruledOut = why(cl, wants[k], wants[k]+bestDiff*sign(l, history, cl, best))
			}
		}
		history = append(history, best...)
	}
	// the search went deep on a wrong early choice (the first request's
	// moment sets a bucket's refill for every later one) and spent its
	// budget below it, or gave up on a burst no moment of its own
	// explains where an earlier burst's decisions, spread otherwise, would
	// (a sliding log's entries expire as they were decided): a model that
	// misses only narrowly is tried once more, cluster by cluster,
	// keeping a spread of the placements that explain each so far
	c.Exact = false
	if (!farOff || misses <= nearMiss(len(group))) && beamFits(l, cls, wants, place) {
		return
	}
	c.Mismatches += misses
	if c.RuledOutBy == "" {
		c.RuledOutBy = ruledOut
	}
}

// nearMiss is how many requests a model may miss, counted at each
// cluster's nearest moment, and still be searched again breadth first
// after the depth-first search gave up on it as far off.
func nearMiss(n int) int { return max(6, n/10) }

// beamFits searches moments for cls cluster by cluster, breadth first:
// every placement kept so far is extended by every moment of the next
// cluster that explains it, and of the distinct histories that explain
// every cluster up to there at most beamWidth are kept, spread over the
// states they leave the model in (what it would answer at the next
// cluster's earliest moment: admitted, remaining, retry, reset), so that
// the earliest and the latest ways of explaining so far both survive.
// It says whether some history explains every cluster. Each placement
// replays its history, so the search gives up past beamWork replayed
// decisions, and is not tried for more than beamMaxShots requests (a
// large quota's bursts, explained within their rounding already).
func beamFits(l *limiter.Limiter, cls [][]shot, wants []int, place func([]int64, []shot, moment) ([]int64, int)) bool {
	slack := clockSlack.Milliseconds()
	n := 0
	for _, cl := range cls {
		n += len(cl)
	}
	if n > beamMaxShots {
		return false
	}
	type node struct {
		history []int64
		sig     [4]int64
	}
	frontier := []node{{}}
	work := 0
	for k, cl := range cls {
		var next []node
		for _, parent := range frontier {
			// moments a clamp makes alike (a single request's span) are
			// placed once
			var tried [][]int64
			for _, t := range moments(cl, slack) {
				if work > beamWork {
					return false
				}
				if at := placedAt(parent.history, cl, t, slack); slices.ContainsFunc(tried, func(b []int64) bool { return slices.Equal(at, b) }) {
					continue
				}
				at, got := place(parent.history, cl, t)
				work += len(parent.history) + len(cl)
				tried = append(tried, at)
				if abs(got-wants[k]) > roundingOf(cl) {
					continue
				}
				h := append(parent.history[:len(parent.history):len(parent.history)], at...)
				var sig [4]int64
				if k+1 < len(cls) {
					sig = stateAt(l, h, cls[k+1][0].Sent.UnixMilli()-slack)
					work += len(h)
				}
				next = append(next, node{h, sig})
			}
		}
		if len(next) == 0 {
			return false
		}
		if len(next) > beamWidth {
			slices.SortStableFunc(next, func(a, b node) int { return slices.Compare(a.sig[:], b.sig[:]) })
			kept := make([]node, 0, beamWidth)
			for i := range beamWidth {
				kept = append(kept, next[i*(len(next)-1)/(beamWidth-1)])
			}
			next = kept
		}
		frontier = next
	}
	return true
}

// placedAt is when place would decide each of cl at moment t after
// history: each request kept within its span and the slack, and never
// before the decision before it.
func placedAt(history []int64, cl []shot, t moment, slack int64) []int64 {
	last := int64(math.MinInt64)
	if len(history) > 0 {
		last = history[len(history)-1]
	}
	at := make([]int64, len(cl))
	for i, s := range cl {
		ti := t.at(i, len(cl))
		ti = min(max(ti, s.Sent.UnixMilli()-slack), s.Done.UnixMilli()+slack)
		ti = max(ti, last)
		at[i], last = ti, ti
	}
	return at
}

// stateAt replays history through a fresh model of l and says what it
// would answer a request at ms: its state, in four numbers.
func stateAt(l *limiter.Limiter, history []int64, ms int64) [4]int64 {
	m, last := replayed(l, history)
	d := m.Allow(max(ms, last), 1)
	allowed := int64(0)
	if d.Allowed {
		allowed = 1
	}
	return [4]int64{allowed, d.Remaining, d.RetryMs, d.ResetMs}
}

// replayed is a fresh model of l that has decided history (one unit at
// each moment, in order) and the last of those moments.
func replayed(l *limiter.Limiter, history []int64) (model.Limiter, int64) {
	m := l.Model()
	last := int64(math.MinInt64)
	for _, h := range history {
		m.Allow(h, 1)
		last = h
	}
	return m, last
}

// beamWidth is how many placements beamFits keeps after each cluster:
// a sliding log needed 160 in a run the suite failed (its state at the
// next cluster does not show when its entries expire).
const beamWidth = 200

// beamWork bounds the decisions beamFits replays for one model and one
// identity (about a tenth of a second), beamMaxShots the requests it
// searches.
const (
	beamWork     = 8_000_000
	beamMaxShots = 300
)

// A moment is when a cluster's requests are decided: all at one instant
// (from == to), or spread evenly from one to the other in send order (a
// burst the target takes a while to work through, refilling meanwhile).
//
// With split > 0 the first split requests are decided at from and the
// rest at to: a burst in flight across a window's edge, some decided
// before it and the rest after, in an order nobody outside sees.
type moment struct {
	from, to int64
	split    int
}

// at is when the i-th of n requests is decided.
func (m moment) at(i, n int) int64 {
	switch {
	case m.split > 0 && i < m.split:
		return m.from
	case m.split > 0:
		return m.to
	case n < 2 || m.from == m.to:
		return m.from
	}
	return m.from + (m.to-m.from)*int64(i)/int64(n-1)
}

// moments are the moments a cluster is tried at: its first send, its last
// answer, seven instants between, the slack either side, and, for more
// than one request, spreads from the first send to each quarter and from
// each quarter to the last answer.
func moments(cl []shot, slack int64) []moment {
	lo, hi := cl[0].Sent.UnixMilli(), cl[0].Done.UnixMilli()
	for _, s := range cl {
		lo = min(lo, s.Sent.UnixMilli())
		hi = max(hi, s.Done.UnixMilli())
	}
	out := []moment{{from: lo, to: lo}, {from: hi, to: hi}}
	for k := int64(1); k < 8; k++ {
		t := lo + (hi-lo)*k/8
		out = append(out, moment{from: t, to: t})
	}
	out = append(out, moment{from: lo - slack, to: lo - slack}, moment{from: hi + slack, to: hi + slack})
	if len(cl) > 1 && hi > lo {
		for k := int64(1); k <= 4; k++ {
			out = append(out, moment{from: lo, to: lo + (hi-lo)*k/4})
		}
		// the widest: the clocks' slack either side
		out = append(out, moment{from: lo, to: hi + slack}, moment{from: lo - slack, to: hi + slack})
		for k := int64(1); k < 4; k++ {
			out = append(out, moment{from: lo + (hi-lo)*k/4, to: hi})
		}
		// the splits: some decided at the first send, the rest at the
		// last answer (every split for a small burst, a dozen for a
		// large one)
		n := len(cl)
		step := max(1, n/12)
		for m := step; m < n; m += step {
			out = append(out, moment{from: lo, to: hi, split: m})
		}
	}
	return out
}

// roundingOf is how far a cluster's count may be from the model's at a
// moment and still be explained: 0, or for a burst of 100 or more one
// and one more per 500 requests (the model replays whole milliseconds
// while the target's clock reads microseconds, and the moments tried
// place a large burst's earlier decisions only approximately: over a
// burst of a thousand spread across half a second or more that shifts a
// unit of refill or two; the models' families differ there by hundreds).
func roundingOf(cl []shot) int {
	if len(cl) >= 100 {
		return 1 + len(cl)/500
	}
	return 0
}

// searchBudget bounds the placements one model's search may try: enough
// to revisit the last few clusters' moments, not every combination.
const searchBudget = 3000

// maxNearMisses is how many near misses the document keeps.
const maxNearMisses = 6

// clockSlack widens each request's span by the clocks' disagreement:
// whole milliseconds on both sides, and a server that reads a cached
// clock (nginx reads it once per event-loop turn). The uncertainty of
// when earlier requests were decided is the search's, not a margin: a
// margin added to every cluster would let two of them move towards each
// other by twice its size and blur the edges the phases straddle.
const clockSlack = 10 * time.Millisecond

// clusterGap joins requests sent back to back into one cluster: less
// than the 20 ms between polls.
const clusterGap = 15 * time.Millisecond

// sign is +1 when the model, at the moments kept, admits more of cl than
// the target did, -1 when fewer.
func sign(l *limiter.Limiter, history []int64, cl []shot, at []int64) int {
	m, _ := replayed(l, history)
	got, want := 0, 0
	for i, s := range cl {
		if m.Allow(at[i], 1).Allowed {
			got++
		}
		if s.admitted() {
			want++
		}
	}
	if got < want {
		return -1
	}
	return 1
}

// clusters splits shots (in send order) into the bursts they went out in
// (each released at once by one barrier, however a busy machine spread
// the sends), and runs of requests sent on their own back to back while
// the one before was in flight; any other request is a cluster of its
// own.
func clusters(shots []shot) [][]shot {
	var out [][]shot
	var end time.Time
	for i, s := range shots {
		// one burst (released together, however the machine spread its
		// sends) is one cluster; a request sent on its own joins the
		// one before only while that one is in flight and it went out
		// right after it
		same := i > 0 && (s.Batch != 0 && s.Batch == shots[i-1].Batch ||
			s.Batch == 0 && shots[i-1].Batch == 0 && s.Sent.Before(end) && s.Sent.Sub(shots[i-1].Sent) <= clusterGap)
		if same {
			out[len(out)-1] = append(out[len(out)-1], s)
		} else {
			out = append(out, []shot{s})
			end = time.Time{}
		}
		if s.Done.After(end) {
			end = s.Done
		}
	}
	return out
}

// why says which requests ruled a model out, in the words of their
// phase: the target admitted did of them, the model would admit would.
func (f *fp) why(cl []shot, did, would int) string {
	s := cl[0]
	if len(cl) == 1 {
		done, would1 := "refused", "refuse"
		if did == 1 {
			done = "admitted"
		}
		if would == 1 {
			would1 = "admit"
		}
		return fmt.Sprintf("phase %s (identity %s), the request at +%.2fs: the target %s it; the model would %s it", s.phase, s.key, msSince(f.start, s.Sent)/1000, done, would1)
	}
	return fmt.Sprintf("phase %s (identity %s), %d requests at once at +%.2fs: the target admitted %d; the model would admit %d", s.phase, s.key, len(cl), msSince(f.start, s.Sent)/1000, did, would)
}

// equivalence names the fits that no arrival can tell apart: a token
// bucket of capacity B and rate R, GCRA of burst B and rate R, and
// nginx's leaky bucket of burst B-1 and rate R (nodelay) decide every
// request alike, to the millisecond.
func equivalence(fits []Candidate) string {
	var algos []string
	for _, c := range fits {
		a, _, _ := strings.Cut(c.Model, ":")
		if !slices.Contains(algos, a) {
			algos = append(algos, a)
		}
	}
	var same []string
	for _, a := range []limiter.Algo{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		if slices.Contains(algos, string(a)) {
			same = append(same, string(a))
		}
	}
	if len(same) < 2 {
		return ""
	}
	return strings.Join(same, ", ") + " fit alike: a token bucket of capacity B and rate R, GCRA of burst B and rate R and nginx's leaky bucket of burst B-1 and rate R (nodelay) admit every request alike, so no arrival tells them apart from outside (nginx's delay= mode would, by delaying)"
}

func rateParse(s string) (rate.Rate, error) { return rate.Parse(s) }

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// decided reports whether an admission carries the limiter's decision:
// a RateLimit field (any draft) or the legacy remaining.
func decided(o obs) bool {
	if len(header.LimitLines(o.Header)) > 0 {
		return true
	}
	l, ok := header.ParseLegacy(o.Header)
	return ok && l.Remaining >= 0
}

// failedOpen says which admissions were served without a decision: when
// most admissions carry the limiter's RateLimit field and some do not, a
// limiter that missed its deadline and failed open served those (serve's
// fail-open, a Redis too slow under the bursts); they are not judged,
// like requests without an answer, and the notes say how many.
func (f *fp) failedOpen() func(shot) bool {
	with, without := 0, 0
	for _, s := range f.shots {
		if s.Err != nil || !s.admitted() {
			continue
		}
		if decided(s.obs) {
			with++
		} else {
			without++
		}
	}
	if without == 0 || with < without {
		return func(shot) bool { return false }
	}
	f.bare = without
	return func(s shot) bool { return s.Err == nil && s.admitted() && !decided(s.obs) }
}
