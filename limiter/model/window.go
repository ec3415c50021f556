package model

// This file holds the window models that have no script of their own:
// the ones production limiters use, judged by load --expect. Their time
// is integer milliseconds, like the scripts' twins, and their arithmetic
// integer, so a replay decides exactly.

// Alignment says where a key's windows start.
type Alignment int

// The alignments.
const (
	// AlignFirst: a key's first request starts its first window; windows
	// follow one another from there, and a key idle for a whole window
	// more starts afresh at its next request (rate-limit-redis,
	// rate-limiter-flexible, limits' Redis storage, haproxy's periods).
	AlignFirst Alignment = iota
	// AlignClock: windows are floor((t - offset) / window), the same for
	// every key (INCR + EXPIREAT scripts, limits' memory storage,
	// httprate's counters; httprate v0.16 offsets them by the moment its
	// limiter was made).
	AlignClock
)

// Rounding says how a sliding window counter rounds its weighted count.
type Rounding int

// The roundings the libraries use.
const (
	RoundFloor   Rounding = iota // floor (limits, haproxy, Cloudflare-style Lua)
	RoundNearest                 // half away from zero (httprate's math.Round)
	RoundNone                    // the exact fraction
)

// windows tracks a key's current and previous window counts.
type windows struct {
	window   int64
	align    Alignment
	offset   int64 // ms, AlignClock only
	start    int64 // the current window's start, ms
	cur      int64
	prev     int64
	has      bool
	refusedN bool // refused requests count too
}

// advance moves the windows to now: the current window becomes the
// previous one when now is in the next, both are dropped when now is
// further on.
func (w *windows) advance(now int64) {
	if !w.has {
		w.has, w.cur, w.prev = true, 0, 0
		w.start = w.startOf(now)
		return
	}
	if now < w.start+w.window {
		return
	}
	next := w.start + w.window
	if now < next+w.window {
		w.prev, w.cur, w.start = w.cur, 0, next
		return
	}
	// a whole window or more went by without a request
	w.prev, w.cur = 0, 0
	if w.align == AlignFirst {
		w.start = now
	} else {
		w.start = w.startOf(now)
	}
}

