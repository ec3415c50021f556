package load

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// runSegments runs the n segments of one plan concurrently in this
// process against lt, starting together, and returns their documents as
// a merge would read them (through JSON).
func runSegments(t *testing.T, lt *limitedTarget, n int, o Options) []*tally.Result {
	t.Helper()
	o.StartAt = time.Now().Add(300 * time.Millisecond)
	docs := make([]*tally.Result, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			so := o
			so.Segment = Segment{Index: k, Count: n}
			res, err := Run(context.Background(), so)
			if err != nil {
				t.Error(err)
				return
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Error(err)
				return
			}
			var back tally.Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Error(err)
				return
			}
			docs[k] = &back
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return docs
}

// TestMergeSegments: four segments of 20/s for 6s against a bucket of 10
// at 5/s plan and send exactly the whole plan, and their merge judges the
// admitted count as one run of the whole plan does.
func TestMergeSegments(t *testing.T) {
	p := limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}}
	x, err := judge.ParseExpect("token-bucket:burst=10,rate=5/s")
	if err != nil {
		t.Fatal(err)
	}
	base := Options{Target: "", Rate: rate.MustParse("20/s"), Duration: 6 * time.Second, Identities: 1, Expect: x,
		RunID: "seg-test", Thresholds: []judge.Threshold{{Metric: "p99", Op: "<", Value: 1000, Unit: "ms"}}}

	lt := newLimitedTarget(t, p)
	base.Target = lt.URL
	docs := runSegments(t, lt, 4, base)
	for k, d := range docs {
		if d.Expect != nil || d.Planned != 30 || d.Segment == nil || d.Segment.Index != k {
			t.Fatalf("segment %d: planned %d expect %v segment %+v", k, d.Planned, d.Expect, d.Segment)
		}
	}
	m, err := tally.Merge(docs)
	if err != nil {
		t.Fatal(err)
	}
	if m.Planned != 120 || m.Sent != 120 || m.Completed != 120 {
		t.Fatalf("merged planned %d sent %d completed %d, want 120", m.Planned, m.Sent, m.Completed)
	}
	if m.Allowed != lt.allowed.Load() {
		t.Errorf("merged allowed %d, the target admitted %d", m.Allowed, lt.allowed.Load())
	}
	if m.Expect == nil || !m.Expect.Pass || m.Verdict != "pass" {
		t.Fatalf("merged verdict %q: %+v", m.Verdict, m.Expect)
	}
	// 10 + 5/s over 5.95 s: 39 (the same plan in one process judges the same)
	if m.Expect.Expected < 38 || m.Expect.Expected > 40 {
		t.Errorf("expected %d, want about 39: %s", m.Expect.Expected, m.Expect.Line())
	}
	if len(m.Thresholds) != 2 || !m.Thresholds[0].Pass || !m.Thresholds[1].Pass || m.Thresholds[1].ID != "p99<1000ms" {
		t.Errorf("thresholds %+v", m.Thresholds)
	}
	var tl int64
	for _, s := range m.Timeline {
		tl += sumStatus(s.Status)
	}
	if tl != 120 || m.Latency.Count != 120 {
		t.Errorf("timeline sums to %d, latency count %d", tl, m.Latency.Count)
	}

	whole := newLimitedTarget(t, p)
	wo := base
	wo.Target = whole.URL
	res := runLoad(t, wo)
	if res.Verdict != m.Verdict || res.Expect.Pass != m.Expect.Pass || abs(res.Expect.Expected-m.Expect.Expected) > 1 {
		t.Errorf("whole run %q %s; merged %q %s", res.Verdict, res.Expect.Line(), m.Verdict, m.Expect.Line())
	}
	t.Logf("merged: %s; whole: %s", m.Expect.Line(), res.Expect.Line())

	// missing, duplicate and foreign segments
	partial, err := tally.Merge(docs[:3])
	if err != nil {
		t.Fatal(err)
	}
	if partial.Verdict != "fail" || len(partial.Segment.Missing) != 1 || partial.Segment.Missing[0] != 3 {
		t.Errorf("a merge without segment 3: verdict %q missing %v", partial.Verdict, partial.Segment.Missing)
	}
	if _, err := tally.Merge([]*tally.Result{docs[0], docs[1], docs[1]}); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate segment: %v", err)
	}
	other := *docs[2]
	other.Rate = "30/s"
	if _, err := tally.Merge([]*tally.Result{docs[0], &other}); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "rate") {
		t.Errorf("another plan: %v", err)
	}
	if _, err := tally.Merge([]*tally.Result{res}); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("a whole run merged: %v", err)
	}
	cut := *docs[1]
	cut.Interrupted = true
	im, err := tally.Merge([]*tally.Result{docs[0], &cut, docs[2], docs[3]})
	if err != nil {
		t.Fatal(err)
	}
	if im.Verdict != "fail" || im.Expect != nil || len(im.Segment.Incomplete) != 1 {
		t.Errorf("a merge with an interrupted segment: verdict %q expect %v incomplete %v", im.Verdict, im.Expect, im.Segment.Incomplete)
	}
	slow := *docs[3]
	slow.TimeoutS = 60
	if _, err := tally.Merge([]*tally.Result{docs[0], &slow}); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("another timeout: %v", err)
	}
}
