package model

import "math"

// This file holds the behaviours real limiters add to the plain models:
// fixed windows with other timers (elastic expiry, windows ticking from a
// key's creation, whole-second timers, a refusal at the limit itself), a
// token bucket that drops fractions, a limiter that delays instead of
// refusing, and a block after the first refusal. Like window.go, their
// time is integer milliseconds and their arithmetic integer where the
// products' is.

// Anchor says where a counter's fixed windows start.
type Anchor int

// The anchors of FixedRules.
const (
	// AnchorFirst: a window starts at the first request after the last
	// one ended (express-rate-limit's MemoryStore, limits' fixed window).
	AnchorFirst Anchor = iota
	// AnchorCreation: windows of W follow one another from the key's
	// first request for ever, never re-anchored by a later request.
	AnchorCreation
)

// FixedRules configure a fixed window counter with the timers and
// comparisons products use besides the scripted fixed window's.
type FixedRules struct {
	Limit    int64
	WindowMs int64
	Anchor   Anchor
	// Elastic: every request, refused ones included, restarts the window
	// (the key expires W after its last request): a client that keeps
	// calling faster than the window stays refused.
	Elastic bool
	// WholeSeconds: the timers are whole seconds. A window starts at its
	// first request's whole second s and is over once s + W < the whole
	// second of now: it lasts W to W + 1 s.
	WholeSeconds bool
	// RefuseAtLimit: a request is counted, then refused when the count
	// reaches the limit (count >= limit): limit - 1 admitted per window.
	RefuseAtLimit bool
}

// counter is the fixed window counter FixedRules describe; every request
// is counted, admitted or not (no fixed window admits otherwise for it).
type counter struct {
	r       FixedRules
	n       int64
	start   int64 // the current window's start, ms
	end     int64 // the first ms the window is over
	created int64
	has     bool
}

// roll starts the window holding now when the current one is over.
func (c *counter) roll(now int64) {
	if !c.has {
		c.has, c.created = true, now
		c.begin(now)
		return
	}
	if now >= c.end {
		c.begin(now)
	}
}

func (c *counter) begin(now int64) {
	c.n = 0
	W := c.r.WindowMs
	switch {
	case c.r.Anchor == AnchorCreation:
		c.start = c.created + floorDiv(now-c.created, W)*W
		c.end = c.start + W
	case c.r.WholeSeconds:
		// over once floor(now / 1000) > s + W / 1000
		c.start = floorDiv(now, 1000) * 1000
		c.end = c.start + W + 1000
	default:
		c.start, c.end = now, now+W
	}
}

// hit counts a request of cost at now and reports whether it is admitted.
func (c *counter) hit(now, cost int64) bool {
	c.roll(now)
	if c.r.Elastic {
		c.end = now + c.r.WindowMs
	}
	if c.r.RefuseAtLimit {
		c.n += cost
		return c.n < c.r.Limit
	}
	ok := c.n+cost <= c.r.Limit
	c.n += cost
	return ok
}

type fixedRules struct{ c counter }

// NewFixedWindowRules returns a fixed window counter with the timers of
// r (see FixedRules).
func NewFixedWindowRules(r FixedRules) Limiter {
	return &fixedRules{c: counter{r: r}}
}

func (f *fixedRules) Allow(now, cost int64) Decision {
	ok := f.c.hit(now, cost)
	limit := f.c.r.Limit
	if f.c.r.RefuseAtLimit {
		limit--
	}
	d := Decision{Allowed: ok, Remaining: max(limit-f.c.n, 0), ResetMs: f.c.end - now}
	if !ok {
		d.RetryMs = d.ResetMs
		if cost > limit {
			d.RetryMs = -1
		}
	}
	return d
}

type slowdown struct {
	c             counter
	after         int64
	stepMs, maxMs int64 // maxMs 0: no cap
}

