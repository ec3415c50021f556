package load

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// Thresholds end to end: one that must fail fails the run, one that must
// pass passes, and both are in the document.
func TestRunThresholds(t *testing.T) {
	pt := newPlainTarget(t, 200, 0)
	var ths []judge.Threshold
	for _, s := range []string{"p99<1us", "dropped==0", "failed<1%", "allowed==10", "rps>0"} {
		th, err := judge.ParseThreshold(s)
		if err != nil {
			t.Fatal(err)
		}
		ths = append(ths, th)
	}
	res := runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, MaxFailed: 0.01, Thresholds: ths})
	want := map[string]bool{"failed<=1%": true, "p99<1us": false, "dropped==0": true, "failed<1%": true, "allowed==10": true, "rps>0/s": true}
	if len(res.Thresholds) != len(want) {
		t.Fatalf("thresholds %+v, want %d", res.Thresholds, len(want))
	}
	for _, c := range res.Thresholds {
		if p, ok := want[c.ID]; !ok || p != c.Pass {
			t.Errorf("threshold %s pass %v (%s), want %v", c.ID, c.Pass, c.Actual, p)
		}
	}
	if res.Verdict != "fail" || len(res.VerdictMessages) != 1 || !strings.HasPrefix(res.VerdictMessages[0], "threshold p99<1us: ") {
		t.Errorf("verdict %q %q, want fail for p99<1us alone", res.Verdict, res.VerdictMessages)
	}
	if res.LatencyFromDue.P95 <= 0 || res.LatencyFromDue.P95 > res.LatencyFromDue.P99 {
		t.Errorf("p95 %v p99 %v", res.LatencyFromDue.P95, res.LatencyFromDue.P99)
	}
	if res.ResponsesPerS <= 0 || res.BytesIn <= 0 || res.BytesOut <= 0 {
		t.Errorf("responses/s %v bytes in %d out %d, want all positive", res.ResponsesPerS, res.BytesIn, res.BytesOut)
	}
	// NoMaxFailed drops the --max-failed check.
	res = runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("5/s"), Duration: time.Second, NoMaxFailed: true, Thresholds: ths[2:3]})
	if len(res.Thresholds) != 1 || res.Thresholds[0].ID != "failed<1%" || res.Verdict != "undecided" {
		t.Errorf("with NoMaxFailed: thresholds %+v verdict %q", res.Thresholds, res.Verdict)
	}
}

// --abort-on-fail stops a run of 405s once failed<1% cannot be met, and
// a slow target with one VU at the first dropped iteration.
func TestRunAbortOnFail(t *testing.T) {
	failing := newPlainTarget(t, http.StatusMethodNotAllowed, 0)
	slow := newPlainTarget(t, 200, 400*time.Millisecond)
	tests := []struct {
		name, expr string
		target     string
		vus        int
	}{
		{"failed", "failed<1%", failing.URL, 0},
		{"dropped", "dropped==0", slow.URL, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, _ := judge.ParseThreshold(tt.expr)
			res := runLoad(t, Options{Target: tt.target, Rate: rate.MustParse("20/s"), Duration: 20 * time.Second,
				PreAllocatedVUs: tt.vus, MaxVUs: tt.vus, NoMaxFailed: true, Thresholds: []judge.Threshold{th}, AbortOnFail: true})
			if !res.Aborted || res.Verdict != "fail" || res.NotStarted == 0 || res.Sent >= res.Planned {
				t.Fatalf("aborted %v verdict %q sent %d not started %d of %d", res.Aborted, res.Verdict, res.Sent, res.NotStarted, res.Planned)
			}
			if res.Planned != res.Sent+res.Dropped+res.NotStarted {
				t.Errorf("planned %d != sent %d + dropped %d + not started %d", res.Planned, res.Sent, res.Dropped, res.NotStarted)
			}
			c := res.Thresholds[0]
			if c.Pass || !c.Aborted || !strings.Contains(res.AbortReason, tt.expr+" can no longer be met") || !strings.Contains(c.Message, "stopped the run") {
				t.Errorf("check %+v reason %q", c, res.AbortReason)
			}
			if len(res.VerdictMessages) != 1 || res.VerdictMessages[0] != c.Message {
				t.Errorf("verdict messages %q, want the check's message once", res.VerdictMessages)
			}
		})
	}
	// Negative control: without --abort-on-fail the same threshold lets a
	// short run finish, and fails it at the end.
	th, _ := judge.ParseThreshold("failed<1%")
	res := runLoad(t, Options{Target: failing.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, Thresholds: []judge.Threshold{th}})
	if res.Aborted || res.Sent != res.Planned || res.Verdict != "fail" {
		t.Errorf("without --abort-on-fail: aborted %v sent %d of %d verdict %q", res.Aborted, res.Sent, res.Planned, res.Verdict)
	}
	// A threshold that holds never aborts.
	ok, _ := judge.ParseThreshold("dropped==0")
	res = runLoad(t, Options{Target: failing.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, ExpectStatus: []int{405}, Thresholds: []judge.Threshold{ok}, AbortOnFail: true})
	if res.Aborted || res.Sent != res.Planned || res.Verdict != "undecided" {
		t.Errorf("a holding threshold: aborted %v sent %d of %d verdict %q", res.Aborted, res.Sent, res.Planned, res.Verdict)
	}
}

// A target with no limiter: undecided with a note without --expect, a
// failure with it.
func TestRunNoLimiterSeen(t *testing.T) {
	pt := newPlainTarget(t, 200, 0)
	res := runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("10/s"), Duration: time.Second})
	if res.Verdict != "undecided" || len(res.Notes) != 1 || res.Notes[0] != tally.NoLimiterNote {
		t.Errorf("verdict %q notes %q, want undecided with the no-limiter note", res.Verdict, res.Notes)
	}
	exp, err := judge.ParseExpect("token-bucket:burst=100,rate=100/s")
	if err != nil {
		t.Fatal(err)
	}
	res = runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, Expect: exp})
	if res.Verdict != "fail" || len(res.Notes) != 0 || !strings.Contains(strings.Join(res.VerdictMessages, ";"), tally.NoLimiterNote) {
		t.Errorf("with --expect: verdict %q messages %q notes %q, want a failure for it", res.Verdict, res.VerdictMessages, res.Notes)
	}
	// Negative control: a target that answers with a RateLimit header gets no note.
	lt := newLimitedTarget(t, limiter.Params{Algo: limiter.TokenBucket, Capacity: 100, Rate: rate.Rate{Count: 100, Per: time.Second}})
	res = runLoad(t, Options{Target: lt.URL, Rate: rate.MustParse("10/s"), Duration: time.Second})
	if len(res.Notes) != 0 {
		t.Errorf("a target with RateLimit headers got notes %q", res.Notes)
	}
}

// The net/http path counts the bytes of its connections too.
func TestNetHTTPBytesCounted(t *testing.T) {
	pt := newPlainTarget(t, 200, 0)
	o, err := Options{Target: pt.URL, Rate: rate.MustParse("1/s"), Duration: time.Second, HTTPClient: HTTPClientStd}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{o: o}
	if err := e.prepare(); err != nil {
		t.Fatal(err)
	}
	std := e.client.(*stdClient)
	resp, err := std.hc.Get(pt.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	std.close()
	if e.bytesIn.Load() < int64(len("HTTP/1.1 200 OK\r\n\r\nhello")) || e.bytesOut.Load() < int64(len("GET / HTTP/1.1\r\n\r\n")) {
		t.Errorf("bytes in %d out %d", e.bytesIn.Load(), e.bytesOut.Load())
	}
}
