package load

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/tally"
)

func runLoad(t *testing.T, o Options) *tally.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o.RunID == "" {
		o.RunID = strings.ReplaceAll(t.Name(), "/", "-")
	}
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func sumStatus(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func TestRunPlainTarget(t *testing.T) {
	pt := newPlainTarget(t, 200, 0)
	res := runLoad(t, Options{Target: pt.URL + "/hello", Rate: rate.MustParse("20/s"), Duration: 2 * time.Second})
	if res.Planned != 40 || res.Sent != 40 || res.Dropped != 0 || res.NotStarted != 0 {
		t.Fatalf("planned %d sent %d dropped %d not started %d; want 40 40 0 0", res.Planned, res.Sent, res.Dropped, res.NotStarted)
	}
	if got := pt.hits.Load(); got != 40 {
		t.Errorf("target saw %d requests, want 40", got)
	}
	if res.Status["200"] != 40 || res.Allowed != 40 || res.Failed != 0 || res.Completed != 40 {
		t.Errorf("status %v allowed %d failed %d completed %d", res.Status, res.Allowed, res.Failed, res.Completed)
	}
	if len(res.Timeline) != 2 {
		t.Fatalf("timeline has %d seconds, want 2: %+v", len(res.Timeline), res.Timeline)
	}
	var tl int64
	for _, s := range res.Timeline {
		tl += sumStatus(s.Status)
	}
	if tl != 40 {
		t.Errorf("timeline sums to %d, want 40", tl)
	}
	if res.Latency.Count != 40 || res.LatencyFromDue.Count != 40 || res.Latency.P99 <= 0 {
		t.Errorf("latency %+v from due %+v", res.Latency, res.LatencyFromDue)
	}
	if res.LatencyFromDue.P50 < res.Latency.P50 {
		t.Errorf("latency from due p50 %v below latency from send p50 %v", res.LatencyFromDue.P50, res.Latency.P50)
	}
	// The run ends right after the last arrival at 1.95 s.
	if res.ElapsedS < 1.95 || res.ElapsedS > 3 {
		t.Errorf("elapsed %.3f s, want about 1.95 s", res.ElapsedS)
	}
	// a plain target refuses nothing: the run decided nothing
	if res.Verdict != "undecided" || res.Kind != "load" || res.Version != 1 {
		t.Errorf("verdict %q kind %q version %d", res.Verdict, res.Kind, res.Version)
	}
	if res.Headers.Responses != 40 || res.Headers.Policy.Present != 0 {
		t.Errorf("headers %+v", res.Headers)
	}
}

func TestRunTokenBucketVerdict(t *testing.T) {
	p := limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}}
	tests := []struct {
		expect string
		pass   bool
	}{
		{"token-bucket:burst=10,rate=5/s", true},
		{"token-bucket:burst=10,rate=10/s", false},
		{"auto", true},
	}
	for _, tt := range tests {
		t.Run(tt.expect, func(t *testing.T) {
			lt := newLimitedTarget(t, p)
			x, err := judge.ParseExpect(tt.expect)
			if err != nil {
				t.Fatal(err)
			}
			res := runLoad(t, Options{
				Target: lt.URL, Rate: rate.MustParse("20/s"), Duration: 2 * time.Second,
				Identities: 1, Expect: x,
			})
			if res.Sent != 40 || res.Dropped != 0 {
				t.Fatalf("sent %d dropped %d, want 40 0", res.Sent, res.Dropped)
			}
			// The target's own count is the truth the report must match.
			if res.Allowed != lt.allowed.Load() || res.RateLimited != lt.refused.Load() {
				t.Errorf("allowed %d limited %d; target counted %d %d", res.Allowed, res.RateLimited, lt.allowed.Load(), lt.refused.Load())
			}
			j := res.Expect
			if j == nil {
				t.Fatal("no verdict")
			}
			t.Logf("%s", j.Line())
			if j.Pass != tt.pass {
				t.Errorf("pass = %v, want %v: %s", j.Pass, tt.pass, j.Line())
			}
			// A bucket of 10 at 5/s over 1.95 s admits 10 + floor(5 * 1.95) = 19.
			if tt.pass && (res.Allowed < 18 || res.Allowed > 21) {
				t.Errorf("allowed %d, want about 19", res.Allowed)
			}
			if tt.expect == "auto" {
				if !strings.HasPrefix(j.Fits, "token-bucket:burst=10,rate=5/s") {
					t.Errorf("auto fits %q, want the bucket reading; readings %+v", j.Fits, j.Readings)
				}
			}
			wantVerdict := map[bool]string{true: "pass", false: "fail"}[tt.pass]
			if res.Verdict != wantVerdict {
				t.Errorf("verdict %q, want %q", res.Verdict, wantVerdict)
			}
			// serve-like headers pass every check.
			h := res.Headers
			if h.Policy.Present != 40 || h.Policy.Valid != 40 || h.RateLimit.Valid != 40 ||
				h.RetryAfter.Checked != res.RateLimited || h.RetryAfter.Valid != res.RateLimited || h.Storable429 != 0 {
				t.Errorf("header checks %+v", h)
			}
			if h.PolicyValue != `"default";q=10;w=2` {
				t.Errorf("policy %q", h.PolicyValue)
			}
		})
	}
}