// NewSlowdown returns a limiter that never refuses but delays: every
// request is counted in fixed windows (rules; its Limit is the requests
// served at once), and the n-th of a window, n > Limit, is held for
// (n - Limit) x stepMs, at most maxMs (0: no cap) — express-slow-down's
// delayAfter, delayMs and maxDelayMs. The Decision's RetryMs of an
// admitted call is its delay, as for the leaky bucket.
func NewSlowdown(rules FixedRules, stepMs, maxMs int64) Limiter {
	return &slowdown{c: counter{r: rules}, after: rules.Limit, stepMs: stepMs, maxMs: maxMs}
}

func (s *slowdown) Allow(now, cost int64) Decision {
	s.c.roll(now)
	s.c.n += cost
	d := Decision{Allowed: true, Remaining: max(s.after-s.c.n, 0), ResetMs: s.c.end - now}
	if over := s.c.n - s.after; over > 0 {
		step := max(s.stepMs, 1)
		switch {
		case s.maxMs > 0 && over > s.maxMs/step:
			d.RetryMs = s.maxMs // over x step > maxMs, without overflowing
		case over > math.MaxInt64/4/step:
			d.RetryMs = math.MaxInt64 / 4
		default:
			d.RetryMs = over * step
		}
	}
	return d
}

type wholeBucket struct {
	capacity int64
	perSec   float64
	tokens   int64
	last     int64 // ms of the last admission (or of the first request)
	has      bool
}

// NewTokenBucketWhole returns a token bucket whose refill is credited in
// whole tokens from the last admission, the fraction thrown away: at one
// request every 150 ms a 5/s bucket, once empty, admits one per 300 ms.
// A refused request changes nothing. A new bucket starts full.
func NewTokenBucketWhole(capacity int64, ratePerSec float64) Limiter {
	return &wholeBucket{capacity: capacity, perSec: ratePerSec}
}

// credit is the whole tokens earned ms after the last admission.
func (b *wholeBucket) credit(ms int64) int64 {
	if ms <= 0 {
		return 0
	}
	f := math.Floor(float64(ms) * b.perSec / 1000)
	if f >= float64(b.capacity) {
		return b.capacity
	}
	return int64(f)
}

func (b *wholeBucket) Allow(now, cost int64) Decision {
	if !b.has {
		b.has, b.tokens, b.last = true, b.capacity, now
	}
	level := min(b.capacity, b.tokens+b.credit(now-b.last))
	var d Decision
	switch {
	case cost > b.capacity:
		d.RetryMs = -1
	case level >= cost:
		b.tokens, b.last, level = level-cost, now, level-cost
		d.Allowed = true
	default:
		// the first ms whose whole credit reaches cost
		need := cost - b.tokens
		ms := int64(math.Ceil(float64(need) * 1000 / b.perSec))
		for b.credit(ms) < need {
			ms++
		}
		d.RetryMs = max(b.last+ms-now, 1)
	}
	d.Remaining = level
	if missing := b.capacity - b.tokens; missing > 0 {
		d.ResetMs = max(b.last+int64(math.Ceil(float64(missing)*1000/b.perSec))-now, 0)
	}
	return d
}

type blocking struct {
	fresh   func() Limiter
	inner   Limiter
	blockMs int64
	until   int64
	blocked bool
}

// NewBlocking wraps the limiter fresh makes with a block: the request
// inner refuses starts a block of blockMs during which every request is
// refused and none reaches inner (nothing counted); after it the key
// starts clean (a fresh inner). rate-limiter-flexible's blockDuration.
func NewBlocking(fresh func() Limiter, blockMs int64) Limiter {
	return &blocking{fresh: fresh, inner: fresh(), blockMs: blockMs}
}

func (b *blocking) Allow(now, cost int64) Decision {
	if b.blocked {
		if now < b.until {
			return Decision{RetryMs: b.until - now, ResetMs: b.until - now}
		}
		b.blocked, b.inner = false, b.fresh()
	}
	d := b.inner.Allow(now, cost)
	if !d.Allowed && d.RetryMs >= 0 {
		b.blocked, b.until = true, now+b.blockMs
		d.RetryMs, d.ResetMs, d.Remaining = b.blockMs, b.blockMs, 0
	}
	return d
}
