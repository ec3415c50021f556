package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// loadFault is loadPass with a pause of 2 s from 10 s that the target
// failed open through (it served all 40 requests of the window, the model
// 10), judged by --during-fault during: open passes, closed fails.
func loadFault(during string) *tally.Result {
	res := loadPass()
	res.Timeline[10].Status = map[string]int64{"200": 20}
	res.Timeline[11].Status = map[string]int64{"200": 20}
	res.Timeline[12].Status = map[string]int64{"200": 10, "429": 10}
	res.Status = map[string]int64{"200": 194, "429": 406}
	res.Allowed, res.RateLimited, res.RateLimitedPct = 194, 406, 67.667
	res.Headers.RetryAfter = tally.FieldStat{Checked: 406, Present: 406, Valid: 406}
	res.Headers.RateLimit = tally.FieldStat{Checked: 600, Present: 560, Valid: 560} // none while failing open
	res.Thresholds = nil
	res.Expect.Observed, res.Expect.Pass = 194, false
	allowed := map[string][]string{"open": {judge.FailOpen, judge.Unaffected}, "closed": {judge.FailClosed, judge.Unaffected}}[during]
	f := judge.FaultResult{
		Spec: "pause:2s@10s", Kind: "pause", Server: "redis://127.0.0.1:7001",
		StartMs: 10_001.5, EndMs: 12_040.2, Behaviour: judge.FailOpen, Allowed: allowed,
		Pass: during == "open", Recovered: true, RecoverMs: 1100, RecoverPass: true,
	}
	f.Line = "pause:2s@10s at 10.00s-12.04s: fail-open: admitted 41 of 41, the model 10 (+31, ±2), 0 refused, 0 5xx, 0 errors, p99 52ms from due; back within tolerance 1.10s after"
	if !f.Pass {
		f.Line += "; --during-fault allows fail-closed or unaffected"
	}
	res.Faults = &judge.FaultReport{
		Server: "redis://127.0.0.1:7001", Model: "token-bucket:burst=10,rate=5/s", During: during,
		Statement:       "faults for redis://127.0.0.1:7001 (loopback server): pause:2s@10s holds every client's commands for 2s (CLIENT PAUSE ALL, renewed every 100ms); each is undone when it ends, on error and on interrupt",
		RecoverWithinMs: 3000, BaselineP99Ms: 1.5,
		Windows: []judge.FaultWindow{
			{Name: "before", Phase: "before", Fault: -1, StartMs: 0, EndMs: 10_001.5, Requests: 200, Admitted: 59, Limited: 141, ModelAllowed: 59, Tolerance: 2, P50Ms: 0.5, P99Ms: 1.5, MaxMs: 3.3},
			{Name: "during pause:2s@10s", Phase: "during", Fault: 0, StartMs: 10_001.5, EndMs: 12_040.2, Requests: 41, Admitted: 41, ModelAllowed: 10, Extra: 31, Tolerance: 2, P50Ms: 51, P99Ms: 52, MaxMs: 53.1},
			{Name: "after pause:2s@10s", Phase: "after", Fault: 0, StartMs: 12_040.2, EndMs: 30_000, Requests: 359, Admitted: 94, Limited: 265, ModelAllowed: 90, Extra: 4, Tolerance: 2, P50Ms: 0.5, P99Ms: 1.4, MaxMs: 2.9},
		},
		Faults: []judge.FaultResult{f},
	}
	return settled(res)
}

func TestLoadFaultRendered(t *testing.T) {
	pass, fail := loadFault("open"), loadFault("closed")
	if pass.Verdict != "pass" || fail.Verdict != "fail" {
		t.Fatalf("verdicts %q %q", pass.Verdict, fail.Verdict)
	}
	if !doc.Pass(pass.CheckList()) {
		t.Fatalf("checks %+v", pass.CheckList())
	}
	for _, format := range []string{"text", "markdown", "junit"} {
		d := Document{Kind: tally.Kind, Value: fail}
		var b strings.Builder
		if err := Render(&b, format, d, goldenOptions); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, "pause:2s@10s") || !strings.Contains(out, "fail-open") {
			t.Errorf("%s does not name the fault and what it did:\n%s", format, out)
		}
	}
}

// loadMerged is loadPass as the merge of four segments, missing those
// given (a partial merge fails its segments check).
func loadMerged(missing []int) *tally.Result {
	res := loadPass()
	start := res.StartedAt
	res.Segment = &tally.SegmentInfo{Index: -1, Count: 4, TotalPlanned: 600, StartAt: &start, Expect: "auto", Missing: missing}
	for k := range 4 {
		if !slices.Contains(missing, k) {
			res.Segment.Merged = append(res.Segment.Merged, k)
		}
	}
	return settled(res)
}

// settled sets a fixture's verdict and messages from its checks, as a run
// would.
func settled(res *tally.Result) *tally.Result {
	res.Verdict = "pass"
	res.VerdictMessages = nil
	for _, c := range res.CheckList() {
		if c.Counts() && !c.Pass {
			res.Verdict = "fail"
			res.VerdictMessages = append(res.VerdictMessages, c.ID+": "+c.Message)
		}
	}
	return res
}
