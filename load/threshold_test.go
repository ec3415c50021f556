package load

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
)

func TestParseThreshold(t *testing.T) {
	good := []struct {
		in, canon string
		value     float64
		pct       bool
	}{
		{"p99<50ms", "p99<50ms", 50, false},
		{" p99 < 50 ms ", "p99<50ms", 50, false},
		{"p(95)<=1s", "p95<=1s", 1000, false},
		{"max<250us", "max<250us", 0.25, false},
		{"mean>=2", "mean>=2ms", 2, false},
		{"dropped==0", "dropped==0", 0, false},
		{"failed<1%", "failed<1%", 1, true},
		{"FAILED<0.5%", "failed<0.5%", 0.5, true},
		{"refused>=50%", "refused>=50%", 50, true},
		{"rate_limited>0", "refused>0", 0, false},
		{"allowed!=0", "allowed!=0", 0, false},
		{"rps>=9.5/s", "rps>=9.5/s", 9.5, false},
	}
	for _, tt := range good {
		th, err := ParseThreshold(tt.in)
		if err != nil {
			t.Errorf("ParseThreshold(%q): %v", tt.in, err)
			continue
		}
		if th.String() != tt.canon || th.Value != tt.value || th.Pct != tt.pct {
			t.Errorf("ParseThreshold(%q) = %s (value %v pct %v), want %s (%v %v)", tt.in, th, th.Value, th.Pct, tt.canon, tt.value, tt.pct)
		}
	}
	bad := map[string]string{
		"":                       "no operator",
		"p99":                    "no operator",
		"<50ms":                  "no metric",
		"p98<50ms":               "unknown metric",
		"p99=>50ms":              "no operator",
		"p99<":                   "no number",
		"p99<-5ms":               "no number",
		"p99<1e3ms":              "unknown unit",
		"p99<50%":                "not %",
		"p99<50h":                "unknown unit",
		"failed<150%":            "at most 100%",
		"dropped<0.5":            "whole number",
		"dropped<1ms":            "unknown unit",
		"rps>5/m":                "unknown unit",
		"p99<1.2.3ms":            "no number",
		"p99<9999999999999999ms": "out of range",
		"p99<50ms\n":             "", // trailing space is trimmed: accepted
	}
	for in, want := range bad {
		_, err := ParseThreshold(in)
		if want == "" {
			if err != nil {
				t.Errorf("ParseThreshold(%q): %v, want it accepted", in, err)
			}
			continue
		}
		if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseThreshold(%q) = %v (exit %d), want a one-line exit-2 error with %q", in, err, exitcode.Code(err), want)
		}
	}
}

func FuzzThreshold(f *testing.F) {
	for _, s := range []string{"p99<50ms", "dropped==0", "failed<1%", "rps>=9.5/s", "p(95)<=1s", "max<250µs", "min>", "<=", "!=", "refused<=100%", "p99<1.", "a\x00<1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseThreshold(s)
		if err != nil {
			if exitcode.Code(err) != exitcode.Usage || strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("ParseThreshold(%q): %v (exit %d), want a one-line exit-2 error", s, err, exitcode.Code(err))
			}
			return
		}
		// The canonical form reads back as the same threshold.
		again, err := ParseThreshold(th.String())
		if err != nil || again.Metric != th.Metric || again.Op != th.Op || again.Pct != th.Pct {
			t.Fatalf("ParseThreshold(%q) = %s, which reads back as %+v, %v", s, th, again, err)
		}
		res := &Result{Planned: 10, Sent: 10, Completed: 10, Responses: 10, Allowed: 4, RateLimited: 6,
			LatencyFromDue: Latency{Count: 10, Min: 1, Mean: 2, P50: 2, P90: 3, P95: 3, P99: 4, Max: 5}}
		_ = th.check(res)
		_, _ = th.lost(watchCounts{planned: 10, dropped: 3, failed: 2, allowed: 4, limited: 6, maxDueUs: 5000, minDueUs: 1000})
	})
}

