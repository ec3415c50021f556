package model

import "testing"

// hit is one request of a table: at ms, the answer wanted.
type hit struct {
	at      int64
	allowed bool
	delay   int64 // an admitted hit's RetryMs (a delaying model's hold)
}

func runHits(t *testing.T, name string, l Limiter, calls []hit) {
	t.Helper()
	for i, c := range calls {
		d := l.Allow(c.at, 1)
		got := int64(0)
		if d.Allowed {
			got = d.RetryMs
		}
		if d.Allowed != c.allowed || got != c.delay {
			t.Errorf("%s hit %d at %d ms: allowed %v delay %d, want %v delay %d", name, i, c.at, d.Allowed, got, c.allowed, c.delay)
		}
	}
}

func TestFixedWindowRules(t *testing.T) {
	// elastic: every request, refused ones too, restarts the window
	runHits(t, "elastic", NewFixedWindowRules(FixedRules{Limit: 2, WindowMs: 1000, Elastic: true}), []hit{
		{0, true, 0}, {100, true, 0}, {200, false, 0},
		{900, false, 0}, {1800, false, 0}, // each moves the end 1 s on
		{2799, false, 0}, {3799, true, 0}, // 1 s after the last one: a fresh window
	})
	// the same calls, expiry fixed: the window ends 1 s after the first
	runHits(t, "fixed", NewFixedWindow(2, 1000), []hit{
		{0, true, 0}, {100, true, 0}, {200, false, 0}, {900, false, 0}, {1800, true, 0},
	})
	// windows ticking from the key's creation: [500, 1500), [1500, 2500), ...
	runHits(t, "creation", NewFixedWindowRules(FixedRules{Limit: 2, WindowMs: 1000, Anchor: AnchorCreation}), []hit{
		{500, true, 0}, {600, true, 0}, {700, false, 0},
		{1600, true, 0}, {2400, true, 0}, {2450, false, 0},
		{2500, true, 0}, // a new tick, though the window began at 1600 for this request
		{5100, true, 0}, {5200, true, 0}, {5400, false, 0}, {5500, true, 0},
	})
	// re-anchored at the first request after a window ends: 1600 starts [1600, 2600)
	runHits(t, "first", NewFixedWindow(2, 1000), []hit{
		{500, true, 0}, {600, true, 0}, {1600, true, 0}, {2400, true, 0}, {2500, false, 0}, {2600, true, 0},
	})
	// whole-second timers, refused at the limit: 2 of 3 admitted; the
	// window of 1.7 s (second 1) lasts until second 1 + 2 < now, 4.0 s
	runHits(t, "seconds", NewFixedWindowRules(FixedRules{Limit: 3, WindowMs: 2000, WholeSeconds: true, RefuseAtLimit: true}), []hit{
		{1700, true, 0}, {1800, true, 0}, {1900, false, 0}, {3999, false, 0},
		{4000, true, 0}, {4001, true, 0}, {4002, false, 0}, {6999, false, 0}, {7000, true, 0},
	})
}

func TestSlowdown(t *testing.T) {
	runHits(t, "capped", NewSlowdown(FixedRules{Limit: 2, WindowMs: 1000}, 100, 250), []hit{
		{0, true, 0}, {0, true, 0}, {10, true, 100}, {20, true, 200}, {30, true, 250}, {40, true, 250},
		{1000, true, 0}, {1001, true, 0}, {1002, true, 100},
	})
	runHits(t, "uncapped", NewSlowdown(FixedRules{Limit: 1, WindowMs: 1000}, 1000, 0), []hit{
		{0, true, 0}, {1, true, 1000}, {2, true, 2000}, {3, true, 3000},
	})
}

func TestTokenBucketWhole(t *testing.T) {
	// one request every 150 ms to a 5/s bucket of 2: once it is empty,
	// one per 300 ms, where the exact bucket admits 5 per second
	whole, exact := NewTokenBucketWhole(2, 5), NewTokenBucket(2, 5)
	var w, e int
	for at := int64(0); at <= 6000; at += 150 {
		if whole.Allow(at, 1).Allowed {
			w++
		}
		if exact.Allow(at, 1).Allowed {
			e++
		}
	}
	// whole: 0, 150, then 450 + 300k up to 6000; exact: 2 + 5 x 6
	if w != 21 || e != 32 {
		t.Errorf("6 s at one request per 150 ms: whole %d admitted, exact %d; want 21 and 32", w, e)
	}
	runHits(t, "whole", NewTokenBucketWhole(2, 5), []hit{
		{0, true, 0}, {0, true, 0}, {0, false, 0},
		{199, false, 0}, {200, true, 0}, // one whole token, from the last admission at 0
		{399, false, 0}, {550, true, 0}, // 350 ms since 200: 1.75 tokens, one credited
		{5000, true, 0}, {5000, true, 0}, {5000, false, 0}, // capped at 2
	})
	// a refused hit says when the whole token is due
	b := NewTokenBucketWhole(1, 4)
	b.Allow(0, 1)
	if d := b.Allow(100, 1); d.Allowed || d.RetryMs != 150 {
		t.Errorf("4/s, 100 ms after the admission: %+v, want refused, retry in 150 ms", d)
	}
}

func TestBlocking(t *testing.T) {
	fresh := func() Limiter { return NewFixedWindow(2, 1000) }
	runHits(t, "block", NewBlocking(fresh, 3000), []hit{
		{0, true, 0}, {10, true, 0}, {20, false, 0}, // the refusal starts a 3 s block
		{1500, false, 0}, {3019, false, 0}, // the plain window would admit at 1000
		{3020, true, 0}, {3030, true, 0}, {3040, false, 0}, // a clean key after the block
	})
	b := NewBlocking(fresh, 3000)
	b.Allow(0, 1)
	b.Allow(0, 1)
	if d := b.Allow(500, 1); d.RetryMs != 3000 {
		t.Errorf("the refusal that starts a block: %+v, want retry 3000 ms", d)
	}
	if d := b.Allow(2000, 1); d.Allowed || d.RetryMs != 1500 {
		t.Errorf("inside the block: %+v, want refused, retry 1500 ms", d)
	}
	// a delaying model never refuses: no block
	s := NewBlocking(func() Limiter { return NewSlowdown(FixedRules{Limit: 1, WindowMs: 1000}, 100, 0) }, 5000)
	for at := range int64(5) {
		if !s.Allow(at, 1).Allowed {
			t.Errorf("slowdown with a block refused at %d ms", at)
		}
	}
}
