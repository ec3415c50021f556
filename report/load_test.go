package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// loadPass is the result of 20/s for 30 s against a token bucket of 10 at
// 5/s, judged with --expect auto, as a run would produce it.
func loadPass() *tally.Result {
	timeline := make([]tally.Second, 30)
	for i := range timeline {
		st := map[string]int64{"200": 5, "429": 15}
		if i == 0 {
			st = map[string]int64{"200": 14, "429": 6}
		}
		timeline[i] = tally.Second{Second: i, Status: st}
	}
	timeline[29].Status = map[string]int64{"200": 0, "429": 20} // sums to 159 below
	return &tally.Result{
		Kind: "load", Version: 1,
		Target: "http://127.0.0.1:8011/hello", Method: "GET",
		StartedAt: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC),
		Rate:      "20/s", RatePerS: 20, DurationS: 30, ElapsedS: 29.951, TimeoutS: 10,
		Identities: 1, RunID: "5f2c9a1e",
		Planned: 600, Sent: 600, Completed: 600, Responses: 600, AchievedRate: 20,
		Status:  map[string]int64{"200": 159, "429": 441},
		Allowed: 159, RateLimited: 441, RateLimitedPct: 73.5,
		Errors:         map[string]int64{},
		Timeline:       timeline,
		Latency:        tally.Latency{Count: 600, Min: 0.21, Mean: 0.43, P50: 0.41, P90: 0.62, P95: 0.8, P99: 1.2, Max: 3.02},
		LatencyFromDue: tally.Latency{Count: 600, Min: 0.25, Mean: 0.5, P50: 0.49, P90: 0.71, P95: 0.9, P99: 1.5, Max: 3.3},
		Lateness:       tally.Latency{Count: 600, Min: 0.01, Mean: 0.06, P50: 0.05, P90: 0.08, P95: 0.1, P99: 0.3, Max: 0.9},
		ResponsesPerS:  20.03, BytesIn: 151_800, BytesOut: 52_200,
		VUs: tally.VUStats{PreAllocated: 10, Max: 100, Peak: 10, MaxBusy: 2},
		Headers: tally.Headers{
			Responses:   600,
			RateLimit:   tally.FieldStat{Checked: 600, Present: 600, Valid: 600},
			Policy:      tally.FieldStat{Checked: 600, Present: 600, Valid: 600},
			RetryAfter:  tally.FieldStat{Checked: 441, Present: 441, Valid: 441},
			PolicyValue: `"default";q=10;w=2`,
		},
		Thresholds: []judge.ThresholdCheck{{ID: "failed<=1%", Name: "failed", Op: "<=", Limit: "1%", Actual: "0.00% (0 of 600 completed)", Pass: true, Message: "failed<=1%: 0.00% (0 of 600 completed)"}},
		Expect: &judge.Judged{
			Model: "auto", Description: "RateLimit-Policy q=10;w=2 read as token bucket 10 + 5/s",
			Expected: 159, Observed: 159, Of: 600, Tolerance: 2, OverMs: 29.95e3, Pass: true,
			Tol: judge.Tolerance{Jitter: 1, Rounding: 1},
			Readings: []judge.Reading{
				{Model: "token-bucket:burst=10,rate=5/s", Description: "token bucket 10 + 5/s", Expected: 159, Tolerance: 2, Fits: true},
				{Model: "sliding-window:limit=10,window=2s", Description: "sliding window 10 per 2s", Expected: 150, Tolerance: 2},
				{Model: "fixed-window:limit=10,window=2s", Description: "fixed window 10 per 2s", Expected: 150, Tolerance: 2},
			},
			Fits: "token-bucket:burst=10,rate=5/s",
		},
		Verdict: "pass",
	}
}

