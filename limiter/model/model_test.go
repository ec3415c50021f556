package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// admitted counts the calls a limiter admits for n arrivals every stepMs.
func admitted(l Limiter, n int, stepMs int64) int {
	got := 0
	for i := range n {
		if l.Allow(int64(i)*stepMs, 1).Allowed {
			got++
		}
	}
	return got
}

func TestAdmittedUnderConstantArrivals(t *testing.T) {
	tests := []struct {
		name   string
		l      Limiter
		n      int
		stepMs int64
		want   int
	}{
		// burst + rate x duration = 10 + 5 x 30 = 160 in the continuous form;
		// the last token would arrive at exactly 30 s, after the last arrival.
		{"token bucket 10 at 5/s, 20/s for 30s", NewTokenBucket(10, 5), 600, 50, 159},
		{"sliding window 100/60s, 20/s for 30s", NewSlidingWindow(100, 60_000), 600, 50, 100},
		{"sliding window 10/1s, 20/s for 30s", NewSlidingWindow(10, 1000), 600, 50, 300},
		{"fixed window 10/1s, 20/s for 30s", NewFixedWindow(10, 1000), 600, 50, 300},
		{"gcra 5/s burst 10, 20/s for 30s", NewGCRA(5, 10), 600, 50, 159},
		{"token bucket 1 at 1/s, 1/s for 10s", NewTokenBucket(1, 1), 10, 1000, 10},
		{"token bucket 2 at 0.5/s, 1/s for 10s", NewTokenBucket(2, 0.5), 10, 1000, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := admitted(tt.l, tt.n, tt.stepMs); got != tt.want {
				t.Errorf("admitted = %d, want %d", got, tt.want)
			}
		})
	}
}

type call struct {
	now, cost int64
	want      Decision
}

func runCalls(t *testing.T, l Limiter, calls []call) {
	t.Helper()
	for i, c := range calls {
		if got := l.Allow(c.now, c.cost); got != c.want {
			t.Errorf("call %d Allow(%d, %d) = %+v, want %+v", i+1, c.now, c.cost, got, c.want)
		}
	}
}

func TestTokenBucket(t *testing.T) {
	const t0 = 1_700_000_000_000
	runCalls(t, NewTokenBucket(5, 1), []call{
		{t0, 1, Decision{true, 4, 0, 1000}},
		{t0 + 1, 1, Decision{true, 3, 0, 1999}},
		{t0 + 2, 1, Decision{true, 2, 0, 2998}},
		{t0 + 3, 1, Decision{true, 1, 0, 3997}},
		{t0 + 4, 1, Decision{true, 0, 0, 4996}},
		{t0 + 5, 1, Decision{false, 0, 995, 4995}},
		{t0 + 6, 1, Decision{false, 0, 994, 4994}},
		{t0 + 1000, 1, Decision{true, 0, 0, 5000}},    // 1.005 tokens refilled: one passes
		{t0 + 1000, 6, Decision{false, 0, -1, 5000}},  // more than the capacity: never
		{t0 + 100_000, 5, Decision{true, 0, 0, 5000}}, // refill capped at 5
		{t0 + 100_500, 1, Decision{false, 0, 500, 4500}},
	})
	// A fractional rate keeps fractional state: 0.4 tokens/s, 0.4 + 0.4 + 0.4 > 1.
	runCalls(t, NewTokenBucket(1, 0.4), []call{
		{0, 1, Decision{true, 0, 0, 2500}},
		{1000, 1, Decision{false, 0, 1500, 1500}},
		{2000, 1, Decision{false, 0, 500, 500}},
		{2500, 1, Decision{true, 0, 0, 2500}},
	})
}

func TestSlidingWindow(t *testing.T) {
	runCalls(t, NewSlidingWindow(3, 10_000), []call{
		{0, 1, Decision{true, 2, 0, 10_000}},
		{10, 1, Decision{true, 1, 0, 10_000}},
		{20, 1, Decision{true, 0, 0, 10_000}},
		{30, 1, Decision{false, 0, 9970, 9990}},
		{40, 2, Decision{false, 0, 9970, 9980}},
		{10_000, 1, Decision{true, 0, 0, 10_000}}, // the entry at 0 left the window
		{10_010, 4, Decision{false, 1, -1, 9990}},
	})
}

func TestFixedWindow(t *testing.T) {
	runCalls(t, NewFixedWindow(2, 1000), []call{
		{100, 1, Decision{true, 1, 0, 1000}},
		{600, 1, Decision{true, 0, 0, 500}},
		{700, 1, Decision{false, 0, 400, 400}},
		{1100, 1, Decision{true, 1, 0, 1000}}, // a new window starts at the first request after expiry
		{1200, 3, Decision{false, 1, -1, 900}},
		{5000, 2, Decision{true, 0, 0, 1000}},
	})
}

