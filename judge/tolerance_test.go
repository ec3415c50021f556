package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// TestToleranceCappedBySent (issue 32): an absurd model (a burst and a
// rate of 10^9) made the jitter term millions, far more than the 600
// requests sent; every term is now at most the requests sent, and the
// line says the model cannot be told from no limiter at this load. A
// model that refuses some of the run says nothing of the kind.
func TestToleranceCappedBySent(t *testing.T) {
	p := limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}, Cost: 1}
	arr := simulate(t, p, 600, 50*time.Millisecond, 1, 0, 1)
	huge := p
	huge.Capacity, huge.Rate = 1_000_000_000, rate.Rate{Count: 1_000_000_000, Per: time.Second}
	j := Judge(Expectation{Spec: "token-bucket:burst=1000000000,rate=1000000000/s", Parts: []limiter.Params{huge}},
		Input{Arrivals: arr, Identities: 1, StartMs: 1_000_000, JitterMs: 2.5})
	for name, term := range map[string]int64{"jitter": j.Tol.Jitter, "shift": j.Tol.Shift, "rounding": j.Tol.Rounding, "unknown": j.Tol.Unknown} {
		if term > j.Of {
			t.Errorf("%s %d exceeds the %d requests sent (%s)", name, term, j.Of, j.Tol)
		}
	}
	if j.Expected != 600 || !strings.Contains(j.Line(), "cannot be told from no limiter at this load") {
		t.Errorf("Line() = %q, want it to say the model cannot be told from no limiter", j.Line())
	}
	j = Judge(Expectation{Spec: "token-bucket:burst=10,rate=5/s", Parts: []limiter.Params{p}}, Input{Arrivals: arr, Identities: 1, StartMs: 1_000_000, JitterMs: 1})
	if strings.Contains(j.Line(), "no limiter") || j.Note != "" {
		t.Errorf("a model that refuses: Line() = %q, note %q", j.Line(), j.Note)
	}
	// the terms alone, at the edges: nothing sent, an infinite rate
	if tol := tolerance(1e300, 1000, 1e300, 5, 9, 7, 3); tol.Jitter != 3 || tol.Shift != 3 || tol.Unknown != 3 || tol.Rounding != 1 {
		t.Errorf("tolerance capped at 3 sent = %+v", tol)
	}
	if tol := tolerance(5, 1, 10, 0, 0, 0, 0); tol.Total() != 0 {
		t.Errorf("tolerance of nothing sent = %+v, want 0", tol)
	}
}
