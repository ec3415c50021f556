package load

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// faultParams is the limiter of the synthetic runs: a bucket of 5
// refilled at 10/s, loaded at 100/s.
var faultParams = limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.Rate{Count: 10, Per: time.Second}, Cost: 1}

// synthRun is 10 s at 100/s against a real limiter (the model itself) that
// behaves as behave says while a fault holds from 3 s to 5 s.
func synthRun(t *testing.T, behave string) []Arrival {
	t.Helper()
	real := newModel(faultParams)
	const startMs = 1_000_000
	from, to := 3*time.Second, 5*time.Second
	var out []Arrival
	for i := range 1000 {
		due := time.Duration(i) * 10 * time.Millisecond
		a := Arrival{DueNs: int64(due), SendNs: int64(due), DoneNs: int64(due + 2*time.Millisecond)}
		decide := func(at time.Duration) int {
			if real.Allow(startMs+int64(at/time.Millisecond), 1).Allowed {
				return 200
			}
			return 429
		}
		inFault := due >= from && due < to
		switch {
		case !inFault || behave == Unaffected:
			a.Status = decide(due)
		case behave == FailOpen:
			a.Status = 200
			a.DoneNs += int64(50 * time.Millisecond) // the limiter's deadline
		case behave == FailClosed:
			a.Status = 503
			a.DoneNs += int64(50 * time.Millisecond)
		case behave == Stalled:
			a.Status = decide(to) // queued until the pause ends
			a.DoneNs = int64(to + 2*time.Millisecond)
		}
		out = append(out, a)
	}
	return out
}

func synthFaults(during string, recoverWithin time.Duration) *Faults {
	return &Faults{
		Specs:  []PlannedFault{{Spec: "pause:2s@3s", Kind: "pause", At: 3 * time.Second, For: 2 * time.Second}},
		Server: "redis://127.0.0.1:7001", During: during, RecoverWithin: recoverWithin,
		Run: func(context.Context, time.Time) []Disruption { return nil },
	}
}

func judgeSynth(t *testing.T, behave, during string, recoverWithin time.Duration) *FaultReport {
	t.Helper()
	start := time.Unix(1000, 0)
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Server: "redis://127.0.0.1:7001", Timed: true,
		Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second)}}
	p := faultParams
	in := faultInput{arrivals: synthRun(t, behave), identities: 1, startMs: 1_000_000, duration: 10 * time.Second,
		expectOK: func(s int) bool { return s == 200 || s == 429 }, params: &p, model: specOf(p)}
	return judgeFaults(synthFaults(during, recoverWithin), ds, start, in)
}

func TestJudgeFaultsClassifies(t *testing.T) {
	for _, behave := range []string{FailOpen, FailClosed, Stalled, Unaffected} {
		t.Run(behave, func(t *testing.T) {
			rep := judgeSynth(t, behave, DuringAny, 0)
			if len(rep.Windows) != 3 {
				t.Fatalf("windows %+v, want before, during, after", rep.Windows)
			}
			base := rep.Windows[0]
			if base.Phase != "before" || base.Requests != 300 || abs(base.Extra) > base.Tolerance {
				t.Errorf("baseline %+v: want 300 requests agreeing with the model", base)
			}
			f := rep.Faults[0]
			if f.Behaviour != behave {
				t.Fatalf("behaviour %q, want %q: %s", f.Behaviour, behave, f.Line)
			}
			if !f.Pass || !f.Recovered || f.RecoverMs > 1000 || behave != Unaffected && f.RecoverMs == 0 && behave != Stalled {
				t.Errorf("pass %v recovered %v after %v ms: %s", f.Pass, f.Recovered, f.RecoverMs, f.Line)
			}
			if !strings.HasPrefix(f.Line, "pause:2s@3s at 3.00s-5.00s: "+behave) {
				t.Errorf("line %q", f.Line)
			}
		})
	}
}

