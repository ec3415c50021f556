package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// synthRun is 10 s at 100/s against a real limiter (the model itself) that
// behaves as behave says while a fault holds from 3 s to 5 s.
func synthRun(t *testing.T, behave string) []Arrival {
	t.Helper()
	real := mustModel(faultParams)
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

// faultParams is a token bucket of 5 refilled at 10/s: loaded at 100/s,
// about 10% of the requests pass.
var faultParams = limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.MustParse("10/s"), Cost: 1}

func synthFaults(during string, recoverWithin time.Duration) FaultPlan {
	return FaultPlan{
		Specs:  []PlannedFault{{Spec: "pause:2s@3s", Kind: "pause", At: 3 * time.Second, For: 2 * time.Second}},
		Server: "redis://127.0.0.1:7001", During: during, RecoverWithin: recoverWithin,
	}
}

// synthInput is the fault verdict's input over arrivals, judged by
// faultParams (model false: no model).
func synthInput(arr []Arrival, model bool) FaultInput {
	in := FaultInput{Arrivals: arr, Identities: 1, StartMs: 1_000_000, Duration: 10 * time.Second,
		Expected: func(s int) bool { return s == 200 || s == 429 }}
	if model {
		x := Of(faultParams)
		in.Model = &x
	}
	return in
}

func judgeSynth(t *testing.T, behave, during string, recoverWithin time.Duration) *FaultReport {
	t.Helper()
	start := time.Unix(1000, 0)
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Server: "redis://127.0.0.1:7001", Timed: true,
		Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second)}}
	in := synthInput(synthRun(t, behave), true)
	return JudgeFaults(synthFaults(during, recoverWithin), ds, start, in)
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
		var got *bool
		for _, ch := range rep.Checks() {
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
	in := synthInput(arr, true)
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second), Timed: true}}
	rep := JudgeFaults(synthFaults(DuringOpen, 2*time.Second), ds, start, in)
	f := rep.Faults[0]
	if f.Recovered || f.RecoverPass {
		t.Fatalf("recovered %v (%v ms), pass %v: %s", f.Recovered, f.RecoverMs, f.RecoverPass, f.Line)
	}
	failed := 0
	for _, c := range rep.Checks() {
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
	in := synthInput(synthRun(t, Unaffected), true)
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Err: "CLIENT PAUSE: NOPERM"}}
	rep := JudgeFaults(synthFaults(DuringAny, 0), ds, start, in)
	if f := rep.Faults[0]; f.Behaviour != NotInjected || f.Pass || !strings.Contains(f.Line, "NOPERM") {
		t.Fatalf("%+v", f)
	}
}

func TestFaultsValidate(t *testing.T) {
	x := &Expectation{Spec: "token-bucket:burst=5,rate=10/s", Parts: []limiter.Params{faultParams}}
	f := synthFaults(DuringAny, 0)
	if err := f.Validate(10*time.Second, x); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mod  func(*FaultPlan) (time.Duration, *Expectation)
		want string
	}{
		{"no expect", func(*FaultPlan) (time.Duration, *Expectation) { return 10 * time.Second, nil }, "--expect"},
		{"too late", func(*FaultPlan) (time.Duration, *Expectation) { return 5500 * time.Millisecond, x }, "too late"},
		{"no baseline", func(f *FaultPlan) (time.Duration, *Expectation) {
			f.Specs[0].At = 500 * time.Millisecond
			return 10 * time.Second, x
		}, "baseline"},
		{"during", func(f *FaultPlan) (time.Duration, *Expectation) { f.During = "sometimes"; return 10 * time.Second, x }, "--during-fault"},
		{"back to back", func(f *FaultPlan) (time.Duration, *Expectation) {
			f.Specs = []PlannedFault{{Spec: "pause:1s@2s", At: 2 * time.Second, For: time.Second}, {Spec: "pause:1s@3s", At: 3 * time.Second, For: time.Second}}
			return 10 * time.Second, x
		}, "between faults"},
	} {
		f := synthFaults(DuringAny, 0)
		d, xx := c.mod(&f)
		err := f.Validate(d, xx)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
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
	in := synthInput(arr, true)
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second), Timed: true}}
	rep := JudgeFaults(synthFaults(DuringOpen, 0), ds, start, in)
	if f := rep.Faults[0]; f.Behaviour != FailClosed || f.Pass {
		t.Fatalf("%s", f.Line)
	}
}

