package load

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// TestRunWithFaults: the engine plays the faults on the run's own clock
// and judges the windows: a target that serves everything while a
// (pretend) fault holds is fail-open under --expect auto, read from its
// RateLimit-Policy before the fault.
func TestRunWithFaults(t *testing.T) {
	p := limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.Rate{Count: 5, Per: time.Second}}
	lt := newLimitedTarget(t, p)
	var open atomic.Bool
	h := lt.Config.Handler
	lt.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open.Load() {
			return // the limiter is out: served without a decision
		}
		h.ServeHTTP(w, r)
	})
	var gotStart time.Time
	x, _ := judge.ParseExpect("auto")
	faults := &Faults{
		FaultPlan: judge.FaultPlan{
			Specs:  []judge.PlannedFault{{Spec: "pause:1s@1s", Kind: "pause", At: time.Second, For: time.Second}},
			Server: "redis://127.0.0.1:1", During: judge.DuringOpen,
		},
		Run: func(ctx context.Context, start time.Time) []judge.Disruption {
			gotStart = start
			d := judge.Disruption{Spec: "pause:1s@1s", Kind: "pause", Timed: true}
			time.Sleep(time.Until(start.Add(time.Second)))
			open.Store(true)
			d.Start = time.Now()
			time.Sleep(time.Until(start.Add(2 * time.Second)))
			open.Store(false)
			d.End = time.Now()
			return []judge.Disruption{d}
		},
	}
	res := runLoad(t, Options{Target: lt.URL, Rate: rate.MustParse("50/s"), Duration: 3 * time.Second, Identities: 1, Expect: x, Faults: faults})
	if gotStart.IsZero() || res.Faults == nil {
		t.Fatalf("the faults did not run: %+v", res.Faults)
	}
	fr := res.Faults
	if fr.Model != "token-bucket:burst=5,rate=5/s" {
		t.Errorf("model %q, want the bucket reading of the policy", fr.Model)
	}
	f := fr.Faults[0]
	if f.Behaviour != judge.FailOpen || !f.Pass || f.StartMs < 990 || f.EndMs > 2100 {
		t.Fatalf("%+v", f)
	}
	if res.Verdict != "pass" {
		t.Errorf("verdict %q: %v", res.Verdict, res.VerdictMessages)
	}
	var expectWarn bool
	for _, c := range res.CheckList() {
		if c.ID == tally.CheckExpect {
			expectWarn = c.Warning
		}
	}
	if !expectWarn {
		t.Error("the whole-run expect check is not a warning under faults")
	}
	t.Log(f.Line)
}
