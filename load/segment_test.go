package load

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// runSegments runs the n segments of one plan concurrently in this
// process against lt, starting together, and returns their documents as
// a merge would read them (through JSON).
func runSegments(t *testing.T, lt *limitedTarget, n int, o Options) []*Result {
	t.Helper()
	o.StartAt = time.Now().Add(300 * time.Millisecond)
	docs := make([]*Result, n)
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
			var back Result
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
	x, err := ParseExpect("token-bucket:burst=10,rate=5/s")
	if err != nil {
		t.Fatal(err)
	}
	base := Options{Target: "", Rate: rate.MustParse("20/s"), Duration: 6 * time.Second, Identities: 1, Expect: x,
		RunID: "seg-test", Thresholds: []Threshold{{Metric: "p99", Op: "<", Value: 1000, Unit: "ms"}}}

	lt := newLimitedTarget(t, p)
	base.Target = lt.URL
	docs := runSegments(t, lt, 4, base)
	for k, d := range docs {
		if d.Expect != nil || d.Planned != 30 || d.Segment == nil || d.Segment.Index != k {
			t.Fatalf("segment %d: planned %d expect %v segment %+v", k, d.Planned, d.Expect, d.Segment)
		}
	}
	m, err := Merge(docs)
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
	partial, err := Merge(docs[:3])
	if err != nil {
		t.Fatal(err)
	}
	if partial.Verdict != "fail" || len(partial.Segment.Missing) != 1 || partial.Segment.Missing[0] != 3 {
		t.Errorf("a merge without segment 3: verdict %q missing %v", partial.Verdict, partial.Segment.Missing)
	}
	if _, err := Merge([]*Result{docs[0], docs[1], docs[1]}); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate segment: %v", err)
	}
	other := *docs[2]
	other.Rate = "30/s"
	if _, err := Merge([]*Result{docs[0], &other}); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "rate") {
		t.Errorf("another plan: %v", err)
	}
	if _, err := Merge([]*Result{res}); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("a whole run merged: %v", err)
	}
	cut := *docs[1]
	cut.Interrupted = true
	im, err := Merge([]*Result{docs[0], &cut, docs[2], docs[3]})
	if err != nil {
		t.Fatal(err)
	}
	if im.Verdict != "fail" || im.Expect != nil || len(im.Segment.Incomplete) != 1 {
		t.Errorf("a merge with an interrupted segment: verdict %q expect %v incomplete %v", im.Verdict, im.Expect, im.Segment.Incomplete)
	}
	slow := *docs[3]
	slow.TimeoutS = 60
	if _, err := Merge([]*Result{docs[0], &slow}); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("another timeout: %v", err)
	}
}

// TestHDRMergeLossless: the percentiles of histograms merged from their
// encoded snapshots equal those of one histogram fed every value.
func TestHDRMergeLossless(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	one := newHistogram(20_000_000)
	var parts []*hdrhistogram.Histogram
	for range 4 {
		parts = append(parts, newHistogram(20_000_000))
	}
	for i := range 200_000 {
		v := int64(r.ExpFloat64()*2000) + 1
		if i%97 == 0 {
			v *= 1000
		}
		_ = one.RecordValue(min(v, 20_000_000))
		_ = parts[i%4].RecordValue(min(v, 20_000_000))
	}
	var decoded []*hdrhistogram.Histogram
	for _, h := range parts {
		d, err := decodeHDR(encodeHDR(h), "test")
		if err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, d)
	}
	m, err := mergeHDR(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if m.TotalCount() != one.TotalCount() {
		t.Fatalf("count %d, want %d", m.TotalCount(), one.TotalCount())
	}
	for _, q := range []float64{0, 1, 50, 90, 99, 99.9, 99.99, 100} {
		if a, b := m.ValueAtQuantile(q), one.ValueAtQuantile(q); a != b {
			t.Errorf("p%v: merged %d, one histogram %d", q, a, b)
		}
	}
	if latency(m) != latency(one) {
		t.Errorf("latency %+v, want %+v", latency(m), latency(one))
	}
}

func TestPackArrivalsRoundTrip(t *testing.T) {
	in := []Arrival{{Identity: 0, SendNs: 5e6, DoneNs: 7e6, Status: 200}, {Identity: 3, SendNs: 9e6, DoneNs: 9.5e6, Status: 429}, {Identity: 1, SendNs: 12e6, DoneNs: 30e6, Status: 0}}
	out, err := unpackArrivals(packArrivals(in), 1e9, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		w := in[i]
		w.SendNs += 1e9
		w.DoneNs += 1e9
		w.DueNs = w.SendNs
		if out[i] != w {
			t.Errorf("arrival %d: %+v, want %+v", i, out[i], w)
		}
	}
	if _, err := unpackArrivals(packArrivals(in), 0, 2); err == nil {
		t.Error("an identity beyond the run's was accepted")
	}
	if _, err := unpackArrivals("!!", 0, 2); err == nil {
		t.Error("garbage accepted")
	}
}
