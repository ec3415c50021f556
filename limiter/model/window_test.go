package model

import (
	"math/rand/v2"
	"testing"
)

// burstAt sends n calls at now and counts the admitted.
func burstAt(l Limiter, now int64, n int) int {
	got := 0
	for range n {
		if l.Allow(now, 1).Allowed {
			got++
		}
	}
	return got
}

func TestSlidingWindowCounter(t *testing.T) {
	// 10 per 1 s, windows on the clock: a full window, then half of it
	// still inside the sliding window at 1.5 s
	l := NewSlidingWindowCounter(10, 1000, RoundFloor, AlignClock, 0, false)
	if got := burstAt(l, 100, 20); got != 10 {
		t.Errorf("first window: %d admitted, want 10", got)
	}
	if got := burstAt(l, 1500, 20); got != 5 {
		t.Errorf("at 1.5 s: %d admitted, want 5 (10 x 0.5 weighted)", got)
	}
	// two windows later nothing of the past is left
	if got := burstAt(l, 3100, 20); got != 10 {
		t.Errorf("at 3.1 s: %d admitted, want 10", got)
	}

	// refused calls that count keep a hammering client refused
	c := NewSlidingWindowCounter(10, 1000, RoundFloor, AlignClock, 0, true)
	burstAt(c, 100, 20)
	if got := burstAt(c, 1500, 20); got != 0 {
		t.Errorf("counting refused, at 1.5 s: %d admitted, want 0 (20 x 0.5 = 10 weighted)", got)
	}

	// the roundings differ on a fraction: 3 x 0.5 = 1.5
	for round, want := range map[Rounding]int{RoundFloor: 9, RoundNearest: 8, RoundNone: 8} {
		r := NewSlidingWindowCounter(10, 1000, round, AlignClock, 0, false)
		burstAt(r, 100, 3)
		if got := burstAt(r, 1500, 20); got != want {
			t.Errorf("rounding %d: %d admitted at 1.5 s, want %d", round, got, want)
		}
	}

	// aligned to the first request: its windows start there
	f := NewSlidingWindowCounter(10, 1000, RoundFloor, AlignFirst, 0, false)
	burstAt(f, 700, 10)
	if got := burstAt(f, 1600, 5); got != 0 {
		t.Errorf("first-aligned, 0.9 s after the first request: %d admitted, want 0 (still the first window)", got)
	}
	if got := burstAt(f, 2200, 20); got != 5 {
		t.Errorf("first-aligned, half into the second window: %d admitted, want 5", got)
	}
}

// TestHAProxyNumbers replays the counts docs/limiters.md measured on
// Debian's haproxy (http_req_rate(2s), deny above 3, counting denials).
func TestHAProxyNumbers(t *testing.T) {
	a := NewSlidingWindowCounter(3, 2000, RoundFloor, AlignFirst, 0, true)
	b := NewSlidingWindowCounter(3, 2000, RoundFloor, AlignFirst, 0, true)
	if burstAt(a, 0, 3) != 3 || burstAt(b, 0, 13) != 3 {
		t.Fatal("first period")
	}
	if !a.Allow(2100, 1).Allowed || b.Allow(2100, 1).Allowed {
		t.Error("at 2.1 s: a must pass (1 + floor(3 x 1.9/2) = 3), b not (the denials counted)")
	}
	if got := burstAt(a, 3000, 5); got != 1 {
		t.Errorf("at 3.0 s: a admitted %d of 5, want 1", got)
	}
}

// TestLeakyBucketNumbers replays what Debian's nginx did with rate=2r/s
// burst=3 nodelay (docs/limiters.md).
func TestLeakyBucketNumbers(t *testing.T) {
	l := NewLeakyBucket(2000, 3, -1)
	if got := burstAt(l, 0, 5); got != 4 {
		t.Errorf("a new key: %d of 5 at once, want 4 (burst + 1)", got)
	}
	if got := burstAt(l, 1000, 5); got != 2 {
		t.Errorf("1 s later: %d admitted, want 2", got)
	}
	burstAt(l, 1000, 20) // refusals change nothing
	if got := burstAt(l, 1550, 5); got != 1 {
		t.Errorf("550 ms later: %d admitted, want exactly 1", got)
	}
	// two-stage: delay=1 serves 2 at once, delays the rest of the burst
	d := NewLeakyBucket(2000, 3, 1)
	var delays []int64
	for range 5 {
		if dec := d.Allow(0, 1); dec.Allowed {
			delays = append(delays, dec.RetryMs)
		}
	}
	if len(delays) != 4 || delays[0] != 0 || delays[1] != 0 || delays[2] != 500 || delays[3] != 1000 {
		t.Errorf("delay=1: delays %v, want [0 0 500 1000]", delays)
	}
	// 7r/m is 116 milli-requests per second, truncated: the leak per ms rounds down
	m := NewLeakyBucket(7000/60, 0, -1)
	m.Allow(0, 1)
	if m.Allow(8600, 1).Allowed || !m.Allow(8700, 1).Allowed {
		t.Error("7r/m: the second request passes only once 1000 milli-requests leaked (8.63 s)")
	}
}

// TestWindowModelsInvariants: over random arrivals, every model admits at
// most its quota per window (counted its own way) and a refused call of a
// model that does not count refusals changes none of its later answers.
func TestWindowModelsInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		limit := 1 + r.Int64N(10)
		w := 100 + r.Int64N(2000)
		var now int64
		clock := NewFixedWindowAligned(limit, w, 0, trial%2 == 0)
		perWindow := map[int64]int64{}
		for range 300 {
			now += r.Int64N(w / 3)
			if clock.Allow(now, 1).Allowed {
				perWindow[now/w]++
			}
		}
		for k, n := range perWindow {
			if n > limit {
				t.Fatalf("trial %d: the clock-aligned window %d admitted %d > %d", trial, k, n, limit)
			}
		}
		// a sliding window counter never admits more than 2 x limit in
		// any one window's span (its weighted count allows the previous
		// window's tail)
		swc := NewSlidingWindowCounter(limit, w, Rounding(trial%3), Alignment(trial%2), 0, false)
		var times []int64
		now = 0
		for range 300 {
			now += r.Int64N(w / 3)
			if swc.Allow(now, 1).Allowed {
				times = append(times, now)
			}
		}
		for i := range times {
			n := 0
			for j := i; j < len(times) && times[j] < times[i]+w; j++ {
				n++
			}
			if int64(n) > 2*limit {
				t.Fatalf("trial %d: %d admitted within one window, limit %d", trial, n, limit)
			}
		}
	}
}