// Against a sliding window of 10 per 60 s, 20/s for 1 s admits exactly 10,
// per identity: 3 identities share the load round-robin.
func TestRunSlidingWindowIdentities(t *testing.T) {
	lt := newLimitedTarget(t, limiter.Params{Algo: limiter.SlidingWindow, Limit: 5, Window: time.Minute})
	x, err := judge.ParseExpect("sliding-window:limit=5,window=60s")
	if err != nil {
		t.Fatal(err)
	}
	res := runLoad(t, Options{
		Target: lt.URL, Rate: rate.MustParse("30/s"), Duration: time.Second,
		Identities: 3, Expect: x,
	})
	if res.Sent != 30 || res.Allowed != 15 || res.RateLimited != 15 {
		t.Fatalf("sent %d allowed %d limited %d; want 30 15 15", res.Sent, res.Allowed, res.RateLimited)
	}
	if !res.Expect.Pass || res.Expect.Expected != 15 {
		t.Errorf("verdict %s", res.Expect.Line())
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if len(lt.lims) != 3 {
		t.Errorf("target saw %d identities, want 3", len(lt.lims))
	}
	for k := range lt.lims {
		if !strings.HasPrefix(k, "load-"+res.RunID+"-") {
			t.Errorf("identity %q does not name the run", k)
		}
	}
}

// A slow target with too few VUs: iterations are dropped, never queued,
// and planned = sent + dropped.
func TestRunDropsWhenNoVU(t *testing.T) {
	pt := newPlainTarget(t, 200, 300*time.Millisecond)
	res := runLoad(t, Options{
		Target: pt.URL, Rate: rate.MustParse("20/s"), Duration: time.Second,
		PreAllocatedVUs: 1, MaxVUs: 2,
	})
	if res.Planned != 20 || res.Sent+res.Dropped != res.Planned {
		t.Fatalf("planned %d sent %d dropped %d", res.Planned, res.Sent, res.Dropped)
	}
	// Two VUs busy 300 ms each can start at most 4 + 4 iterations in 1 s.
	if res.Sent > 8 || res.DroppedNoVU < 12 {
		t.Errorf("sent %d dropped_no_vu %d; want <= 8 and >= 12", res.Sent, res.DroppedNoVU)
	}
	if res.VUs.Peak != 2 || res.VUs.Added != 1 {
		t.Errorf("vus %+v, want peak 2 with 1 added", res.VUs)
	}
	if !res.Generator.FellBehind || !strings.Contains(strings.Join(res.Generator.Reasons, ";"), "raise --max-vus") {
		t.Errorf("generator %+v, want fell behind for lack of VUs", res.Generator)
	}
	if res.LatencyFromDue.P50 < 300 || res.Latency.P50 < 300 {
		t.Errorf("latency p50 %v from due %v; want >= 300 ms", res.Latency.P50, res.LatencyFromDue.P50)
	}
	// Nothing sent late in a burst: every send is within the lateness bound.
	if res.Lateness.Max > float64(MaxLateness/time.Millisecond) {
		t.Errorf("lateness max %v ms", res.Lateness.Max)
	}
}

func TestRunFailuresAndThreshold(t *testing.T) {
	pt := newPlainTarget(t, 503, 0)
	res := runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, MaxFailed: 0.01})
	if res.Failed != 10 || res.FailedPct != 100 || res.Verdict != "fail" {
		t.Errorf("failed %d (%.1f%%) verdict %q", res.Failed, res.FailedPct, res.Verdict)
	}
	if len(res.Thresholds) != 1 || res.Thresholds[0].Pass || res.Thresholds[0].Limit != "1%" {
		t.Errorf("thresholds %+v", res.Thresholds)
	}
	// Allowing 503 makes the same run fail nothing (and, refusing
	// nothing, decide nothing).
	res = runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, ExpectStatus: []int{503}})
	if res.Failed != 0 || res.Verdict != "undecided" {
		t.Errorf("with 503 expected: failed %d verdict %q", res.Failed, res.Verdict)
	}
}

