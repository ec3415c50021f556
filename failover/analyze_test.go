package failover

import (
	"errors"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

const (
	oldP = "127.0.0.1:7001"
	newP = "127.0.0.1:7004"
)

func testLimiter(t *testing.T) *limiter.Limiter {
	t.Helper()
	lim, err := limiter.NewLimiter(limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.MustParse("100/s")})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

func decision(m model.Decision) limiter.Decision {
	return limiter.Decision{Allowed: m.Allowed, Remaining: m.Remaining, RetryMs: m.RetryMs, ResetMs: m.ResetMs}
}

// history plays a failover through two models standing for the servers:
// the old primary answers calls 0..m-1, the new primary starts from the
// old one's state after the first k of them and answers the rest. Calls
// are 2 ms apart (500/s against a bucket of 5 refilled at 100/s).
func history(lim *limiter.Limiter, n, m, k int) []call {
	oldM, newM := lim.Model(), lim.Model()
	start := time.Unix(1_700_000_000, 0)
	var calls []call
	for i := 0; i < n; i++ {
		now := start.Add(time.Duration(i) * 2 * time.Millisecond)
		c := call{seq: int64(i), nowMs: now.UnixMilli(), sent: now, done: now.Add(200 * time.Microsecond), ok: true, acks: -1}
		if i < m {
			c.node, c.d = oldP, decision(oldM.Allow(c.nowMs, 1))
			if i < k {
				newM.Allow(c.nowMs, 1) // replicated
			}
		} else {
			c.node, c.d = newP, decision(newM.Allow(c.nowMs, 1))
		}
		calls = append(calls, c)
	}
	return calls
}

func TestLostCallsReadsBackWhatWasReplicated(t *testing.T) {
	// the defaults' shape: offered twice the refill, so once drained the
	// bucket hovers near empty; a window of lost calls shorter than the
	// 80 ms the bucket takes to fill leaves it short of full, so every
	// lost admission shows in the new primary's answers
	lim, err := limiter.NewLimiter(limiter.Params{Algo: limiter.TokenBucket, Capacity: 20, Rate: rate.MustParse("250/s")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ n, m, k int }{
		{300, 150, 150}, // nothing lost
		{300, 150, 149},
		{300, 150, 130}, // 20 calls acknowledged after the promotion
		{300, 150, 125}, // 50 ms of lost calls
		{120, 100, 90},
	} {
		calls := history(lim, tt.n, tt.m, tt.k)
		lost, exact := lostCalls(answered(calls), lim, oldP, newP)
		if !exact {
			t.Errorf("n=%d m=%d k=%d: not exact", tt.n, tt.m, tt.k)
		}
		// a lost refused call changes no state: only admissions count
		want := 0
		for _, c := range calls[tt.k:tt.m] {
			if c.d.Allowed {
				want++
			}
		}
		got := 0
		for _, c := range lost {
			if c.d.Allowed {
				got++
			}
		}
		if got != want || len(lost) > tt.m-tt.k {
			t.Errorf("n=%d m=%d k=%d: %d lost calls, %d of them allowed; want at most %d, %d allowed", tt.n, tt.m, tt.k, len(lost), got, tt.m-tt.k, want)
		}
	}
}

// TestLostCallsForgetsWhatRefillWouldHaveUndone: writes whose loss the
// bucket's refill made up for before the new primary's first answer (it
// would have been full either way) change nothing, and are not counted.
func TestLostCallsForgetsWhatRefillWouldHaveUndone(t *testing.T) {
	lim := testLimiter(t) // 5 tokens at 100/s: full again 50 ms after empty
	calls := history(lim, 200, 100, 0)
	lost, exact := lostCalls(answered(calls), lim, oldP, newP)
	if !exact || len(lost) == 0 || len(lost) >= 100 {
		t.Fatalf("lostCalls = %d calls, exact %v; want exact and fewer than the 100 the replica never had", len(lost), exact)
	}
	// what it calls replicated explains the new primary's answers ...
	m := lim.Model()
	for _, c := range calls[:100-len(lost)] {
		m.Allow(c.nowMs, 1)
	}
	for _, c := range calls[100:] {
		if !same(m.Allow(c.nowMs, 1), c.d) {
			t.Fatalf("replaying %d of the old primary's answers does not explain call %d", 100-len(lost), c.seq)
		}
	}
	// ... and one more old answer would not
	m = lim.Model()
	for _, c := range calls[:100-len(lost)+1] {
		m.Allow(c.nowMs, 1)
	}
	explained := true
	for _, c := range calls[100:] {
		explained = explained && same(m.Allow(c.nowMs, 1), c.d)
	}
	if explained {
		t.Errorf("%d lost calls is not the fewest that explains the new primary", len(lost))
	}
}

func TestLostCallsWithoutExplanation(t *testing.T) {
	lim := testLimiter(t)
	calls := history(lim, 100, 50, 50)
	calls[70].d.ResetMs += 7 // no replicated prefix explains this answer
	if _, exact := lostCalls(answered(calls), lim, oldP, newP); exact {
		t.Error("lostCalls = exact for an answer no prefix explains")
	}
	if lost, exact := lostCalls(answered(calls[:50]), lim, oldP, newP); exact || lost != nil {
		t.Errorf("lostCalls without an answer of the new primary = %d calls, exact %v; want none, not exact", len(lost), exact)
	}
}

func TestAnalyze(t *testing.T) {
	lim := testLimiter(t)
	calls := history(lim, 300, 150, 130)
	promoted := calls[140].sent
	// a call met MOVED on the way and one failed outright
	calls[150].errs = []redisconn.Class{redisconn.Moved}
	calls[150].firstErr, calls[150].firstErrMsg = calls[149].done, "MOVED 866 "+newP
	calls[150].recoveries = map[string]int{recoverRedirect: 1}
	calls = append(calls, call{seq: 999, nowMs: calls[299].nowMs, sent: calls[299].sent, done: calls[299].done,
		errs: []redisconn.Class{redisconn.Unreachable, redisconn.Unreachable}, firstErrMsg: "EOF", firstErr: calls[299].sent})
	tr := Trial{OldPrimary: oldP, NewPrimary: newP}
	analyze(&tr, calls, lim, 0, promoted)

	m := lim.Model()
	model, allowed, lostAllowed := 0, 0, 0
	for i, c := range calls[:300] {
		if m.Allow(c.nowMs, 1).Allowed {
			model++
		}
		if c.d.Allowed {
			allowed++
			if i >= 130 && i < 150 {
				lostAllowed++
			}
		}
	}
	if tr.Decisions != 300 || tr.Failed != 1 || tr.Allowed != allowed || tr.ModelAllowed != model || tr.ExtraAllowed != allowed-model {
		t.Errorf("counts = %d decisions, %d failed, allowed %d, model %d, extra %d; want 300, 1, %d, %d, %d",
			tr.Decisions, tr.Failed, tr.Allowed, tr.ModelAllowed, tr.ExtraAllowed, allowed, model, allowed-model)
	}
	if tr.ExtraAllowed <= 0 || tr.ExtraAllowed > lostAllowed {
		t.Errorf("extra allowed %d, want between 1 and the %d lost admissions", tr.ExtraAllowed, lostAllowed)
	}
	if !tr.LostExact || tr.LostWrites != lostAllowed {
		t.Errorf("lost writes %d (exact %v), want %d", tr.LostWrites, tr.LostExact, lostAllowed)
	}
	wantErrs := []ErrorCount{{Class: "moved", Count: 1}, {Class: "unreachable", Count: 2}}
	if len(tr.Errors) != 2 || tr.Errors[0] != wantErrs[0] || tr.Errors[1] != wantErrs[1] {
		t.Errorf("errors = %v, want %v", tr.Errors, wantErrs)
	}
	if tr.ErrorSample != "MOVED 866 "+newP {
		t.Errorf("error sample %q, want the first error met", tr.ErrorSample)
	}
	if len(tr.Recoveries) != 1 || tr.Recoveries[0] != (Recovery{Action: recoverRedirect, Count: 1}) {
		t.Errorf("recoveries = %v", tr.Recoveries)
	}
	if want := ms(calls[149].done.Sub(promoted)); tr.StalePrimaryMs != want {
		t.Errorf("stale primary %vms, want %vms", tr.StalePrimaryMs, want)
	}
	if want := ms(calls[150].done.Sub(calls[149].done)); tr.UnavailableMs != want {
		t.Errorf("unavailable %vms, want %vms", tr.UnavailableMs, want)
	}
	if tr.P50Ms != 0.2 || tr.P99Ms != 0.2 || tr.MaxMs != 0.2 {
		t.Errorf("latency p50 %v p99 %v max %v, want 0.2ms", tr.P50Ms, tr.P99Ms, tr.MaxMs)
	}
}

// TestAnalyzeWait: with WAIT, an admission fewer replicas confirmed is
// refused and not counted as lost.
func TestAnalyzeWait(t *testing.T) {
	lim := testLimiter(t)
	calls := history(lim, 300, 150, 130)
	for i := range calls {
		calls[i].acks = 1
		if i >= 130 && i < 150 {
			calls[i].acks = 0 // the replica had stopped following
		}
	}
	tr := Trial{OldPrimary: oldP, NewPrimary: newP}
	analyze(&tr, calls, lim, 1, time.Time{})
	notDurable := 0
	for _, c := range calls[130:150] {
		if c.d.Allowed {
			notDurable++
		}
	}
	if tr.NotDurable != notDurable || tr.LostWrites != 0 || tr.LostDecisions == 0 {
		t.Errorf("not durable %d, lost writes %d of %d lost decisions; want %d, 0, some", tr.NotDurable, tr.LostWrites, tr.LostDecisions, notDurable)
	}
}

func TestStatsAndPercentile(t *testing.T) {
	if got := spread([]float64{5, 1, 3}); got != (Stats{Min: 1, Median: 3, Max: 5}) {
		t.Errorf("spread(5 1 3) = %+v", got)
	}
	if got := spread([]float64{4, 1, 3, 10}); got != (Stats{Min: 1, Median: 3.5, Max: 10}) {
		t.Errorf("spread(4 1 3 10) = %+v", got)
	}
	if got := spread(nil); got != (Stats{}) {
		t.Errorf("spread(nil) = %+v", got)
	}
}

func TestMaxExtraCheck(t *testing.T) {
	v := Variant{Name: VariantNoWait, Trials: []Trial{{ExtraAllowed: 3}, {ExtraAllowed: 7}, {ExtraAllowed: -1}}}
	if c := maxExtraCheck(CheckMaxExtra, v, nil); !c.Pass || !c.Skipped || c.Message != "no-wait: extra admissions per trial 3, 7, -1; report only (pass --max-extra N to judge)" {
		t.Errorf("report-only check = %+v", c)
	}
	six, seven := int64(6), int64(7)
	if c := maxExtraCheck(CheckMaxExtra, v, &six); c.Pass || c.Message != "no-wait: extra admissions per trial 3, 7, -1 (max 7), --max-extra 6" {
		t.Errorf("check against 6 = %+v, want a failure", c)
	}
	if c := maxExtraCheck(CheckMaxExtra, v, &seven); !c.Pass {
		t.Errorf("check against 7 = %+v, want a pass", c)
	}
}

func TestMovedTo(t *testing.T) {
	for _, tt := range []struct {
		err, from, want string
		ok              bool
	}{
		{"MOVED 866 127.0.0.1:7004", oldP, "127.0.0.1:7004", true},
		{"ASK 866 127.0.0.1:7005", oldP, "127.0.0.1:7005", true},
		{"MOVED 866 :7004", oldP, "127.0.0.1:7004", true},
		{"MOVED 866 ::1:7004", oldP, "", false},
		{"READONLY You can't write against a read only replica.", oldP, "", false},
		{"MOVED 866", oldP, "", false},
	} {
		got, ok := movedTo(errors.New(tt.err), tt.from)
		if got != tt.want || ok != tt.ok {
			t.Errorf("movedTo(%q) = %q, %v; want %q, %v", tt.err, got, ok, tt.want, tt.ok)
		}
	}
}