func TestThresholdCheck(t *testing.T) {
	res := &Result{Planned: 100, Sent: 98, Dropped: 2, Completed: 98, Responses: 97, Failed: 3, Allowed: 40, RateLimited: 57, ResponsesPerS: 9.7,
		LatencyFromDue: Latency{Count: 98, Min: 0.5, Mean: 2, P50: 1.5, P90: 3, P95: 4, P99: 40, Max: 120}}
	tests := []struct {
		expr   string
		pass   bool
		actual string
	}{
		{"p99<50ms", true, "40ms"},
		{"p99<0.03s", false, "0.04s"},
		{"p95<=4ms", true, "4ms"},
		{"max<100ms", false, "120ms"},
		{"min>400us", true, "500us"},
		{"mean==2ms", true, "2ms"},
		{"dropped==0", false, "2"},
		{"dropped<=2%", true, "2.00% (2 of 100 planned)"},
		{"failed<1%", false, "3.06% (3 of 98 completed)"},
		{"failed<5", true, "3"},
		{"refused>50%", true, "58.76% (57 of 97 responses)"},
		{"allowed>=41", false, "40"},
		{"allowed!=40", false, "40"},
		{"rps>=9.5", true, "9.7/s"},
	}
	for _, tt := range tests {
		th, err := ParseThreshold(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		c := th.check(res)
		if c.Pass != tt.pass || c.Actual != tt.actual || c.ID != th.String() || !strings.Contains(c.Message, c.ID) {
			t.Errorf("%s: pass %v actual %q message %q; want %v %q", tt.expr, c.Pass, c.Actual, c.Message, tt.pass, tt.actual)
		}
	}
	// A latency threshold without a single completed request fails.
	th, _ := ParseThreshold("p99<50ms")
	if c := th.check(&Result{}); c.Pass {
		t.Errorf("p99<50ms with no sample passes: %+v", c)
	}
}

func TestThresholdLost(t *testing.T) {
	w := watchCounts{planned: 200, dropped: 1, failed: 2, allowed: 10, limited: 0, maxDueUs: 120_000, minDueUs: 300}
	tests := []struct {
		expr string
		lost bool
	}{
		{"dropped==0", true},
		{"dropped<1", true},
		{"dropped<=1", false},
		{"dropped!=0", false}, // only known at the end
		{"failed<1%", true},   // 2 of 200 planned is 1%: never below it again
		{"failed<=1%", false},
		{"failed<0.5%", true}, // 2 > 1 = 0.5% of 200
		{"allowed<=9", true},
		{"allowed>=100", false}, // more may come
		{"refused<1", false},
		{"max<100ms", true},
		{"max<=120ms", false},
		{"min>1ms", true},
		{"min<1ms", false},
		{"p99<1ms", false}, // percentiles are judged at the end
		{"mean<1ms", false},
		{"rps>100", false},
	}
	for _, tt := range tests {
		th, err := ParseThreshold(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		lost, why := th.lost(w)
		if lost != tt.lost || lost && why == "" {
			t.Errorf("%s lost = %v (%q), want %v", tt.expr, lost, why, tt.lost)
		}
	}
	// Nothing is lost before the first sample.
	th, _ := ParseThreshold("max<1ms")
	if lost, _ := th.lost(watchCounts{planned: 10, maxDueUs: -1, minDueUs: -1}); lost {
		t.Error("max<1ms lost before any sample")
	}
}

// Thresholds end to end: one that must fail fails the run, one that must
// pass passes, and both are in the document.
func TestRunThresholds(t *testing.T) {
	pt := newPlainTarget(t, 200, 0)
	var ths []Threshold
	for _, s := range []string{"p99<1us", "dropped==0", "failed<1%", "allowed==10", "rps>0"} {
		th, err := ParseThreshold(s)
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
	if len(res.Thresholds) != 1 || res.Thresholds[0].ID != "failed<1%" || res.Verdict != "pass" {
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
			th, _ := ParseThreshold(tt.expr)
			res := runLoad(t, Options{Target: tt.target, Rate: rate.MustParse("20/s"), Duration: 20 * time.Second,
				PreAllocatedVUs: tt.vus, MaxVUs: tt.vus, NoMaxFailed: true, Thresholds: []Threshold{th}, AbortOnFail: true})
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
	th, _ := ParseThreshold("failed<1%")
	res := runLoad(t, Options{Target: failing.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, Thresholds: []Threshold{th}})
	if res.Aborted || res.Sent != res.Planned || res.Verdict != "fail" {
		t.Errorf("without --abort-on-fail: aborted %v sent %d of %d verdict %q", res.Aborted, res.Sent, res.Planned, res.Verdict)
	}
	// A threshold that holds never aborts.
	ok, _ := ParseThreshold("dropped==0")
	res = runLoad(t, Options{Target: failing.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, ExpectStatus: []int{405}, Thresholds: []Threshold{ok}, AbortOnFail: true})
	if res.Aborted || res.Sent != res.Planned || res.Verdict != "pass" {
		t.Errorf("a holding threshold: aborted %v sent %d of %d verdict %q", res.Aborted, res.Sent, res.Planned, res.Verdict)
	}
}

// A target with no limiter: a note without --expect, a failure with it.
func TestRunNoLimiterSeen(t *testing.T) {
	pt := newPlainTarget(t, 200, 0)
	res := runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("10/s"), Duration: time.Second})
	if res.Verdict != "pass" || len(res.Notes) != 1 || res.Notes[0] != NoLimiterNote {
		t.Errorf("verdict %q notes %q, want pass with the no-limiter note", res.Verdict, res.Notes)
	}
	exp, err := ParseExpect("token-bucket:burst=100,rate=100/s")
	if err != nil {
		t.Fatal(err)
	}
	res = runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, Expect: exp})
	if res.Verdict != "fail" || len(res.Notes) != 0 || !strings.Contains(strings.Join(res.VerdictMessages, ";"), NoLimiterNote) {
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
