package probe

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// judge turns the data into the checks, in CheckIDs order, applying
// --skip and --warn-only.
func (d *data) judge(o Options) []Check {
	checks := []Check{
		d.limitedStatus(), d.retryAfter(), d.retryAfterHonest(), d.headers(), d.reset(),
		d.policyCheck(), d.cacheable(), d.isolation(o), d.spoofing(), d.headersOnSuccess(),
	}
	for i := range checks {
		c := &checks[i]
		if why, ok := d.skipped[c.ID]; ok && c.Status == Skip && (c.Message == "" || strings.HasPrefix(c.Message, "no ")) {
			c.Message = why
		}
		if d.cut != "" && c.Status == Skip {
			c.Message = d.cut
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

// refusal is A's refusal answered last, when A was limited (its first
// request admitted, a later one refused).
func (d *data) refusal() (obs, bool) {
	if len(d.a) < 2 || !d.a[0].admitted() {
		return obs{}, false
	}
	return lastRefusal(d.a)
}

// burstTolerance is what the refill can add to a burst's admissions
// while it was in flight (from its first send to its last answer), plus
// one for rounding, and that span.
func (d *data) burstTolerance(os []obs) (int64, time.Duration) {
	if len(os) == 0 {
		return 1, 0
	}
	lo, hi := os[0].Sent, os[0].Done
	for _, o := range os {
		if o.Sent.Before(lo) {
			lo = o.Sent
		}
		if o.Done.After(hi) {
			hi = o.Done
		}
	}
	span := hi.Sub(lo)
	tol := int64(1)
	if d.q > 0 && d.w > 0 {
		tol += int64(math.Ceil(float64(d.q) * span.Seconds() / d.w.Seconds()))
	}
	return tol, span
}

// delaying names a limiter that holds requests over its limit instead of
// refusing them (a "slow down" middleware, nginx limit_req without
// nodelay): of identity A's requests, none refused, the ones in flight
// together took the first request's latency up to some count and ever
// longer after it. It returns the finding and its evidence ("" when the
// latencies do not grow so).
func (d *data) delaying() (string, []string) {
	if len(d.a) < 4 || refusedAny(d.a) {
		return "", nil
	}
	base := d.a[0].Done.Sub(d.a[0].Sent)
	var lat []time.Duration
	for _, o := range d.a[1:] {
		if o.Err == nil {
			lat = append(lat, o.Done.Sub(o.Sent))
		}
	}
	slices.Sort(lat)
	margin := max(50*time.Millisecond, base)
	held := 0
	for _, l := range lat {
		if l > base+margin {
			held++
		}
	}
	if held < 3 {
		return "", nil
	}
	fast := len(d.a) - held
	// the step: the median gap between the distinct delays
	var gaps []time.Duration
	for i := len(lat) - held + 1; i < len(lat); i++ {
		if g := lat[i] - lat[i-1]; g > 10*time.Millisecond {
			gaps = append(gaps, g)
		}
	}
	step := time.Duration(0)
	if len(gaps) > 0 {
		slices.Sort(gaps)
		step = gaps[len(gaps)/2]
	}
	most := lat[len(lat)-1] - base
	why := fmt.Sprintf("never refused, but delays: of %d requests of one identity sent at once, %d were answered in about %s and %d were held longer and longer", len(d.a), fast, base.Round(time.Millisecond), held)
	if step > 0 {
		why += fmt.Sprintf(", by about %s each", step.Round(10*time.Millisecond))
	}
	why += fmt.Sprintf(", up to %s: a limiter that slows clients down instead of refusing (a design, not a defect; clients see no 429 and no Retry-After)", most.Round(10*time.Millisecond))
	ev := []string{fmt.Sprintf("latencies: first request %s; the burst's fastest %s, median %s, slowest %s", base.Round(time.Millisecond), lat[0].Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))}
	return why, ev
}

// notRefused says why a run in which nothing was refused decided nothing.
func (d *data) notRefused() string {
	n := len(d.a)
	s := fmt.Sprintf("nothing was refused: %d requests of one identity (in waves, each in flight at once) were all admitted", n)
	if d.q > 0 {
		return s + fmt.Sprintf(", no more than the advertised quota (%d) and its refill explain; raise --budget, or check that the limiter keys clients by --identity-header", d.q)
	}
	return s + "; the quota is larger than that, or there is no limiter: pass --expect with the policy, or raise --budget"
}

// undecided says why the run decided nothing ("" when it did): no check
// failed, and most requests got no answer, or nothing was refused.
func (d *data) undecided(checks []Check) string {
	for _, c := range checks {
		if c.Status == Fail {
			return ""
		}
	}
	if d.unanswered != "" {
		return d.unanswered + ": the target answered too few requests to judge its limiter"
	}
	if why, _ := d.delaying(); why != "" {
		return "" // delays are the limiter's answer: evidence
	}
	if _, ok := d.refusal(); !ok && (len(d.a) == 0 || d.a[0].admitted()) {
		if d.cut != "" {
			return d.cut
		}
		return d.notRefused()
	}
	return ""
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
	if !ok && d.unanswered != "" {
		return skip(c.ID, d.unanswered)
	}
	if !ok {
		// all admitted: evidence of no limit only when more than the
		// advertised quota and the refill during the burst were admitted
		// at once; otherwise the run decided nothing (undecided)
		n := d.admittedA()
		if tol, span := d.burstTolerance(d.a); d.q > 0 && d.cut == "" && int64(n) > d.q+tol {
			c.Status = Fail
			c.Message = fmt.Sprintf("never limited: %d requests of one identity, sent at once, were all admitted (the advertised quota is %d; the refill during the %s they took explains %d more)", n, d.q, span.Round(time.Millisecond), tol)
			c.Evidence = []string{fmt.Sprintf("%d requests of one identity in flight at once, all answered %d", len(d.a), first.Status)}
			c.Fix = "put a limiter in front of this endpoint, or check that it keys clients by --identity-header"
			return c
		}
		if why, ev := d.delaying(); why != "" {
			c.Status, c.Message, c.Evidence = Warn, why, ev
			c.Fix = "if clients should be told to slow down, answer 429 with Retry-After once the quota is spent; a delaying limiter is fine when intended (--warn-only does not apply: this is a warning already)"
			return c
		}
		if d.cut != "" {
			return skip(c.ID, d.cut)
		}
		return skip(c.ID, d.notRefused())
	}
	c.Evidence = []string{fmt.Sprintf("%d admitted, then %s", d.admittedA(), evidenceLine(r))}
	if r.Status == http.StatusTooManyRequests {
		c.Status, c.Message = Pass, fmt.Sprintf("limited with 429 after %d admitted requests", d.admittedA())
		return c
	}
	c.Status = Fail
	if slices.Contains(d.limited, r.Status) {
		c.Status = Warn
	}
	why := map[int]string{
		503: "503 means the service is down: clients, proxies and load balancers retry at once, elsewhere, or mark the backend unhealthy",
		500: "500 reads as a server bug: clients retry and monitoring pages someone",
		403: "403 says the client may never do this: clients give up instead of waiting",
	}[r.Status]
	if why == "" {
		why = "only 429 tells clients they are being limited and should wait"
	}
	c.Message = fmt.Sprintf("limited with %d, not 429: %s", r.Status, why)
	if c.Status == Warn {
		c.Message += fmt.Sprintf(" (a warning: --limited-status declares %d the limiter's refusal)", r.Status)
	}
	c.Fix = "answer 429 Too Many Requests (RFC 6585) when the limiter refuses (nginx: limit_req_status 429)"
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
		c.Fix = "send Retry-After with the whole seconds until the quota returns, rounded up"
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
	c := d.retryAfterE()
	if c.Status == Fail {
		return c
	}
	// every other refusal the probe saw and the next move of the same
	// client after it: told to retry at once, or after a delay that
	// passed, and refused again with nothing admitted between
	if bad, ev, n := d.retryAfterEvery(); bad != "" {
		return Check{Check: doc.Check{ID: CheckRetryAfterHonest, Message: bad}, Status: Fail, Evidence: ev,
			Fix: "send Retry-After with the whole seconds until the quota returns, rounded up (0 only once it is back)"}
	} else if n > 0 {
		if c.Status == Skip {
			c.Status = Pass
			c.Message = fmt.Sprintf("every one of %d retries that waited as a refusal's Retry-After said was admitted", n)
		} else {
			c.Message += fmt.Sprintf("; and every one of %d other retries that waited as told was admitted", n)
		}
	}
	return c
}

// retryAfterEvery judges each refusal the probe saw by the same client's
// next requests: those sent together right after the refusal's answer,
// when they waited at least its Retry-After (plus the polling slack) and
// at most a second more, with nothing of that client admitted between.
// All of them refused is a dishonest Retry-After; bad says the first.
// n is how many refusals were judged so.
func (d *data) retryAfterEvery() (bad string, evidence []string, n int) {
	d.mu.Lock()
	byID := map[string][]obs{}
	for _, o := range d.all {
		if o.Spoof == "" && o.Err == nil {
			k := o.Identity
			if d.shared {
				k = "" // one quota: another identity's admission is between
			}
			byID[k] = append(byID[k], o)
		}
	}
	d.mu.Unlock()
	for _, os := range byID {
		slices.SortStableFunc(os, func(a, b obs) int { return a.Sent.Compare(b.Sent) })
		for i, r := range os {
			if !r.refused() {
				continue
			}
			ra, err := header.CheckRetryAfter(r.Header, r.Done)
			if err != nil || ra.Delay < 0 {
				continue
			}
			// the next requests sent after the refusal's answer, those
			// within clusterGap of the first: one client move
			j := i + 1
			for j < len(os) && os[j].Sent.Before(r.Done) {
				j++
			}
			if j == len(os) {
				continue
			}
			waited := os[j].Sent.Sub(r.Done)
			if waited < ra.Delay || waited > ra.Delay+time.Second+retryAfterSlack {
				continue
			}
			if ra.Delay > 0 && waited < ra.Delay+retryAfterSlack {
				continue
			}
			between := false
			for _, o := range os[i+1 : j] {
				if o.admitted() && o.Done.After(r.Done) {
					between = true
				}
			}
			if between {
				continue
			}
			next := []obs{os[j]}
			for k := j + 1; k < len(os) && os[k].Sent.Sub(os[j].Sent) < clusterGap; k++ {
				next = append(next, os[k])
			}
			n++
			if count(next) > 0 || bad != "" {
				continue
			}
			if ra.Zero() {
				bad = fmt.Sprintf("Retry-After: 0 told the client to retry at once, and the retry %s later was refused: clients that do as told hammer the limiter", waited.Round(time.Millisecond))
			} else {
				bad = fmt.Sprintf("too short: Retry-After %s, but a retry %s after the refusal was refused again", ra.Delay, waited.Round(time.Millisecond))
			}
			evidence = []string{"Retry-After " + r.Header.Get(header.NameRetryAfter) + " on " + evidenceLine(r), fmt.Sprintf("the retry %s later: %s", waited.Round(time.Millisecond), evidenceLine(next[0]))}
		}
	}
	return bad, evidence, n
}

// retryAfterE judges identity E's refusal, polled until admitted.
func (d *data) retryAfterE() Check {
	c := Check{Check: doc.Check{ID: CheckRetryAfterHonest}}
	ref, ok := lastRefusal(d.e)
	if !ok {
		return skip(c.ID, "identity E was not limited")
	}
	ra, err := header.CheckRetryAfter(ref.Header, ref.Done)
	if err != nil {
		return skip(c.ID, "no valid Retry-After to judge (see retry-after)")
	}
	if ra.Zero() {
		return d.retryAtOnce(c)
	}
	if ra.Delay <= 0 {
		return skip(c.ID, "the Retry-After date is already past: nothing to wait for")
	}
	if len(d.ePoll) == 0 {
		return skip(c.ID, "no polling requests were sent")
	}
	lastPoll := d.ePoll[len(d.ePoll)-1]
	c.Evidence = []string{fmt.Sprintf("Retry-After %s on %s", ref.Header.Get(header.NameRetryAfter), evidenceLine(ref)),
		fmt.Sprintf("%d polls every %s", len(d.ePoll), pollStep(d.ePoll, ref))}
	if waited := lastPoll.Sent.Sub(ref.Done); !lastPoll.admitted() && waited < ra.Delay+retryAfterSlack {
		why := d.cut
		if why == "" {
			why = "the polling stopped before the Retry-After had passed"
		}
		return skip(c.ID, fmt.Sprintf("%s (polled %s of Retry-After %s)", why, waited.Round(time.Millisecond), ra.Delay))
	}
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

// retryAtOnce judges E's retries at once after refusals that said
// Retry-After: 0. One refused is a dishonest 0. Admitted, a retry is
// evidence only when it went out sooner than one request's quota comes
// back (half the window over the quota, when the policy says it): a
// slower one would have been admitted whatever the header said.
func (d *data) retryAtOnce(c Check) Check {
	var judged []retryAtOnce
	for _, r := range d.eRetries {
		if ra, err := header.CheckRetryAfter(r.Ref.Header, r.Ref.Done); err == nil && r.Ref.refused() && ra.Zero() {
			judged = append(judged, r)
		}
	}
	if len(judged) == 0 {
		return skip(c.ID, "Retry-After: 0, and no retry was sent")
	}
	fix := "send Retry-After with the whole seconds until the quota returns, rounded up (0 only once it is back)"
	pair := func(r retryAtOnce) []string {
		return []string{"Retry-After 0 on " + evidenceLine(r.Ref), fmt.Sprintf("the retry %s later: %s", r.Retry.Sent.Sub(r.Ref.Done).Round(time.Millisecond), evidenceLine(r.Retry))}
	}
	for _, r := range judged {
		if r.Retry.refused() {
			c.Status, c.Evidence, c.Fix = Fail, pair(r), fix
			c.Message = fmt.Sprintf("Retry-After: 0 told the client to retry at once, and the retry at once (%s later) was refused: clients that do as told hammer the limiter", r.Retry.Sent.Sub(r.Ref.Done).Round(time.Millisecond))
			return c
		}
	}
	unit := time.Duration(0)
	if d.q > 0 && d.w > 0 {
		unit = d.w / time.Duration(d.q)
	}
	var soon []retryAtOnce
	for _, r := range judged {
		if unit == 0 || r.Retry.Sent.Sub(r.Ref.Done) < unit/2 {
			soon = append(soon, r)
		}
	}
	if len(soon) == 0 {
		waited := judged[0].Retry.Sent.Sub(judged[0].Ref.Done)
		return skip(c.ID, fmt.Sprintf("Retry-After: 0, and the retries at once were admitted, but the first went out %s after the refusal, more than half the %s one request's quota takes to come back: too late to tell an honest 0 from a lucky one", waited.Round(time.Millisecond), unit.Round(time.Millisecond)))
	}
	c.Status, c.Evidence = Pass, pair(soon[0])
	c.Message = fmt.Sprintf("Retry-After: 0 (retry at once), which RFC 9110 allows, and each of the %d retries at once was admitted", len(soon))
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
	drafts := map[string]int{}
	var draftExample string
	for _, o := range d.all {
		if o.Err != nil {
			continue
		}
		in := header.Inspect(o.Status, o.Header, o.Done)
		if in.HasPolicy || in.HasLimit {
			standard++
			drafts[in.Draft]++
			if in.Draft != header.DraftCurrent && draftExample == "" {
				draftExample = evidenceLine(o)
			}
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
	// (only across requests sent after every earlier one was answered:
	// requests in flight together are decided in an order nobody sees)
	var prevReset int64 = -1 // the reset the previous answer announced, seconds
	inBurst := false         // the previous admission was one of a burst in flight together
	for i, o := range d.a {
		sequential := alone(d.a, i)
		r, t, _, ok := limitOf(o.Header, o.Done)
		if !ok || !o.admitted() {
			continue
		}
		// a window that the previous answer said ends (t, whole seconds
		// rounded up) before this answer may hand the quota back whole
		windowEnded := prevReset >= 0 && o.Done.Sub(prevT) >= time.Duration(prevReset-1)*time.Second
		if prev >= 0 && sequential && d.perInstance == "" && !windowEnded {
			refill := int64(0)
			if d.q > 0 && d.w > 0 {
				refill = int64(math.Ceil(float64(d.q) * o.Done.Sub(prevT).Seconds() / d.w.Seconds()))
			}
			if r > prev-1+refill || r < prev-1-1 {
				bad = append(bad, fmt.Sprintf("r went from %d to %d across one admitted request", prev, r))
			}
		}
		if !sequential && inBurst && prev >= 0 {
			// answers of one burst come back in any order: the counter
			// stands at the lowest r the burst was told, once all of
			// it is answered
			prev, prevT = min(prev, r), later(prevT, o.Done)
		} else {
			prev, prevT, prevReset = r, o.Done, t
		}
		inBurst = !sequential
	}
	// in one burst in flight at once, one counter hands out each r once
	if d.perInstance == "" {
		if dup := duplicateRemaining(d.a, d.q, d.w); dup != "" {
			bad = append(bad, dup)
		}
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
	case drafts[header.DraftCurrent] < standard:
		old := ""
		for dr, n := range drafts {
			if dr != header.DraftCurrent && (old == "" || n > drafts[old]) {
				old = dr
			}
		}
		c.Status = Warn
		c.Message = fmt.Sprintf("the RateLimit fields parse and agree on %d responses, in %s syntax: valid for that draft, but clients that follow the current draft cannot read them", standard, old)
		c.Evidence = []string{draftExample}
		c.Fix = "send RateLimit-Policy: \"name\";q=Q;w=W and RateLimit: \"name\";r=R;t=T (the current draft; express-rate-limit: standardHeaders: 'draft-8')"
	default:
		c.Status = Pass
		c.Message = fmt.Sprintf("RateLimit fields parse on %d responses, r <= q, r falls by one per admitted request and is 0 on 429", standard)
	}
	return c
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// alone reports whether os[i] was in flight with no other request of os.
func alone(os []obs, i int) bool {
	for j, x := range os {
		if j != i && x.Sent.Before(os[i].Done) && os[i].Sent.Before(x.Done) {
			return false
		}
	}
	return true
}

// duplicateRemaining finds an r value reported by more admissions of one
// burst than the refill while it was in flight explains: one counter
// hands out each remaining value once.
func duplicateRemaining(os []obs, q int64, w time.Duration) string {
	times := map[int64]int{}
	for _, o := range os {
		if r, _, _, ok := limitOf(o.Header, o.Done); ok && o.admitted() {
			times[r]++
		}
	}
	d := &data{q: q, w: w}
	tol, _ := d.burstTolerance(os)
	for r, n := range times {
		if int64(n) > tol+1 {
			return fmt.Sprintf("%d admissions of one burst all said r=%d: each remaining value should come once", n, r)
		}
	}
	return ""
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
	var late string
	if len(d.cBurst) > 0 {
		n := countAdmitted(d.cBurst)
		// the burst's last request, not its first, is what must still
		// be before the reset by more than its rounding
		cEnd := d.cBurst[len(d.cBurst)-1].Sent.Sub(d.c.Done)
		evidence = append(evidence, fmt.Sprintf("identity C: reset %s after its first request; %d of %d admitted %s to %s later", tc, n, len(d.cBurst), d.cAt.Round(time.Millisecond), cEnd.Round(time.Millisecond)))
		switch {
		case cEnd >= tc-roundC:
			// too late to tell: the observation cannot show an early reset
			late = fmt.Sprintf("identity C's burst ran until %s after its first request, within the reset's rounding (%s of %s): it cannot show an early reset", cEnd.Round(time.Millisecond), roundC, tc)
		case n >= int(d.q):
			fails = append(fails, fmt.Sprintf("the reset said %s, but the whole quota (%d) was back %s after the first request, sooner than its rounding (%s) allows: it overstates the wait", tc, d.q, cEnd.Round(time.Millisecond), roundC))
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
		// the fix the defect found calls for: a reset that comes too soon
		// is rounded down (or skewed), one that comes too late is a
		// constant or counts from the wrong start
		var fixes []string
		if strings.Contains(c.Message, "understates") {
			fixes = append(fixes, "round t up to the whole second, never down (a reset floored to the epoch second tells clients to come back too early)")
		}
		if strings.Contains(c.Message, "overstates") {
			fixes = append(fixes, "send t as the seconds until the full quota is back, counting down (not a constant, not the whole window)")
		}
		c.Fix = strings.Join(fixes, "; ")
	case len(evidence) == 0:
		return skip(c.ID, fmt.Sprintf("the reset (%s) is too short to check before it passes, or longer than --max-wait", max(tc, td)))
	case late != "" && len(d.dBurst) == 0:
		c.Evidence = evidence
		return skip(c.ID, late)
	default:
		c.Status = Pass
		c.Message = "the quota was full again when t said, and not sooner (tolerance: 1 s of rounding)"
		if late != "" {
			c.Message = "the quota was full again when t said; " + late
		}
	}
	return c
}

func countAdmitted(os []obs) int { return count(os) }

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
	tol, elapsed := d.burstTolerance(d.a)
	var fails []string
	c.Evidence = []string{fmt.Sprintf("identity A: %d of %d admitted, sent at once, answered within %s (advertised q=%d, tolerance ±%d for refill and rounding)", burst, len(d.a), elapsed.Round(time.Millisecond), d.q, tol)}
	_ = ref
	if diff := int64(burst) - d.q; diff > tol || -diff > tol {
		fails = append(fails, fmt.Sprintf("the burst was %d, the policy advertises %d", burst, d.q))
	}
	if len(d.aRefill) > 0 && d.w > 0 {
		n := countAdmitted(d.aRefill)
		send := lastDone(d.aRefill).Sub(d.aRefill[0].Sent)
		tol2 := int64(1) + int64(math.Ceil(float64(d.q)*send.Seconds()/d.w.Seconds()))
		c.Evidence = append(c.Evidence, fmt.Sprintf("identity A again %s later: %d of %d admitted (expected %d ±%d)", d.aWaited.Round(time.Millisecond), n, len(d.aRefill), d.q, tol2))
		if d.shared {
			c.Evidence = append(c.Evidence, "the identities share one quota: every phase started after a full reset, so none spent another's quota")
		}
		// a request that got no answer (a target swamped by the probe's
		// bursts) may have been admitted: it widens the bound below
		unknown := int64(unanswered(d.aRefill))
		// too few admitted is evidence only when the limiter refused some
		// of the burst: a burst the budget cut, all admitted, was too
		// small to tell
		refused := int64(len(d.aRefill)-n) - unknown
		switch diff := int64(n) - d.q; {
		case diff > tol2 || -diff > tol2+unknown && refused > 0:
			fails = append(fails, fmt.Sprintf("one window (%s) after running out, %d were admitted, the policy advertises %d per window", d.w, n, d.q))
		case -diff > tol2+unknown:
			c.Evidence = append(c.Evidence, fmt.Sprintf("all %d sent again were admitted (the budget or --max-time cut the burst): too few to judge the quota's return", len(d.aRefill)))
		}
	}
	// the other advertised items: never exceeded by any identity in any
	// of their windows (reaching them is beyond a short probe)
	for _, p := range d.others {
		w := time.Duration(p.Window) * time.Second
		most, by := d.mostIn(w)
		name := policyName(p)
		if int64(most) > p.Quota {
			fails = append(fails, fmt.Sprintf("%s admitted %d within %s, the policy %s advertises at most %d", by, most, w, name, p.Quota))
			continue
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("policy %s (q=%d per %s): at most %d admitted to one identity in any %s, within it", name, p.Quota, w, most, w))
	}
	if len(fails) > 0 {
		c.Status = Fail
		c.Message = strings.Join(fails, "; ") + ": the headers describe a policy the limiter does not enforce"
		if d.perInstance != "" {
			c.Message += "; " + d.perInstance
			c.Fix = "keep the quota in one store all replicas share (one Redis), or advertise the per-replica quota"
			return c
		}
		c.Fix = "advertise the limiter's real quota and window in RateLimit-Policy (or fix the limiter)"
		return c
	}
	c.Status = Pass
	c.Message = fmt.Sprintf("burst %d and refill match q=%d", burst, d.q)
	if d.w > 0 {
		c.Message += fmt.Sprintf(" per %s", d.w)
	}
	if len(d.aRefill) == 0 && d.w > 0 {
		why := fmt.Sprintf("the window (%s) is longer than --max-wait", d.w)
		if r, ok := d.skipped["refill"]; ok {
			why = r
		}
		c.Message += "; the refill was not measured: " + why
	}
	return c
}

// mostIn is the most requests admitted to one identity within any span
// of w (from the first send to the last answer), and which identity.
func (d *data) mostIn(w time.Duration) (int, string) {
	d.mu.Lock()
	byID := map[string][]obs{}
	for _, o := range d.all {
		if o.admitted() && o.Spoof == "" {
			byID[o.Identity] = append(byID[o.Identity], o)
		}
	}
	d.mu.Unlock()
	most, by := 0, ""
	for id, os := range byID {
		slices.SortFunc(os, func(a, b obs) int { return a.Sent.Compare(b.Sent) })
		lo := 0
		for hi := range os {
			for os[hi].Done.Sub(os[lo].Sent) > w {
				lo++
			}
			if n := hi - lo + 1; n > most {
				most, by = n, "identity "+id
				if id == "" {
					by = "the requests without an identity"
				}
			}
		}
	}
	return most, by
}

// policyName is a policy item's name, quoted, or its q and w.
func policyName(p header.Policy) string {
	if p.Name != "" {
		return strconv.Quote(p.Name)
	}
	return fmt.Sprintf("q=%d;w=%d", p.Quota, p.Window)
}

// cacheable judges every refusal a cache could keep: each 429, and each
// response of a status declared the limiter's refusal (--limited-status),
// as load's header:429-not-storable does. Explicit freshness (max-age,
// s-maxage, Expires in the future, public) without no-store fails.
func (d *data) cacheable() Check {
	c := Check{Check: doc.Check{ID: CheckCacheable}}
	var notes []string
	refusals := 0
	word := "429"
	if len(d.limited) > 0 {
		word = "refusal"
	}
	for _, o := range d.all {
		if o.Status != http.StatusTooManyRequests && !slices.Contains(d.limited, o.Status) {
			continue
		}
		refusals++
		switch level, why := header.Cache429(o.Header); level {
		case header.CacheBad:
			c.Status = Fail
			c.Message = fmt.Sprintf("a %d may be cached: %s", o.Status, why)
			if o.Status != http.StatusTooManyRequests {
				c.Message = fmt.Sprintf("a %d (declared the limiter's refusal) may be cached: %s", o.Status, why)
			}
			c.Evidence = []string{evidenceLine(o)}
			c.Fix = "send Cache-Control: no-store on every " + word
			return c
		case header.CacheNote:
			notes = append(notes, why)
		}
	}
	switch {
	case refusals == 0:
		return skip(c.ID, "no "+word+" to inspect")
	case len(notes) > 0:
		c.Status = Warn
		c.Message = fmt.Sprintf("%d of %d %ss: %s", len(notes), refusals, word, notes[0])
		c.Fix = "send Cache-Control: no-store on every " + word
	default:
		c.Status = Pass
		c.Message = fmt.Sprintf("all %d %ss carry Cache-Control: no-store", refusals, word)
	}
	return c
}

func (d *data) isolation(o Options) Check {
	c := Check{Check: doc.Check{ID: CheckIsolation}}
	if _, ok := d.refusal(); !ok {
		return skip(c.ID, "the endpoint was not limited")
	}
	c.Evidence = []string{"fresh identity B right after A ran out: " + evidenceLine(d.b), "no identity right after A ran out: " + evidenceLine(d.anonMid)}
	if !d.b.admitted() && !d.anonMid.admitted() {
		// every request shares one quota: a limiter keyed by the client's
		// address (express-rate-limit's default, nginx's $binary_remote_addr)
		// or a global one: a design, not a defect, unless it was meant to
		// key by the identity header
		c.Status = Warn
		c.Message = fmt.Sprintf("a fresh %s and a request without one were both refused right after another ran out: the limiter keys by the client's address (or globally), not by %s; if it should limit per %s, that is a defect",
			o.identityName(), o.identityName(), o.identityName())
		c.Fix = fmt.Sprintf("key the limiter by the client's identity (%s) if clients behind one address must not share a quota; or pass --identity-header naming the header it keys by", o.identityName())
		return c
	}
	if !d.b.admitted() {
		c.Status = Fail
		c.Message = fmt.Sprintf("a fresh %s was refused right after another ran out, while a request without one was admitted: identities share one quota", o.identityName())
		c.Fix = fmt.Sprintf("key the limiter by the client's identity (%s), not by a global bucket for identified clients; or pass --identity-header", o.identityName())
		return c
	}
	if !d.anonMid.admitted() {
		c.Status = Warn
		c.Message = fmt.Sprintf("a request without %s was refused right after identity A ran out: anonymous requests may share the quota of identified ones", o.identityName())
		c.Fix = "give requests without an identity their own per-address quota"
		return c
	}
	// requests without an identity never refused, beyond the quota and
	// the refill while they were in flight: a client that leaves the
	// header out is not limited at all
	if tol, _ := d.burstTolerance(d.anon); len(d.anon) > 0 && !refusedAny(d.anon) && d.q > 0 && int64(count(d.anon)) > d.q+tol {
		c.Status = Fail
		c.Message = fmt.Sprintf("requests without %s are not limited: %d sent at once were all admitted (the quota is %d): a client bypasses the limiter by leaving the header out", o.identityName(), count(d.anon), d.q)
		c.Evidence = []string{fmt.Sprintf("%d requests without %s in flight at once, all admitted", len(d.anon), o.identityName())}
		c.Fix = fmt.Sprintf("limit requests without %s too (by the client's address), or refuse them; --warn-only %s if that is intended", o.identityName(), CheckIsolation)
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
	if !refusedAny(d.anon) {
		return skip(c.ID, fmt.Sprintf("requests without an identity were not limited (%d admitted)", count(d.anon)))
	}
	if len(d.spoofs) == 0 {
		return skip(c.ID, "no spoofing attempt was sent")
	}
	var bypass, undecided []string
	var evidence []string
	for _, s := range d.spoofs {
		n, ctl := count(s.Attempts), count(s.Controls)
		both := append(slices.Clone(s.Controls), s.Attempts...)
		// what the refill alone can admit from the last answer before
		// the burst until its last answer, to controls and attempts alike
		_, span := d.burstTolerance(both)
		if !s.From.IsZero() {
			span = lastDone(both).Sub(s.From)
		}
		refill := int64(1)
		if d.q > 0 && d.w > 0 {
			refill += int64(math.Ceil(float64(d.q) * span.Seconds() / d.w.Seconds()))
		}
		fresh := false
		for _, a := range s.Attempts {
			// more remaining after an admission than the refill could
			// have put back: the spoofed address's own, fresh quota
			if r, _, _, ok := limitOf(a.Header, a.Done); ok && a.admitted() && r >= max(refill, 1) {
				fresh = true
			}
		}
		evidence = append(evidence, fmt.Sprintf("%s: %d of %d attempts admitted, %d of %d controls without it, interleaved in one burst, %s from the last answer before it (the refill allows %d to either)",
			s.Header, n, len(s.Attempts), ctl, len(s.Controls), span.Round(time.Millisecond), refill))
		switch {
		case int64(n-ctl) > refill || fresh:
			bypass = append(bypass, s.Header)
		case refill >= int64(len(s.Attempts)):
			// the refill alone could admit every attempt: a bypass
			// cannot be told from it
			undecided = append(undecided, s.Header)
		}
	}
	c.Evidence = evidence
	switch {
	case len(bypass) > 0:
		c.Status = Fail
		c.Message = fmt.Sprintf("rotating %s gave fresh quota to a client at %s whose own had run out (more admitted than the refill explains, while the same requests without the header, sent with them, were refused): the limiter trusts a client-IP header from this peer, so any client that reaches the service the way the probe did can bypass it",
			strings.Join(bypass, ", "), d.peerOr())
		c.Fix = "take the client address from the peer, or only from the hop your own proxy appends (trust exactly the proxies you run)"
	case len(undecided) > 0:
		c.Status = Skip
		c.Message = fmt.Sprintf("undecided: with %s the refill while the burst was in flight could admit every attempt (a slow target or a busy machine); run the probe again", strings.Join(undecided, ", "))
	default:
		c.Status = Pass
		c.Message = "rotating X-Forwarded-For, X-Real-IP, Forwarded and True-Client-IP gave no fresh quota: attempts and controls in flight together were refused alike"
	}
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
	for _, name := range []string{"Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"} {
		if v := o.Header.Values(name); len(v) > 0 {
			parts = append(parts, http.CanonicalHeaderKey(name)+": "+strings.Join(v, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