func TestRunTimeout(t *testing.T) {
	pt := newPlainTarget(t, 200, 3*time.Second)
	start := time.Now()
	res := runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("5/s"), Duration: time.Second, Timeout: 200 * time.Millisecond})
	if res.Errors["timeout"] != 5 || res.Failed != 5 || res.Responses != 0 {
		t.Errorf("errors %v failed %d responses %d", res.Errors, res.Failed, res.Responses)
	}
	// Stops by itself at the duration plus the timeout.
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("run took %v, want about 1 s + 200 ms", el)
	}
	if res.Timeline[0].Status["error"] == 0 {
		t.Errorf("timeline %+v: want errors counted", res.Timeline)
	}
}

func TestRunInterrupted(t *testing.T) {
	pt := newPlainTarget(t, 200, 0)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	res, err := Run(ctx, Options{Target: pt.URL, Rate: rate.MustParse("20/s"), Duration: 5 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("an interrupted run took %v", time.Since(start))
	}
	if !res.Interrupted || res.Verdict != "interrupted" || res.NotStarted < 50 || res.Sent < 5 || res.Sent > 15 {
		t.Errorf("interrupted %v verdict %q sent %d not started %d", res.Interrupted, res.Verdict, res.Sent, res.NotStarted)
	}
	if res.Planned != res.Sent+res.Dropped+res.NotStarted {
		t.Errorf("planned %d != sent %d + dropped %d + not started %d", res.Planned, res.Sent, res.Dropped, res.NotStarted)
	}
}

func TestRunUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Run(context.Background(), Options{Target: "http://" + addr + "/", Rate: rate.MustParse("5/s"), Duration: time.Second})
	if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), addr) {
		t.Errorf("Run against a closed port: %v (exit %d), want exit 3 naming %s", err, exitcode.Code(err), addr)
	}
}

func TestRunHeaderChecks(t *testing.T) {
	lt := newLimitedTarget(t, limiter.Params{Algo: limiter.FixedWindow, Limit: 2, Window: time.Minute})
	lt.tamper = func(h http.Header, allowed bool) {
		if !allowed {
			h.Del("Retry-After")
			h.Set("Cache-Control", "max-age=60")
			h.Set("RateLimit", `"default";r=5;t=1`) // r > q=2
		}
		h.Set("X-RateLimit-Remaining", "1")
	}
	res := runLoad(t, Options{Target: lt.URL, Rate: rate.MustParse("10/s"), Duration: time.Second})
	h := res.Headers
	if res.RateLimited != 8 || h.RetryAfter.Checked != 8 || h.RetryAfter.Present != 0 || h.RetryAfter.Valid != 0 {
		t.Errorf("429s %d retry-after %+v", res.RateLimited, h.RetryAfter)
	}
	if h.Storable429 != 8 || !strings.Contains(h.StorableWhy, "explicit freshness") {
		t.Errorf("storable %d %q", h.Storable429, h.StorableWhy)
	}
	if h.RateLimit.Present != 10 || h.RateLimit.Valid != 2 || !strings.Contains(h.RateLimit.Example, "r=5 exceeds the policy's q=2") {
		t.Errorf("ratelimit %+v", h.RateLimit)
	}
	if h.Legacy != 10 || h.LegacyName != "X-RateLimit-" {
		t.Errorf("legacy %d %q", h.Legacy, h.LegacyName)
	}
}

