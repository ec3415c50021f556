package judge

import (
	"strings"
	"testing"
)

func specModel(t *testing.T, spec string) Expectation {
	t.Helper()
	x, err := ParseModel(spec)
	if err != nil {
		t.Fatalf("ParseModel(%q): %v", spec, err)
	}
	return *x
}

// burst is n calls all sent at 0 and answered spread evenly up to spanMs,
// the first allowed of them allowed.
func burst(n, allowed int, spanMs int64) []Call {
	calls := make([]Call, n)
	for i := range calls {
		calls[i] = Call{SendNs: 0, DoneNs: int64(i) * spanMs * 1e6 / int64(n), Allowed: i < allowed}
	}
	return calls
}

// late delays every answer by ms.
func late(calls []Call, ms int64) []Call {
	for i := range calls {
		calls[i].DoneNs += ms * 1e6
	}
	return calls
}

// TestTrialBounds: a bucket of 10 at 5/s whose trial took 700 ms admits
// from 10 (every call decided at once) to 13 (each at its answer); 9 and
// 14 are outside, and a bucket that does not refill admits exactly 10.
func TestTrialBounds(t *testing.T) {
	const startMs = 1_700_000_000_000
	refill := specModel(t, "token-bucket:burst=10,rate=5/s")
	still := specModel(t, "token-bucket:burst=10,rate=1/h")
	for _, tc := range []struct {
		name     string
		x        Expectation
		calls    []Call
		low, hi  int64
		wantPass bool
	}{
		{"refilling, decided early", refill, burst(1000, 10, 700), 10, 13, true},
		{"refilling, decided late", refill, burst(1000, 13, 700), 10, 13, true},
		{"refilling, one over", refill, burst(1000, 14, 700), 10, 13, false},
		{"refilling, one under", refill, burst(1000, 9, 700), 10, 13, false},
		// the first answers came 400 ms late: the script still decided the
		// first ten at once, and refilled 3 by the last answer
		{"refilling, answers late", refill, late(burst(1000, 13, 300), 400), 10, 13, true},
		{"refilling, answers late, one over", refill, late(burst(1000, 14, 300), 400), 10, 13, false},
		{"still, exact", still, burst(200, 10, 600), 10, 10, true},
		{"still, off by one", still, burst(200, 11, 600), 10, 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Trial(tc.x, startMs, tc.calls)
			if b.Low != tc.low || b.High != tc.hi || b.Pass != tc.wantPass {
				t.Errorf("Trial = %d to %d pass %v (observed %d), want %d to %d pass %v", b.Low, b.High, b.Pass, b.Observed, tc.low, tc.hi, tc.wantPass)
			}
		})
	}
	// A failed call may have been admitted unseen: it lowers the low bound.
	calls := burst(200, 9, 10)
	calls[50].Unknown = true
	if b := Trial(still, startMs, calls); !b.Pass || b.Low != 9 {
		t.Errorf("Trial with one failed call = %d to %d pass %v, want 9 to 10 pass", b.Low, b.High, b.Pass)
	}
}

// seq is calls one after another, each taking 1 ms, every gapMs.
func seq(allowed []bool, gapMs int64) []Call {
	calls := make([]Call, len(allowed))
	for i, a := range allowed {
		at := int64(i) * gapMs * 1e6
		calls[i] = Call{SendNs: at, DoneNs: at + 1e6, Allowed: a}
	}
	return calls
}

func decisions(s string) []bool {
	out := make([]bool, len(s))
	for i, c := range s {
		out[i] = c == 'y'
	}
	return out
}

// TestSequential: each call compared with the model at its time; the
// first disagreement is named, over- and under-admission alike, and a
// refill between a call's send and its answer is not one.
func TestSequential(t *testing.T) {
	const startMs = 1_700_000_000_000
	bucket := specModel(t, "token-bucket:burst=10,rate=5/s")
	window := specModel(t, "sliding-window:limit=3,window=1s")
	for _, tc := range []struct {
		name  string
		x     Expectation
		calls []Call
		first int // 0: pass
		msg   string
	}{
		{"correct", bucket, seq(decisions("yyyyyyyyyynn"), 0), 0, "10 of 12 allowed"},
		{"off by one", bucket, seq(decisions("yyyyyyyyyyyn"), 0), 11, "call 11 allowed; the model refuses it: 10 admitted in 1.0 ms by token bucket 10 + 5/s"},
		{"under", bucket, seq(decisions("yyyyyyyyynn"), 0), 10, "call 10 refused; the model admits it: 9 admitted"},
		// 250 ms apart: one token comes back between calls 11 and 12
		{"refill", bucket, seq(decisions("yyyyyyyyyyyn"), 25), 0, ""},
		{"window", window, seq(decisions("yyynnnnnyyyn"), 125), 0, ""},
		{"window over", window, seq(decisions("yyyynnnnyyyn"), 125), 4, "call 4 allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Sequential(tc.x, startMs, tc.calls)
			got := 0
			if s.First != nil {
				got = s.First.N
			}
			if got != tc.first || s.Pass != (tc.first == 0) || !strings.Contains(s.Message(), tc.msg) {
				t.Errorf("Sequential: first disagreement %d (pass %v): %s; want %d and %q", got, s.Pass, s.Message(), tc.first, tc.msg)
			}
		})
	}
	// a call sent before a refill and answered after it may go either way
	calls := seq(decisions("yyyyyyyyyyy"), 0)
	calls[10] = Call{SendNs: 100e6, DoneNs: 250e6, Allowed: true}
	if s := Sequential(bucket, startMs, calls); !s.Pass {
		t.Errorf("a call answered after the refill: %s", s.Message())
	}
	calls[10].DoneNs = 150e6
	if s := Sequential(bucket, startMs, calls); s.Pass {
		t.Errorf("a call answered before any refill but allowed passed")
	}
	// a window of 100 ms, 2 allowed: call 1 was slow (0-30 ms) and the
	// script decided it late, so call 3 at 110-111 ms still saw it and was
	// refused; the earliest moments would place call 1 at 0 and call 3
	// outside its window
	slow := []Call{{0, 30e6, true, false}, {40e6, 41e6, true, false}, {110e6, 111e6, false, false}, {200e6, 201e6, true, false}}
	if s := Sequential(window2(t), startMs, slow); !s.Pass {
		t.Errorf("a slow first call decided late: %s", s.Message())
	}
	slow[0].DoneNs = 20e6
	slow[2] = Call{SendNs: 125e6, DoneNs: 126e6}
	if s := Sequential(window2(t), startMs, slow); s.Pass {
		t.Errorf("call 3 refused 125 ms after call 1's answer at 20 ms passed a window of 100 ms")
	}
}

func window2(t *testing.T) Expectation { return specModel(t, "sliding-window:limit=2,window=100ms") }

func TestParseModelRefusesPolicies(t *testing.T) {
	for _, s := range []string{"auto", "none", "", "token-bucket:burst=10"} {
		if _, err := ParseModel(s); err == nil {
			t.Errorf("ParseModel(%q) = nil error", s)
		}
	}
}