// The negative controls: the verdict fails when the target does what
// --during-fault does not allow, and names the fault.
func TestJudgeFaultsDuringFaultVerdict(t *testing.T) {
	cases := []struct {
		behave, during string
		pass           bool
	}{
		{FailOpen, DuringOpen, true},
		{FailOpen, DuringClosed, false},
		{FailClosed, DuringClosed, true},
		{FailClosed, DuringOpen, false},
		{Stalled, DuringOpen, false},
		{Stalled, DuringClosed, false},
		{Unaffected, DuringOpen, true},
		{Unaffected, DuringUnaffected, true},
		{FailOpen, DuringUnaffected, false},
	}
	for _, c := range cases {
		rep := judgeSynth(t, c.behave, c.during, 0)
		res := &Result{Faults: rep}
		var got *bool
		for _, ch := range res.faultChecks() {
			if ch.ID == CheckFaultPfx+"pause:2s@3s" {
				p := ch.Pass
				got = &p
				if !ch.Pass && !strings.Contains(ch.Message, "--during-fault allows") {
					t.Errorf("%s/%s: message %q does not say what is allowed", c.behave, c.during, ch.Message)
				}
			}
		}
		if got == nil || *got != c.pass {
			t.Errorf("%s with --during-fault %s: pass %v, want %v", c.behave, c.during, got, c.pass)
		}
	}
}

func TestJudgeFaultsRecoverWithin(t *testing.T) {
	rep := judgeSynth(t, FailOpen, DuringAny, time.Millisecond)
	f := rep.Faults[0]
	if f.RecoverMs < 1 || f.RecoverPass {
		t.Errorf("recover within 1ms passed after %v ms", f.RecoverMs)
	}
	rep = judgeSynth(t, FailOpen, DuringAny, 5*time.Second)
	if !rep.Faults[0].RecoverPass {
		t.Errorf("recover within 5s failed: %s", rep.Faults[0].Line)
	}
}

// A limiter that never recovers: after the fault it keeps admitting
// everything, and the report says it was not back within tolerance.
func TestJudgeFaultsNoRecovery(t *testing.T) {
	start := time.Unix(1000, 0)
	arr := synthRun(t, FailOpen)
	for i := range arr {
		if arr[i].DueNs >= int64(3*time.Second) {
			arr[i].Status = 200
		}
	}
	p := faultParams
	in := faultInput{arrivals: arr, identities: 1, startMs: 1_000_000, duration: 10 * time.Second,
		expectOK: func(s int) bool { return s == 200 || s == 429 }, params: &p, model: specOf(p)}
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second), Timed: true}}
	rep := judgeFaults(synthFaults(DuringOpen, 2*time.Second), ds, start, in)
	f := rep.Faults[0]
	if f.Recovered || f.RecoverPass {
		t.Fatalf("recovered %v (%v ms), pass %v: %s", f.Recovered, f.RecoverMs, f.RecoverPass, f.Line)
	}
	res := &Result{Faults: rep}
	failed := 0
	for _, c := range res.faultChecks() {
		if !c.Pass {
			failed++
			if c.ID != CheckRecoverPfx+"pause:2s@3s" {
				t.Errorf("failed check %s: %s", c.ID, c.Message)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d failed checks, want the recovery one", failed)
	}
}

// A fault that could not be played fails its check, whatever
// --during-fault allows.
func TestJudgeFaultsNotInjected(t *testing.T) {
	start := time.Unix(1000, 0)
	p := faultParams
	in := faultInput{arrivals: synthRun(t, Unaffected), identities: 1, startMs: 1_000_000, duration: 10 * time.Second,
		expectOK: func(s int) bool { return s == 200 || s == 429 }, params: &p, model: specOf(p)}
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Err: "CLIENT PAUSE: NOPERM"}}
	rep := judgeFaults(synthFaults(DuringAny, 0), ds, start, in)
	if f := rep.Faults[0]; f.Behaviour != NotInjected || f.Pass || !strings.Contains(f.Line, "NOPERM") {
		t.Fatalf("%+v", f)
	}
}