func TestRunBody(t *testing.T) {
	got := make(chan string, 10)
	pt := newPlainTarget(t, 200, 0)
	pt.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 64)
		n, _ := r.Body.Read(b)
		got <- r.Method + " " + r.Header.Get("X-Test") + " " + string(b[:n]) + " " + r.Host
	})
	h, err := ParseHeaders([]string{"X-Test: yes", "Host: example.test"})
	if err != nil {
		t.Fatal(err)
	}
	res := runLoad(t, Options{Target: pt.URL, Method: "POST", Headers: h, Body: []byte(`{"a":1}`),
		Rate: rate.MustParse("2/s"), Duration: time.Second})
	if res.Sent != 2 || res.Status["200"] != 2 {
		t.Fatalf("sent %d status %v", res.Sent, res.Status)
	}
	for range 2 {
		if s := <-got; s != `POST yes {"a":1} example.test` {
			t.Errorf("target saw %q", s)
		}
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	r := rate.Rate{Count: 1, Per: time.Second}
	tests := []Options{
		{Rate: r, Duration: time.Second},
		{Target: "ftp://x", Rate: r, Duration: time.Second},
		{Target: "/relative", Rate: r, Duration: time.Second},
		{Target: "http://127.0.0.1:1", Duration: time.Second},
		{Target: "http://127.0.0.1:1", Rate: r},
		{Target: "http://127.0.0.1:1", Rate: r, Duration: time.Second, PreAllocatedVUs: 5, MaxVUs: 2},
		{Target: "http://127.0.0.1:1", Rate: r, Duration: time.Second, Method: "GE T"},
		{Target: "http://127.0.0.1:1", Rate: r, Duration: time.Second, ExpectStatus: []int{99}},
		{Target: "http://127.0.0.1:1", Rate: r, Duration: time.Second, MaxFailed: 2},
		{Target: "http://127.0.0.1:1", Rate: r, Duration: time.Second, Identities: 1, IdentityHeader: "bad header"},
	}
	for _, o := range tests {
		if _, err := Run(context.Background(), o); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("Run(%+v) = %v, want a usage error", o, err)
		}
	}
}

func TestParseFlags(t *testing.T) {
	h, err := ParseHeaders([]string{"x-api-key: abc", "Accept:  text/plain ", "X-Multi: 1", "x-multi: 2"})
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("X-Api-Key") != "abc" || h.Get("Accept") != "text/plain" || len(h["X-Multi"]) != 2 {
		t.Errorf("ParseHeaders = %v", h)
	}
	for _, bad := range []string{"novalue", ": x", "bad name: x", "X: a\nb", "X: a\r\nEvil: 1", "X: a\rb", "X: a\x00b", "X: a\x01b", "X: \x7f", "X\r\nEvil: 1"} {
		if _, err := ParseHeaders([]string{bad}); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParseHeaders(%q) = %v, want usage error", bad, err)
		}
	}

	st, err := ParseStatuses("200, 429")
	if err != nil || len(st) != 2 || st[0] != 200 || st[1] != 429 {
		t.Errorf("ParseStatuses = %v, %v", st, err)
	}
	st, err = ParseStatuses("2xx,429")
	if err != nil || len(st) != 101 || st[0] != 200 || st[99] != 299 {
		t.Errorf("ParseStatuses(2xx) = %d codes, %v", len(st), err)
	}
	// any three-digit code is counted under its own code, so it may be expected
	if st, err := ParseStatuses("999,6xx"); err != nil || len(st) != 101 || st[0] != 999 || st[100] != 699 {
		t.Errorf("ParseStatuses(999,6xx) = %d codes, %v", len(st), err)
	}
	for _, bad := range []string{"", "ok", "1000", "99", "0xx", "-200", "+200"} {
		if _, err := ParseStatuses(bad); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParseStatuses(%q) = %v, want usage error", bad, err)
		}
	}

	for in, want := range map[string]float64{"1%": 0.01, "0.5%": 0.005, "0": 0, "0.02": 0.02, "100%": 1} {
		if got, err := ParsePercent(in); err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1%", "lots", "101%", "NaN"} {
		if _, err := ParsePercent(bad); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParsePercent(%q) = %v, want usage error", bad, err)
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