func TestGCRA(t *testing.T) {
	// 5/s: one every 200 ms, burst 2.
	runCalls(t, NewGCRA(5, 2), []call{
		{0, 1, Decision{true, 1, 0, 200}},
		{0, 1, Decision{true, 0, 0, 400}},
		{0, 1, Decision{false, 0, 200, 400}},
		{100, 1, Decision{false, 0, 100, 300}},
		{200, 1, Decision{true, 0, 0, 400}},
		{200, 3, Decision{false, 0, -1, 400}},
		{10_000, 2, Decision{true, 0, 0, 400}},
	})
	// 3/s does not divide 1e6 µs: the interval rounds to 333333 µs.
	if got := EmissionIntervalUs(3); got != 333_333 {
		t.Errorf("EmissionIntervalUs(3) = %d, want 333333", got)
	}
}

// TestInvariants checks properties every model must keep on random input.
func TestInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		capacity := 1 + r.Int64N(20)
		ratePerSec := float64(1+r.IntN(4000)) / 100
		window := 100 + r.Int64N(5000)
		models := map[string]Limiter{
			"token bucket":   NewTokenBucket(capacity, ratePerSec),
			"sliding window": NewSlidingWindow(capacity, window),
			"fixed window":   NewFixedWindow(capacity, window),
			"gcra":           NewGCRA(ratePerSec, capacity),
		}
		for name, l := range models {
			now := int64(1_700_000_000_000)
			for i := range 100 {
				now += r.Int64N(500)
				cost := 1 + r.Int64N(3)
				d := l.Allow(now, cost)
				if d.Remaining < 0 || d.Remaining > capacity {
					t.Fatalf("round %d %s call %d: remaining %d out of [0,%d]", round, name, i, d.Remaining, capacity)
				}
				if d.Allowed && d.RetryMs != 0 {
					t.Fatalf("round %d %s call %d: allowed with retry %d", round, name, i, d.RetryMs)
				}
				if !d.Allowed && cost <= capacity && d.RetryMs <= 0 {
					t.Fatalf("round %d %s call %d: refused cost %d <= %d with retry %d", round, name, i, cost, capacity, d.RetryMs)
				}
				if d.ResetMs < 0 {
					t.Fatalf("round %d %s call %d: reset %d < 0", round, name, i, d.ResetMs)
				}
			}
		}
	}
}

// TestRetryIsHonest checks that waiting exactly RetryMs lets the same call
// pass, and that waiting one ms less does not, for limiters where the
// refusal depends only on time.
func TestRetryIsHonest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	mk := []func() Limiter{
		func() Limiter { return NewTokenBucket(7, 2.5) },
		func() Limiter { return NewTokenBucket(3, 0.3) },
		func() Limiter { return NewSlidingWindow(5, 3000) },
		func() Limiter { return NewFixedWindow(5, 3000) },
		func() Limiter { return NewGCRA(2.5, 4) },
		func() Limiter { return NewGCRA(3, 3) },
	}
	for i, newL := range mk {
		for range 50 {
			// Drive a limiter to a refusal, then probe a twin at retry-1 and retry.
			var history []call
			l := newL()
			now := int64(0)
			var d Decision
			cost := int64(1)
			for {
				now += r.Int64N(100)
				cost = 1 + r.Int64N(2)
				d = l.Allow(now, cost)
				history = append(history, call{now: now, cost: cost})
				if !d.Allowed {
					break
				}
			}
			replay := func(at int64) Decision {
				twin := newL()
				for _, c := range history {
					twin.Allow(c.now, c.cost)
				}
				return twin.Allow(at, cost)
			}
			if got := replay(now + d.RetryMs); !got.Allowed {
				t.Fatalf("limiter %d: refused again after waiting retry %d ms: %+v", i, d.RetryMs, got)
			}
			if d.RetryMs > 1 {
				if got := replay(now + d.RetryMs - 1); got.Allowed {
					t.Fatalf("limiter %d: allowed after %d ms, before retry %d ms", i, d.RetryMs-1, d.RetryMs)
				}
			}
		}
	}
}

// exactBucket is a reference token bucket in exact integer arithmetic: it
// counts in units of 2^-k micro-tokens, where k makes the refill per ms a
// whole number of units, and adds the refill for the time since the last
// call in full, so its answers cannot depend on how often it is asked.
type exactBucket struct {
	capacity, perMs, unit int64 // in units; units per ms; units per token
	tokens, last          int64
	started               bool
}

func newExactBucket(t *testing.T, capacity int64, ratePerSec float64) *exactBucket {
	t.Helper()
	perMs := ratePerSec * 1000 // the double the model and the script use
	for k := range 20 {
		if scaled := math.Ldexp(perMs, k); scaled == math.Trunc(scaled) {
			unit := int64(Micro) << k
			return &exactBucket{capacity: capacity * unit, perMs: int64(scaled), unit: unit}
		}
	}
	t.Fatalf("rate %g/s is not a short binary fraction of a micro-token per ms", ratePerSec)
	return nil
}

func (b *exactBucket) allow(now, cost int64) (bool, int64) {
	if !b.started {
		b.tokens, b.last, b.started = b.capacity, now, true
	}
	if now > b.last {
		b.tokens = min(b.capacity, b.tokens+(now-b.last)*b.perMs)
		b.last = now
	}
	ok := b.tokens >= cost*b.unit
	if ok {
		b.tokens -= cost * b.unit
	}
	return ok, b.tokens / b.unit
}

