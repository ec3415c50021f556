// Package model holds pure Go twins of the limiter scripts in package eval.
//
// Each model makes the same decisions and reports the same remaining counts
// as its Lua script when both see the same sequence of (now_ms, cost) calls:
// time is in integer milliseconds, token state in integer micro-tokens
// (held in float64, as Lua holds every number in a double), GCRA
// state in integer microseconds, and every division the scripts do in Lua
// doubles is done here with float64 in the same order, so the two agree bit
// for bit. The models are what a load test's admitted count is judged
// against, and what the script property tests compare with.
//
// Key expiry is not modelled because the scripts only let a key expire once
// its state is equivalent to a fresh key (a full bucket, an empty log, a TAT
// in the past), except the fixed window, whose stored window end is modelled.
// Nor are keys the scripts did not write: a script refuses them (or, with
// force, deletes them and starts like a fresh key), so a model always
// stands for the script's own key.
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

// RefillChunk bounds the refill one multiplication computes, in micro-tokens
// (2^40). Token refill is counted from an anchor time in chunks of whole ms
// worth at most RefillChunk micro-tokens each (rounded down once per chunk)
// plus the ms since the last chunk boundary, so every product stays exact
// in a double and no fraction is dropped between calls. It mirrors CHUNK
// in token_bucket.lua.
const RefillChunk = 1 << 40

// refillChunk returns the chunk length in ms and the micro-tokens it is
// worth at perMs micro-tokens per ms, as token_bucket.lua computes them.
func refillChunk(perMs float64) (ms, worth float64) {
	ms = math.Floor(RefillChunk / perMs)
	if ms > RefillChunk {
		ms = RefillChunk
	}
	if ms < 1 {
		ms = 1
	}
	return ms, math.Floor(ms * perMs)
}

type tokenBucket struct {
	full    float64 // capacity in micro-tokens
	perMs   float64 // refill in micro-tokens per ms
	chunkMs float64 // refill chunk length, ms
	chunk   float64 // micro-tokens refilled per chunk
	// tokens is the micro-tokens at the anchor ts, not counting the refill
	// since then (negative once more was taken than the anchor held).
	tokens float64
	ts     float64 // ms: the refill anchor
	has    bool
}

// NewTokenBucket returns a token bucket holding capacity tokens, refilled
// at ratePerSec tokens per second (fractional allowed). A new bucket starts
// full; refill is capped at capacity. The refill is counted from the last
// time the bucket was full, never rounded per call, so how often a bucket
// is asked does not change its answers.
func NewTokenBucket(capacity int64, ratePerSec float64) Limiter {
	perMs := ratePerSec * 1000
	chunkMs, chunk := refillChunk(perMs)
	return &tokenBucket{full: float64(capacity * Micro), perMs: perMs, chunkMs: chunkMs, chunk: chunk}
}

// refill returns the micro-tokens accrued e ms after the anchor (refill in
// token_bucket.lua).
func (b *tokenBucket) refill(e float64) float64 {
	if e <= 0 {
		return 0
	}
	n := math.Floor(e / b.chunkMs)
	return n*b.chunk + math.Floor((e-n*b.chunkMs)*b.perMs)
}

// msUntil returns the fewest whole ms after the anchor whose refill reaches
// target micro-tokens (ms_until in token_bucket.lua).
func (b *tokenBucket) msUntil(target float64) float64 {
	if target <= 0 {
		return 0
	}
	n := math.Floor((target - 1) / b.chunk)
	u := target - n*b.chunk // 1 .. chunk micro-tokens into chunk n
	r := math.Ceil(u / b.perMs)
	if math.Floor(r*b.perMs) < u {
		r++
	}
	if r > 1 && math.Floor((r-1)*b.perMs) >= u {
		r--
	}
	if r >= b.chunkMs {
		return (n + 1) * b.chunkMs
	}
	return n*b.chunkMs + r
}

func (b *tokenBucket) Allow(nowMs, cost int64) Decision {
	now := float64(nowMs)
	if !b.has {
		b.tokens, b.ts, b.has = b.full, now, true
	}
	if b.tokens > b.full {
		b.tokens = b.full
	}
	elapsed := now - b.ts
	level := b.tokens + b.refill(elapsed)
	switch {
	case level >= b.full:
		// A full bucket forgets its anchor: refill restarts at now.
		b.tokens, b.ts, level = b.full, now, b.full
	case level < 0:
		// Only after the parameters changed: the bucket is empty now.
		b.tokens, level = b.tokens-level, 0
	case elapsed >= b.chunkMs:
		// Move the anchor by whole chunks: the refill owed stays the same.
		n := math.Floor(elapsed / b.chunkMs)
		b.tokens, b.ts = b.tokens+n*b.chunk, b.ts+n*b.chunkMs
	}
	need := float64(cost * Micro)
	var d Decision
	switch {
	case need > b.full:
		d.RetryMs = -1
	case level >= need:
		b.tokens, level = b.tokens-need, level-need
		d.Allowed = true
	default:
		d.RetryMs = int64(b.msUntil(need-b.tokens) - (now - b.ts))
	}
	d.Remaining = int64(math.Floor(level / Micro))
	d.ResetMs = int64(b.msUntil(b.full-b.tokens) - (now - b.ts))
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