// loadSlow is a slow target with --max-vus 2: dropped iterations, a target
// that breaks the header rules, a failed threshold.
func loadSlow() *tally.Result {
	return &tally.Result{
		Kind: "load", Version: 1,
		Target: "http://127.0.0.1:8011/hello", Method: "POST",
		StartedAt: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC),
		Rate:      "20/s", RatePerS: 20, DurationS: 2, ElapsedS: 2.51, TimeoutS: 10,
		RunID:   "0a1b2c3d",
		Planned: 40, Sent: 8, Dropped: 32, DroppedNoVU: 32, Completed: 8, Responses: 7, AchievedRate: 4,
		Status:  map[string]int64{"200": 3, "429": 3, "500": 1},
		Allowed: 3, RateLimited: 3, RateLimitedPct: 42.857, Failed: 2, FailedPct: 25,
		Errors: map[string]int64{"timeout": 1},
		Timeline: []tally.Second{
			{Second: 0, Status: map[string]int64{"200": 2, "429": 1, "error": 1}},
			{Second: 1, Status: map[string]int64{"200": 1, "429": 2, "500": 1}},
		},
		Latency:        tally.Latency{Count: 8, Min: 500.1, Mean: 507.4, P50: 501, P90: 502, P95: 560, P99: 560, Max: 560},
		LatencyFromDue: tally.Latency{Count: 8, Min: 500.1, Mean: 516.2, P50: 503, P90: 540, P95: 610, P99: 610, Max: 610},
		Lateness:       tally.Latency{Count: 8, Min: 0.02, Mean: 11.3, P50: 0.1, P90: 38, P95: 50, P99: 50, Max: 50},
		ResponsesPerS:  2.79, BytesIn: 1_890, BytesOut: 700,
		VUs: tally.VUStats{PreAllocated: 2, Max: 2, Peak: 2, MaxBusy: 2},
		Generator: tally.GenStat{FellBehind: true, Reasons: []string{
			"32 iterations dropped: all 2 VUs were busy when they fell due (raise --max-vus; the target's p99 is 560.0 ms)",
			"scheduling lateness p99 50.0 ms is above 10ms",
		}, Causes: []tally.Cause{tally.CauseNoVU, tally.CauseLateness}},
		Headers: tally.Headers{
			Responses:   7,
			RateLimit:   tally.FieldStat{Checked: 7, Present: 7, Valid: 4, Example: `invalid rate limit header: RateLimit "default": r=5 exceeds the policy's q=2`},
			Policy:      tally.FieldStat{Checked: 7},
			RetryAfter:  tally.FieldStat{Checked: 3, Present: 2, Valid: 2, Example: "invalid rate limit header: Retry-After is missing"},
			Storable429: 3, StorableWhy: "explicit freshness (max-age, s-maxage or Expires) without no-store",
			Legacy: 7, LegacyName: "X-RateLimit-",
		},
		Thresholds: []judge.ThresholdCheck{
			{ID: "failed<=1%", Name: "failed", Op: "<=", Limit: "1%", Actual: "25.00% (2 of 8 completed)", Message: "threshold failed<=1%: 25.00% (2 of 8 completed)"},
			{ID: "p99<500ms", Name: "p99", Op: "<", Limit: "500ms", Actual: "610ms", Message: "threshold p99<500ms: 610ms"},
			{ID: "dropped==0", Name: "dropped", Op: "==", Limit: "0", Actual: "32", Message: "threshold dropped==0: 32"},
			{ID: "refused<50%", Name: "refused", Op: "<", Limit: "50%", Actual: "42.86% (3 of 7 responses)", Pass: true, Message: "refused<50%: 42.86% (3 of 7 responses)"},
		},
		Verdict:         "fail",
		VerdictMessages: []string{"threshold failed<=1%: 25.00% (2 of 8 completed)", "threshold p99<500ms: 610ms", "threshold dropped==0: 32"},
	}
}

// loadAborted is loadSlow stopped by --abort-on-fail at the first drop.
func loadAborted() *tally.Result {
	res := loadSlow()
	res.Aborted, res.NotStarted, res.Planned = true, 160, 200
	res.AbortReason = "threshold dropped==0 can no longer be met after 1.25s: 1 dropped, past 0"
	res.Thresholds = res.Thresholds[2:3]
	res.Thresholds[0].Aborted = true
	res.Thresholds[0].Message = "threshold dropped==0: 32; stopped the run (" + res.AbortReason + ")"
	res.VerdictMessages = []string{res.Thresholds[0].Message}
	return res
}

// loadNoLimiter is a plain target: every request 200, no RateLimit field.
func loadNoLimiter() *tally.Result {
	res := loadPass()
	res.Status = map[string]int64{"200": 600}
	res.Allowed, res.RateLimited, res.RateLimitedPct = 600, 0, 0
	for i := range res.Timeline {
		res.Timeline[i].Status = map[string]int64{"200": 20}
	}
	res.Headers = tally.Headers{Responses: 600, RateLimit: tally.FieldStat{Checked: 600}, Policy: tally.FieldStat{Checked: 600}}
	res.Expect = nil
	res.Notes = []string{tally.NoLimiterNote}
	return res
}