// Without a model nothing tells fail-open from unaffected: a gate other
// than any fails, saying why.
func TestJudgeFaultsNoModelFailsGates(t *testing.T) {
	start := time.Unix(1000, 0)
	in := synthInput(synthRun(t, FailOpen), false)
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second), Timed: true}}
	for during, pass := range map[string]bool{DuringClosed: false, DuringUnaffected: false, DuringAny: true} {
		f := JudgeFaults(synthFaults(during, 0), ds, start, in).Faults[0]
		if f.Pass != pass || !pass && !strings.Contains(f.Line, "no model") {
			t.Errorf("--during-fault %s without a model: pass %v: %s", during, f.Pass, f.Line)
		}
	}
}

// A fault that was in force and then failed (an undo that did not take)
// is classified and fails its check with the error.
func TestJudgeFaultsPlayedThenFailed(t *testing.T) {
	start := time.Unix(1000, 0)
	in := synthInput(synthRun(t, FailOpen), true)
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second), Timed: true, Err: "CLIENT UNPAUSE: connection refused"}}
	f := JudgeFaults(synthFaults(DuringOpen, 0), ds, start, in).Faults[0]
	if f.Behaviour != FailOpen || f.Pass || !strings.Contains(f.Line, "UNPAUSE") {
		t.Fatalf("%+v", f)
	}
}

// TestStallOnBusyBaseline: a busy baseline (a p99 of about 530 ms, a
// median of 26 ms) must not hide a stall: a 2 s pause whose window waited
// a median of about 1 s is stalled (issue 29 item 9: it was called
// unaffected, the longest wait judged against the inflated p99); the
// control, a fault window as noisy as the baseline and no more, is
// unaffected.
func TestStallOnBusyBaseline(t *testing.T) {
	build := func(stall bool) []Arrival {
		real := mustModel(faultParams)
		const startMs = 1_000_000
		from, to := 3*time.Second, 5*time.Second
		var out []Arrival
		for i := range 1000 {
			due := time.Duration(i) * 10 * time.Millisecond
			lat := 26 * time.Millisecond
			inFault := due >= from && due < to
			if i%50 == 7 && !(stall && inFault) { // the busy machine's tail: 2% of requests
				lat = 530 * time.Millisecond
			}
			at := due
			if stall && inFault {
				// queued until the pause ends, then the usual latency
				lat = to - due + lat
				at = to
			}
			a := Arrival{DueNs: int64(due), SendNs: int64(due), DoneNs: int64(due + lat)}
			if real.Allow(startMs+int64(at/time.Millisecond), 1).Allowed {
				a.Status = 200
			} else {
				a.Status = 429
			}
			out = append(out, a)
		}
		return out
	}
	start := time.Unix(1000, 0)
	ds := []Disruption{{Spec: "pause:2s@3s", Kind: "pause", Server: "redis://127.0.0.1:7001", Timed: true,
		Start: start.Add(3 * time.Second), End: start.Add(5 * time.Second)}}
	for _, tt := range []struct {
		stall bool
		want  string
	}{{true, Stalled}, {false, Unaffected}} {
		rep := JudgeFaults(synthFaults(DuringAny, 0), ds, start, synthInput(build(tt.stall), true))
		if got := rep.Faults[0].Behaviour; got != tt.want {
			t.Errorf("stall=%v: behaviour %s, want %s (baseline p99 %.0f ms)", tt.stall, got, tt.want, rep.BaselineP99Ms)
		}
	}
}