// TestTokenBucketKeepsFractionalRefill: whatever the call frequency, the
// model answers exactly like the unrounded reference bucket. The rates are
// chosen so rate x 1000 (micro-tokens per ms) is a short binary fraction,
// which makes elapsed x rate exact in float64 as well: any difference is
// refill the model dropped, not rounding. (Other rates may differ from the
// exact bucket by the rounding of one product, i.e. by one ms.)
func TestTokenBucketKeepsFractionalRefill(t *testing.T) {
	tests := []struct {
		capacity   int64
		ratePerSec float64
		forMs      int64
	}{
		{1, 0.00125, 2_000_000}, // 1.25 micro-tokens per ms: a token every 800 s
		{3, 0.0005, 7_000_000},  // 0.5 per ms: below one micro-token per ms
		{1, 0.05025, 100_000},   // 50.25 per ms
		{10, 2.5, 60_000},
		{2, 0.3125, 40_000},
	}
	for _, tt := range tests {
		for _, stepMs := range []int64{1, 2, 3, 50, 997, 1000} {
			if tt.forMs/stepMs > 2_000_000 {
				continue
			}
			t.Run(fmt.Sprintf("%d at %g/s every %d ms", tt.capacity, tt.ratePerSec, stepMs), func(t *testing.T) {
				m, ref := NewTokenBucket(tt.capacity, tt.ratePerSec), newExactBucket(t, tt.capacity, tt.ratePerSec)
				admitted := 0
				for now := int64(0); now < tt.forMs; now += stepMs {
					d := m.Allow(now, 1)
					ok, left := ref.allow(now, 1)
					if d.Allowed != ok || d.Remaining != left {
						t.Fatalf("call at %d ms: model allowed %v remaining %d, exact bucket %v %d (after %d admitted)",
							now, d.Allowed, d.Remaining, ok, left, admitted)
					}
					if ok {
						admitted++
					}
				}
			})
		}
	}
}

// TestSlowRefillIndependentOfCallFrequency: the reviewer's cases. A bucket
// of 1 at 0.00125/s admits 2 in 999 s whether asked once a second or 500
// times a second, and 1/h asked every few ms refills after an hour.
func TestSlowRefillIndependentOfCallFrequency(t *testing.T) {
	tests := []struct {
		capacity   int64
		ratePerSec float64
		forMs      int64
		want       int
	}{
		{1, 0.00125, 999_000, 2},
		{1, 1.0 / 3600, 3_601_000, 2}, // "1/h"
		{5, 1.0 / 60, 130_000, 7},     // "1/m": 5 at once, then at 60 s and 120 s
	}
	for _, tt := range tests {
		for _, stepMs := range []int64{1000, 100, 3, 2, 1} {
			if tt.forMs/stepMs > 1_500_000 {
				continue
			}
			if got := admitted(NewTokenBucket(tt.capacity, tt.ratePerSec), int(tt.forMs/stepMs), stepMs); got != tt.want {
				t.Errorf("bucket %d at %g/s, a call every %d ms for %d ms: admitted %d, want %d", tt.capacity, tt.ratePerSec, stepMs, tt.forMs, got, tt.want)
			}
		}
	}
}

// TestCallsThatCannotPassChangeNothing: calls whose cost exceeds the quota
// are refused without touching the state, so sprinkling them between the
// calls of a sequence (asking more often) changes none of its answers.
func TestCallsThatCannotPassChangeNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 40 {
		quota := 1 + r.Int64N(10)
		ratePerSec := []float64{0.00125, 1.0 / 3600, 0.3, 2.5, 7, 1.0 / 3}[r.IntN(6)]
		window := 100 + r.Int64N(5000)
		mk := map[string]func() Limiter{
			"token bucket":   func() Limiter { return NewTokenBucket(quota, ratePerSec) },
			"gcra":           func() Limiter { return NewGCRA(ratePerSec, quota) },
			"sliding window": func() Limiter { return NewSlidingWindow(quota, window) },
			"fixed window":   func() Limiter { return NewFixedWindow(quota, window) },
		}
		step := int64(1000 / ratePerSec) // a few calls per refill
		for name, newL := range mk {
			plain, probed := newL(), newL()
			now := int64(1_700_000_000_000)
			for i := range 60 {
				next := now + r.Int64N(step+1)
				// Probes every ms (at most 500) between now and next.
				for at := now + 1; at < next && at <= now+500; at++ {
					if d := probed.Allow(at, quota+1); d.Allowed || d.RetryMs != -1 {
						t.Fatalf("round %d %s: probe of cost %d > %d = %+v", round, name, quota+1, quota, d)
					}
				}
				now = next
				cost := 1 + r.Int64N(quota)
				want, got := plain.Allow(now, cost), probed.Allow(now, cost)
				if got != want {
					t.Fatalf("round %d %s (quota %d, %g/s) call %d at %d cost %d: with probes %+v, without %+v",
						round, name, quota, ratePerSec, i, now, cost, got, want)
				}
			}
		}
	}
}