// startOf is the start of the window holding now, for a new key.
func (w *windows) startOf(now int64) int64 {
	if w.align == AlignFirst {
		return now
	}
	k := floorDiv(now-w.offset, w.window)
	return w.offset + k*w.window
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

type slidingCounter struct {
	limit int64
	round Rounding
	w     windows
}

// NewSlidingWindowCounter returns a sliding window counter: the previous
// window's count weighted by the part of it still inside the sliding
// window, plus the current window's count, rounded by round, must leave
// room for the call (weighted + cost <= limit). Windows start as align
// says (offset: the clock alignment's offset, ms). With countRefused a
// refused call is counted too (a script that INCRs before it checks).
func NewSlidingWindowCounter(limit, windowMs int64, round Rounding, align Alignment, offsetMs int64, countRefused bool) Limiter {
	return &slidingCounter{limit: limit, round: round,
		w: windows{window: windowMs, align: align, offset: offsetMs, refusedN: countRefused}}
}

// weighted reports whether a call of cost fits after the weighted count,
// and the whole units the weighted count uses (for Remaining).
func (s *slidingCounter) fits(now, cost int64) (bool, int64) {
	W := s.w.window
	left := W - (now - s.w.start) // the previous window's part still inside, ms
	num := s.w.prev * left        // prev x left / W is the weighted previous count
	switch s.round {
	case RoundNearest:
		p := (2*num + W) / (2 * W)
		return p+s.w.cur+cost <= s.limit, p + s.w.cur
	case RoundNone:
		// prev x left / W + cur + cost <= limit, in integers
		return num+(s.w.cur+cost)*W <= s.limit*W, (num+W-1)/W + s.w.cur
	default:
		p := num / W
		return p+s.w.cur+cost <= s.limit, p + s.w.cur
	}
}

func (s *slidingCounter) Allow(now, cost int64) Decision {
	s.w.advance(now)
	ok, used := s.fits(now, cost)
	var d Decision
	if ok || s.w.refusedN {
		s.w.cur += cost
	}
	if ok {
		d.Allowed = true
		used += cost
	}
	d.Remaining = max(s.limit-used, 0)
	d.ResetMs = s.w.start + 2*s.w.window - now // both windows out of the sliding window
	if !ok {
		d.RetryMs = s.w.start + s.w.window - now
		if cost > s.limit {
			d.RetryMs = -1
		}
	}
	return d
}

type clockWindow struct {
	limit int64
	w     windows
}

// NewFixedWindowAligned returns a fixed window counter whose windows are
// floor((t - offset) / window): every key's change at the same instants
// (INCR + EXPIREAT). Refused calls may be counted (countRefused): in a
// fixed window that changes no admission, only the count.
func NewFixedWindowAligned(limit, windowMs, offsetMs int64, countRefused bool) Limiter {
	return &clockWindow{limit: limit, w: windows{window: windowMs, align: AlignClock, offset: offsetMs, refusedN: countRefused}}
}

func (f *clockWindow) Allow(now, cost int64) Decision {
	f.w.advance(now)
	var d Decision
	ok := f.w.cur+cost <= f.limit
	if ok || f.w.refusedN {
		f.w.cur += cost
	}
	d.Allowed = ok
	d.Remaining = max(f.limit-f.w.cur, 0)
	d.ResetMs = f.w.start + f.w.window - now
	if !ok {
		d.RetryMs = d.ResetMs
		if cost > f.limit {
			d.RetryMs = -1
		}
	}
	return d
}

type countingLog struct {
	limit, window int64
	log           []int64 // every recorded call, admitted or not, ascending
}

// NewSlidingLogCountingRefused returns a sliding-window log that records
// refused calls too (a log that adds before it checks): a client that
// keeps calling while refused stays refused.
func NewSlidingLogCountingRefused(limit, windowMs int64) Limiter {
	return &countingLog{limit: limit, window: windowMs}
}

func (s *countingLog) Allow(now, cost int64) Decision {
	edge := now - s.window
	i := 0
	for i < len(s.log) && s.log[i] <= edge {
		i++
	}
	s.log = s.log[i:]
	for range cost {
		s.log = append(s.log, now)
	}
	n := int64(len(s.log))
	d := Decision{Allowed: n <= s.limit, Remaining: max(s.limit-n, 0)}
	if len(s.log) > 0 {
		d.ResetMs = s.log[len(s.log)-1] + s.window - now
	}
	if !d.Allowed {
		d.RetryMs = d.ResetMs
		if cost > s.limit {
			d.RetryMs = -1
		}
	}
	return d
}

type leakyBucket struct {
	ratePerS int64 // milli-requests per second (nginx's rate)
	burst    int64 // milli-requests
	delay    int64 // milli-requests admitted at once; -1: nodelay
	excess   int64 // milli-requests
	last     int64 // ms
	has      bool
}

// NewLeakyBucket returns nginx's limit_req: a leaky bucket in
// milli-requests. rateMilli is the rate in milli-requests per second
// (nginx stores 5r/s as 5000, 7r/m as 7000/60 = 116), burst the burst in
// requests, delay the requests of the burst served at once (-1: nodelay,
// every one; 0: none, each excess request is delayed). A key nginx has not
// seen starts empty and is admitted: burst + 1 at once, then burst after
// draining. A refused request changes nothing. The Decision's RetryMs of
// an admitted call is the delay nginx holds it for.
func NewLeakyBucket(rateMilli, burst, delay int64) Limiter {
	b := &leakyBucket{ratePerS: rateMilli, burst: burst * 1000, delay: -1}
	if delay >= 0 {
		b.delay = delay * 1000
	}
	return b
}

func (b *leakyBucket) Allow(now, cost int64) Decision {
	var d Decision
	if !b.has {
		b.has, b.excess, b.last = true, 0, now
		d.Allowed = true
		d.Remaining = b.burst / 1000
		return d
	}
	ms := now - b.last
	if ms < -60000 {
		ms = 1
	} else if ms < 0 {
		ms = 0
	}
	excess := b.excess - b.ratePerS*ms/1000 + 1000*cost
	if excess < 0 {
		excess = 0
	}
	if excess > b.burst {
		d.Remaining = 0
		if b.ratePerS > 0 {
			// until enough has leaked for the call to fit
			d.RetryMs = ((excess-b.burst)*1000 + b.ratePerS - 1) / b.ratePerS
		}
		if 1000*cost > b.burst+1000 {
			d.RetryMs = -1
		}
		return d
	}
	b.excess = excess
	if ms != 0 {
		b.last = now
	}
	d.Allowed = true
	d.Remaining = (b.burst - excess) / 1000
	if b.delay >= 0 && excess > b.delay && b.ratePerS > 0 {
		d.RetryMs = (excess - b.delay) * 1000 / b.ratePerS
	}
	if b.ratePerS > 0 {
		d.ResetMs = excess * 1000 / b.ratePerS
	}
	return d
}