func TestFaultsValidate(t *testing.T) {
	x := &Expectation{Spec: "token-bucket:burst=5,rate=10/s", Params: faultParams}
	f := synthFaults(DuringAny, 0)
	if err := f.validate(10*time.Second, x); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Faults) (time.Duration, *Expectation)
		want string
	}{
		{"no expect", func(*Faults) (time.Duration, *Expectation) { return 10 * time.Second, nil }, "--expect"},
		{"too late", func(*Faults) (time.Duration, *Expectation) { return 5500 * time.Millisecond, x }, "too late"},
		{"no baseline", func(f *Faults) (time.Duration, *Expectation) {
			f.Specs[0].At = 500 * time.Millisecond
			return 10 * time.Second, x
		}, "baseline"},
		{"during", func(f *Faults) (time.Duration, *Expectation) { f.During = "sometimes"; return 10 * time.Second, x }, "--during-fault"},
	} {
		f := synthFaults(DuringAny, 0)
		d, xx := c.mod(f)
		err := f.validate(d, xx)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

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
	x, _ := ParseExpect("auto")
	faults := &Faults{
		Specs:  []PlannedFault{{Spec: "pause:1s@1s", Kind: "pause", At: time.Second, For: time.Second}},
		Server: "redis://127.0.0.1:1", During: DuringOpen,
		Run: func(ctx context.Context, start time.Time) []Disruption {
			gotStart = start
			d := Disruption{Spec: "pause:1s@1s", Kind: "pause", Timed: true}
			time.Sleep(time.Until(start.Add(time.Second)))
			open.Store(true)
			d.Start = time.Now()
			time.Sleep(time.Until(start.Add(2 * time.Second)))
			open.Store(false)
			d.End = time.Now()
			return []Disruption{d}
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
	if f.Behaviour != FailOpen || !f.Pass || f.StartMs < 990 || f.EndMs > 2100 {
		t.Fatalf("%+v", f)
	}
	if res.Verdict != "pass" {
		t.Errorf("verdict %q: %v", res.Verdict, res.VerdictMessages)
	}
	var expectWarn bool
	for _, c := range res.CheckList() {
		if c.ID == CheckExpect {
			expectWarn = c.Warning
		}
	}
	if !expectWarn {
		t.Error("the whole-run expect check is not a warning under faults")
	}
	t.Log(f.Line)
}

// A target that drops every connection while the fault holds (no status
// at all) failed closed: requests without a status are refusals here,
// not unknowns that widen the tolerance.
func TestJudgeFaultsTransportErrorsFailClosed(t *testing.T) {
	arr := synthRun(t, Unaffected)
	for i := range arr {
		if d := arr[i].DueNs; d >= int64(3*time.Second) && d < int64(5*time.Second) {
			arr[i].Status = 0
		}
	}
	start := time.Unix(1000, 0)
	p := faultParams
	in := faultInput{arrivals: arr, identities: 1, startMs: 1_000_000, duration: 10 * time.Second,
		expectOK: func(s int) bool { return s == 200 || s == 429 }, params: &p, model: specOf(p)}
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second), Timed: true}}
	rep := judgeFaults(synthFaults(DuringOpen, 0), ds, start, in)
	if f := rep.Faults[0]; f.Behaviour != FailClosed || f.Pass {
		t.Fatalf("%s", f.Line)
	}
}

// Without a model nothing tells fail-open from unaffected: a gate other
// than any fails, saying why.
func TestJudgeFaultsNoModelFailsGates(t *testing.T) {
	start := time.Unix(1000, 0)
	in := faultInput{arrivals: synthRun(t, FailOpen), identities: 1, startMs: 1_000_000, duration: 10 * time.Second,
		expectOK: func(s int) bool { return s == 200 || s == 429 }}
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second), Timed: true}}
	for during, pass := range map[string]bool{DuringClosed: false, DuringUnaffected: false, DuringAny: true} {
		f := judgeFaults(synthFaults(during, 0), ds, start, in).Faults[0]
		if f.Pass != pass || !pass && !strings.Contains(f.Line, "no model") {
			t.Errorf("--during-fault %s without a model: pass %v: %s", during, f.Pass, f.Line)
		}
	}
}

// A fault that was in force and then failed (an undo that did not take)
// is classified and fails its check with the error.
func TestJudgeFaultsPlayedThenFailed(t *testing.T) {
	start := time.Unix(1000, 0)
	p := faultParams
	in := faultInput{arrivals: synthRun(t, FailOpen), identities: 1, startMs: 1_000_000, duration: 10 * time.Second,
		expectOK: func(s int) bool { return s == 200 || s == 429 }, params: &p, model: specOf(p)}
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second), Timed: true, Err: "CLIENT UNPAUSE: connection refused"}}
	f := judgeFaults(synthFaults(DuringOpen, 0), ds, start, in).Faults[0]
	if f.Behaviour != FailOpen || f.Pass || !strings.Contains(f.Line, "UNPAUSE") {
		t.Fatalf("%+v", f)
	}
}