func TestLoadText(t *testing.T) {
	tests := []struct {
		name string
		res  *tally.Result
	}{
		{"load_pass.txt.golden", loadPass()},
		{"load_slow.txt.golden", loadSlow()},
		{"load_aborted.txt.golden", loadAborted()},
		{"load_nolimiter.txt.golden", loadNoLimiter()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := LoadText(&buf, tt.res, Options{}); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(buf.String(), "\x1b[") {
				t.Error("plain output has ANSI escapes")
			}
			golden(t, tt.name, buf.Bytes())
		})
	}
}

func TestLoadTextInterruptedAndColor(t *testing.T) {
	res := loadPass()
	res.Interrupted, res.Verdict, res.NotStarted, res.Expect = true, "interrupted", 100, nil
	var buf bytes.Buffer
	if err := LoadText(&buf, res, Options{Color: true}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"interrupted after 29.951s", "INTERRUPTED: no verdict", "\x1b["} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestLoadTimelineBuckets(t *testing.T) {
	res := loadPass()
	res.Timeline = make([]tally.Second, 95)
	for i := range res.Timeline {
		res.Timeline[i] = tally.Second{Second: i, Status: map[string]int64{"200": 1}}
	}
	out := loadTimeline(res).text(NewStyles(&bytes.Buffer{}, Options{}))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// 95 seconds in buckets of 4: 24 rows plus the header.
	if len(lines) != 25 || !strings.HasPrefix(lines[1], "0-3 ") || !strings.HasPrefix(lines[24], "92-94") {
		t.Errorf("timeline table:\n%s", out)
	}
}

func TestLoadJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, loadPass()); err != nil {
		t.Fatal(err)
	}
	golden(t, "load_pass.json.golden", buf.Bytes())
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// The fields the issue names.
	for _, k := range []string{"kind", "version", "target", "arrival_rate_per_s", "duration_ms", "planned", "sent", "dropped",
		"status", "allowed", "refused", "failed", "timeline", "latency_ms", "latency_from_due_ms", "headers", "expect", "checks", "verdict"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	for _, k := range []string{"rate_per_s", "duration_s", "rate_limited", "verdict_messages"} {
		if _, ok := doc[k]; ok {
			t.Errorf("JSON has %q, a field of version 1", k)
		}
	}
	if doc["kind"] != "load" || doc["version"] != float64(2) {
		t.Errorf("kind %v version %v", doc["kind"], doc["version"])
	}
	exp := doc["expect"].(map[string]any)
	for _, k := range []string{"model", "expected", "observed", "tolerance", "pass"} {
		if _, ok := exp[k]; !ok {
			t.Errorf("expect lacks %q", k)
		}
	}
}

// TestLoadJUnitOneFailurePerReason: a run failed by its verdict on the
// admitted count alone, or by one threshold alone (that also aborted it),
// counts one failure in JUnit, not two.
func TestLoadJUnitOneFailurePerReason(t *testing.T) {
	count := func(res *tally.Result) int {
		var b bytes.Buffer
		if err := LoadJUnit(&b, res); err != nil {
			t.Fatal(err)
		}
		return strings.Count(b.String(), "<failure ")
	}
	res := loadPass()
	res.Expect.Pass, res.Expect.Observed = false, 200
	res.Verdict, res.VerdictMessages = "fail", []string{res.Expect.Line()}
	if n := count(res); n != 1 {
		t.Errorf("failed verdict on the admitted count: %d failures, want 1", n)
	}
	res = loadPass()
	res.Aborted, res.AbortReason = true, "threshold dropped==0 can no longer be met after 1s: 1 dropped, past 0"
	res.Thresholds = append(res.Thresholds, judge.ThresholdCheck{ID: "dropped==0", Name: "dropped", Op: "==", Limit: "0", Actual: "1", Aborted: true,
		Message: "threshold dropped==0: 1; stopped the run (" + res.AbortReason + ")"})
	res.Verdict, res.VerdictMessages = "fail", []string{res.Thresholds[1].Message}
	if n := count(res); n != 1 {
		t.Errorf("one aborting threshold: %d failures, want 1", n)
	}
	// Negative control: a second reason no other testcase carries (no
	// limiter seen, with --expect) is a second failure.
	res.RateLimited, res.Headers.RateLimit, res.Headers.Policy = 0, tally.FieldStat{}, tally.FieldStat{}
	res.VerdictMessages = append(res.VerdictMessages, tally.NoLimiterNote)
	if n := count(res); n != 2 {
		t.Errorf("two reasons: %d failures, want 2", n)
	}
}
