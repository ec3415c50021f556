// Package model holds pure Go twins of the limiter scripts in package eval.
//
// Each model makes the same decisions and reports the same remaining counts
// as its Lua script when both see the same sequence of (now_ms, cost) calls:
// time is in integer milliseconds, token state in integer micro-tokens, GCRA
// state in integer microseconds, and every division the scripts do in Lua
// doubles is done here with float64 in the same order, so the two agree bit
// for bit. The models are what a load test's admitted count is judged
// against, and what the script property tests compare with.
//
// Key expiry is not modelled because the scripts only let a key expire once
// its state is equivalent to a fresh key (a full bucket, an empty log, a TAT
// in the past), except the fixed window, whose stored window end is modelled.
package model

import "math"

// Decision is the answer to one call.
type Decision struct {
	Allowed   bool
	Remaining int64 // whole units left after this call
	RetryMs   int64 // ms until a call of the same cost could pass; 0 if allowed, -1 if never
	ResetMs   int64 // ms until the limiter is back to its full quota (fixed window: until the window ends)
}

// Limiter decides calls at virtual times. nowMs should not go backwards by
// much; the models, like the scripts, never move their stored clock back.
type Limiter interface {
	Allow(nowMs int64, cost int64) Decision
}

// Micro is the number of micro-tokens in one token.
const Micro = 1_000_000

// msFor returns the whole ms needed to accrue need micro-tokens at perMs
// micro-tokens per ms, rounded up so that refill(ms) >= need. It mirrors
// ms_for in token_bucket.lua.
func msFor(need int64, perMs float64) int64 {
	if need <= 0 {
		return 0
	}
	ms := math.Ceil(float64(need) / perMs)
	if math.Floor(ms*perMs) < float64(need) {
		ms++
	}
	return int64(ms)
}

type tokenBucket struct {
	full   int64   // capacity in micro-tokens
	perMs  float64 // refill in micro-tokens per ms
	tokens int64   // micro-tokens
	ts     int64   // ms of the last refill
	has    bool
}

// NewTokenBucket returns a token bucket holding capacity tokens, refilled
// at ratePerSec tokens per second (fractional allowed). A new bucket starts
// full; refill is capped at capacity.
func NewTokenBucket(capacity int64, ratePerSec float64) Limiter {
	return &tokenBucket{full: capacity * Micro, perMs: ratePerSec * 1000}
}

func (b *tokenBucket) Allow(now, cost int64) Decision {
	if !b.has {
		b.tokens, b.ts, b.has = b.full, now, true
	}
	if b.tokens > b.full {
		b.tokens = b.full
	}
	if elapsed := now - b.ts; elapsed > 0 {
		refill := math.Floor(float64(elapsed) * b.perMs)
		if float64(b.tokens)+refill >= float64(b.full) {
			b.tokens = b.full
		} else {
			b.tokens += int64(refill)
		}
		b.ts = now
	}
	need := cost * Micro
	var d Decision
	switch {
	case need > b.full:
		d.RetryMs = -1
	case b.tokens >= need:
		b.tokens -= need
		d.Allowed = true
	default:
		d.RetryMs = msFor(need-b.tokens, b.perMs)
	}
	d.Remaining = int64(math.Floor(float64(b.tokens) / Micro))
	d.ResetMs = msFor(b.full-b.tokens, b.perMs)
	return d
}

type slidingWindow struct {
	limit  int64
	window int64
	log    []int64 // admitted timestamps (ms), ascending
}

// NewSlidingWindow returns a sliding-window log admitting at most limit
// units in any windowMs. Refused calls are not recorded.
func NewSlidingWindow(limit int64, windowMs int64) Limiter {
	return &slidingWindow{limit: limit, window: windowMs}
}

func (s *slidingWindow) Allow(now, cost int64) Decision {
	// ZREMRANGEBYSCORE key -inf (now - window): drop entries at or before the edge.
	edge := now - s.window
	i := 0
	for i < len(s.log) && s.log[i] <= edge {
		i++
	}
	s.log = s.log[i:]
	count := int64(len(s.log))
	var d Decision
	if count+cost <= s.limit {
		// Insert cost entries at now, after entries with the same score.
		at := len(s.log)
		for at > 0 && s.log[at-1] > now {
			at--
		}
		add := make([]int64, cost)
		for j := range add {
			add[j] = now
		}
		s.log = append(s.log[:at], append(add, s.log[at:]...)...)
		d.Allowed = true
		d.Remaining = s.limit - count - cost
	} else {
		d.Remaining = s.limit - count
		if cost > s.limit {
			d.RetryMs = -1
		} else {
			d.RetryMs = s.log[count+cost-s.limit-1] + s.window - now
		}
	}
	if n := len(s.log); n > 0 {
		d.ResetMs = s.log[n-1] + s.window - now
	}
	return d
}

type fixedWindow struct {
	limit  int64
	window int64
	n      int64
	end    int64
	has    bool
}

// NewFixedWindow returns a fixed-window counter admitting at most limit units
// per window; a window starts at the first admitted request after the
// previous one ended (INCR, TTL set only when the counter is new).
func NewFixedWindow(limit int64, windowMs int64) Limiter {
	return &fixedWindow{limit: limit, window: windowMs}
}

func (f *fixedWindow) Allow(now, cost int64) Decision {
	if f.has && now >= f.end {
		f.has, f.n = false, 0
	}
	var d Decision
	if f.n+cost <= f.limit {
		if !f.has {
			f.has, f.end = true, now+f.window
		}
		f.n += cost
		d.Allowed = true
	}
	d.Remaining = f.limit - f.n
	if f.has {
		d.ResetMs = f.end - now
	} else {
		d.ResetMs = f.window
	}
	if !d.Allowed {
		if cost > f.limit {
			d.RetryMs = -1
		} else {
			d.RetryMs = d.ResetMs
		}
	}
	return d
}

type gcra struct {
	t   int64 // emission interval, µs
	dvt int64 // delay variation tolerance, µs
	tat int64 // theoretical arrival time, µs
	has bool
}

// EmissionIntervalUs returns the GCRA emission interval for ratePerSec in
// whole microseconds, rounded to nearest, as gcra.lua computes it.
func EmissionIntervalUs(ratePerSec float64) int64 {
	return int64(math.Floor(1e6/ratePerSec + 0.5))
}

// NewGCRA returns a generic cell rate algorithm limiter: ratePerSec steady
// rate, burst calls may pass at once. It stores one theoretical arrival time.
func NewGCRA(ratePerSec float64, burst int64) Limiter {
	t := EmissionIntervalUs(ratePerSec)
	return &gcra{t: t, dvt: t * burst}
}

func ceilMs(us int64) int64 { return int64(math.Ceil(float64(us) / 1000)) }

func (g *gcra) Allow(nowMs, cost int64) Decision {
	now := nowMs * 1000
	tat := now
	if g.has && g.tat > now {
		tat = g.tat
	}
	newTat := tat + g.t*cost
	var d Decision
	if newTat-now > g.dvt {
		if g.t*cost > g.dvt {
			d.RetryMs = -1
		} else {
			d.RetryMs = ceilMs(newTat - now - g.dvt)
		}
	} else {
		d.Allowed = true
		tat = newTat
		g.tat, g.has = tat, true
	}
	d.Remaining = int64(math.Floor(float64(g.dvt-(tat-now)) / float64(g.t)))
	if d.Remaining < 0 {
		d.Remaining = 0
	}
	d.ResetMs = ceilMs(tat - now)
	return d
}
