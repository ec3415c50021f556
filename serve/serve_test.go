package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestTwelveQuickRequests is the acceptance: one API key against a
// bucket of 10 refilling at 5/s, on a real standalone server, a real
// 3-primary cluster and the embedded server. A token comes back every
// 200 ms, so the sequence is exact when the 12 requests take less than
// that; a slower round (a loaded machine) is retried with a fresh key.
func TestTwelveQuickRequests(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			h := newHandler(t, tg.Client, Config{Params: bucket(t, 10, "5/s")})
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			c := ts.Client()
			warm := "warm-" + uuid.NewString()
			forget(t, tg.Client, h, APIKey(warm))
			if r := get(t, c, ts.URL+"/hello", "X-API-Key", warm); r.status != http.StatusOK {
				t.Fatalf("warm-up request = %d %s", r.status, r.body)
			}
			for attempt := 1; attempt <= 3; attempt++ {
				key := "acceptance-" + uuid.NewString()
				forget(t, tg.Client, h, APIKey(key))
				before := h.Counts()
				start := time.Now()
				var rs []response
				for range 12 {
					rs = append(rs, get(t, c, ts.URL+"/hello", "X-API-Key", key))
				}
				took := time.Since(start)
				if took >= 190*time.Millisecond {
					t.Logf("attempt %d: 12 requests took %s, not quick enough for an exact sequence; retrying", attempt, took)
					continue
				}
				t.Logf("12 requests in %s: %s", took, statusLine(rs))
				checkTwelve(t, rs)
				after := h.Counts()
				if got := (Counts{Allowed: after.Allowed - before.Allowed, Limited: after.Limited - before.Limited}); got != (Counts{Allowed: 10, Limited: 2}) {
					t.Errorf("counts moved by %+v, want 10 allowed and 2 limited", got)
				}
				if m := decisions(scrape(t, c, ts.URL)); m != after {
					t.Errorf("/metrics says %+v, Counts() says %+v", m, after)
				}
				return
			}
			t.Fatal("12 requests never completed within 190 ms in 3 attempts; the machine is too loaded for this test")
		})
	}
}

func statusLine(rs []response) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(r.status)
	}
	return strings.Join(s, " ")
}

func checkTwelve(t *testing.T, rs []response) {
	t.Helper()
	const policy = `"default";q=10;w=2`
	for i, r := range rs {
		if got := r.header.Get("RateLimit-Policy"); got != policy {
			t.Errorf("request %d RateLimit-Policy = %s, want %s", i+1, got, policy)
		}
		in := header.Inspect(r.status, r.header, time.Now())
		if !in.HasPolicy || in.PolicyErr != nil || !in.HasLimit || in.LimitErr != nil {
			t.Errorf("request %d: header.Inspect: policy %v (%v), limit %v (%v)", i+1, in.HasPolicy, in.PolicyErr, in.HasLimit, in.LimitErr)
		}
		if i < 10 {
			// r counts down from 9; t is the time to refill the tokens
			// spent (200 ms each), rounded up: 1 s for up to 5, 2 s beyond.
			wantT := 1
			if i >= 5 {
				wantT = 2
			}
			want := fmt.Sprintf(`"default";r=%d;t=%d`, 9-i, wantT)
			if r.status != http.StatusOK || r.body != `{"ok":true}`+"\n" {
				t.Errorf("request %d = %d %q, want 200 {\"ok\":true}", i+1, r.status, r.body)
			}
			if got := r.header.Get("RateLimit"); got != want {
				t.Errorf("request %d RateLimit = %s, want %s", i+1, got, want)
			}
			continue
		}
		if r.status != http.StatusTooManyRequests {
			t.Errorf("request %d = %d %q, want 429", i+1, r.status, r.body)
			continue
		}
		for name, want := range map[string]string{
			"Retry-After":   "1",
			"RateLimit":     `"default";r=0;t=2`,
			"Cache-Control": "no-store",
			"Content-Type":  "application/json",
		} {
			if got := r.header.Get(name); got != want {
				t.Errorf("request %d %s = %q, want %q", i+1, name, got, want)
			}
		}
		if len(in.Limits) != 1 || in.Limits[0].Remaining != 0 {
			t.Errorf("request %d: parsed RateLimit %+v, want r=0", i+1, in.Limits)
		}
		if len(in.Policies) != 1 || in.Policies[0].Quota != 10 || in.Policies[0].Window != 2 {
			t.Errorf("request %d: parsed RateLimit-Policy %+v, want q=10 w=2", i+1, in.Policies)
		}
		if in.RetryAfterErr != nil || in.Storable {
			t.Errorf("request %d: Retry-After %v, storable %v (%s)", i+1, in.RetryAfterErr, in.Storable, in.StorableWhy)
		}
		var body struct {
			Error        string `json:"error"`
			RetryAfterMs *int64 `json:"retry_after_ms"`
		}
		if err := json.Unmarshal([]byte(r.body), &body); err != nil {
			t.Fatalf("request %d body %q: %v", i+1, r.body, err)
		}
		if body.Error != "rate_limited" || body.RetryAfterMs == nil || *body.RetryAfterMs < 1 || *body.RetryAfterMs > 200 {
			t.Errorf("request %d body = %q, want rate_limited with retry_after_ms in 1..200", i+1, r.body)
		}
	}
}

// TestIdentities: API keys have their own buckets; requests without a key
// share their IP's bucket whatever connection they use; X-Forwarded-For
// changes nothing without TrustProxy.
func TestIdentities(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			// 3 requests, then one more per minute: nothing refills during the test.
			h := newHandler(t, tg.Client, Config{Params: bucket(t, 3, "1/m")})
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			alice, bob := "alice-"+uuid.NewString(), "bob-"+uuid.NewString()
			local := IP(netip.MustParseAddr("127.0.0.1"))
			forget(t, tg.Client, h, APIKey(alice), APIKey(bob), local, IP(netip.MustParseAddr("203.0.113.7")))
			c := ts.Client()
			expect := func(what string, want int, kv ...string) {
				t.Helper()
				if r := get(t, c, ts.URL+"/hello", kv...); r.status != want {
					t.Errorf("%s: status %d, want %d (RateLimit %s)", what, r.status, want, r.header.Get("RateLimit"))
				}
			}
			for i := range 3 {
				expect(fmt.Sprintf("alice #%d", i+1), 200, "X-API-Key", alice)
			}
			expect("alice #4", 429, "X-API-Key", alice)
			expect("bob #1 after alice is spent", 200, "X-API-Key", bob)

			// Without a key: the IP's bucket, shared by separate connections.
			other := &http.Client{Transport: &http.Transport{}}
			t.Cleanup(other.CloseIdleConnections)
			expect("no key #1", 200)
			if r := get(t, other, ts.URL+"/hello"); r.status != 200 || r.header.Get("RateLimit") != `"default";r=1;t=120` {
				t.Errorf("no key #2 on another connection: %d RateLimit %s, want 200 r=1", r.status, r.header.Get("RateLimit"))
			}
			expect("no key #3", 200)
			expect("no key #4", 429)
			expect("empty key counts as no key", 429, "X-API-Key", "")
			expect("spoofed X-Forwarded-For", 429, "X-Forwarded-For", "203.0.113.7")
			expect("spoofed X-Real-IP", 429, "X-Real-IP", "203.0.113.7")
			expect("alice still spent", 429, "X-API-Key", alice)

			req := httptest.NewRequest(http.MethodGet, "/hello", nil)
			req.RemoteAddr = "127.0.0.1:5555"
			req.Header.Set("X-Forwarded-For", "203.0.113.7")
			if got, want := h.KeyFor(req), local.Key(h.Config().KeyPrefix, limiter.TokenBucket); got != want {
				t.Errorf("KeyFor(spoofed) = %s, want %s", got, want)
			}
			if n, err := tg.Client.Exists(t.Context(), IP(netip.MustParseAddr("203.0.113.7")).Key(h.Config().KeyPrefix, limiter.TokenBucket)).Result(); err != nil || n != 0 {
				t.Errorf("a bucket for the spoofed address exists (%d, %v)", n, err)
			}
		})
	}
}

// TestTrustProxy: behind one proxy the rightmost X-Forwarded-For entry is
// the client; what the client put left of it is ignored.
func TestTrustProxy(t *testing.T) {
	tg := redistest.Standalone(t)
	h := newHandler(t, tg.Client, Config{Params: bucket(t, 2, "1/m"), TrustProxy: 1})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	a, b := "203.0.113.7", "198.51.100.9"
	forget(t, tg.Client, h, IP(netip.MustParseAddr(a)), IP(netip.MustParseAddr(b)), IP(netip.MustParseAddr("127.0.0.1")))
	c := ts.Client()
	steps := []struct {
		xff  string
		want int
	}{
		{a, 200}, {a, 200}, {a, 429},
		{"192.0.2.66, " + a, 429}, // the client prepends a fake origin: still a
		{b, 200},                  // another client behind the proxy
		{"", 200},                 // no header: the peer (127.0.0.1) has its own bucket
	}
	for i, s := range steps {
		var kv []string
		if s.xff != "" {
			kv = []string{"X-Forwarded-For", s.xff}
		}
		if r := get(t, c, ts.URL+"/hello", kv...); r.status != s.want {
			t.Errorf("step %d X-Forwarded-For %q: %d, want %d", i+1, s.xff, r.status, s.want)
		}
	}
}

// TestAlgorithms runs every algorithm through the server: a quota of 3,
// then a 429 whose headers parse and agree with the policy.
func TestAlgorithms(t *testing.T) {
	tg := redistest.Standalone(t)
	for _, p := range []limiter.Params{
		bucket(t, 3, "1/m"),
		{Algo: limiter.SlidingWindow, Limit: 3, Window: time.Minute},
		{Algo: limiter.FixedWindow, Limit: 3, Window: time.Minute},
		{Algo: limiter.GCRA, Rate: rate.MustParse("1/m"), Burst: 3},
	} {
		t.Run(string(p.Algo), func(t *testing.T) {
			h := newHandler(t, tg.Client, Config{Params: p})
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			key := uuid.NewString()
			forget(t, tg.Client, h, APIKey(key))
			wantPolicy := `"default";q=3;w=60`
			if p.Algo == limiter.TokenBucket || p.Algo == limiter.GCRA {
				wantPolicy = `"default";q=3;w=180`
			}
			for i := range 4 {
				r := get(t, ts.Client(), ts.URL+"/hello", "X-API-Key", key)
				want := http.StatusOK
				if i == 3 {
					want = http.StatusTooManyRequests
				}
				if r.status != want {
					t.Fatalf("request %d = %d, want %d", i+1, r.status, want)
				}
				if got := r.header.Get("RateLimit-Policy"); got != wantPolicy {
					t.Errorf("RateLimit-Policy = %s, want %s", got, wantPolicy)
				}
				wantR := max(0, 2-i)
				if ls, err := header.ParseLimits(r.header.Values("RateLimit")); err != nil || len(ls) != 1 || ls[0].Remaining != int64(wantR) {
					t.Errorf("request %d RateLimit %q = %+v, %v; want r=%d", i+1, r.header.Get("RateLimit"), ls, err, wantR)
				}
				in := header.Inspect(r.status, r.header, time.Now())
				if in.PolicyErr != nil || in.LimitErr != nil || in.RetryAfterErr != nil || (want == 429 && in.Storable) {
					t.Errorf("request %d: header.Inspect = %+v", i+1, in)
				}
			}
		})
	}
}

// TestExemptions: /metrics never spends quota and works with the quota
// spent; every other path, even an unknown one, is limited.
func TestExemptions(t *testing.T) {
	tg := redistest.Standalone(t)
	h := newHandler(t, tg.Client, Config{Params: bucket(t, 2, "1/m")})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	forget(t, tg.Client, h, IP(netip.MustParseAddr("127.0.0.1")))
	c := ts.Client()
	for range 5 {
		if r := get(t, c, ts.URL+MetricsPath); r.status != 200 || r.header.Get("RateLimit") != "" || r.header.Get("RateLimit-Policy") != "" {
			t.Fatalf("GET /metrics = %d with RateLimit %q, want 200 and no limiter headers", r.status, r.header.Get("RateLimit"))
		}
	}
	if got := h.Counts(); got != (Counts{}) {
		t.Fatalf("scraping /metrics moved the counts: %+v", got)
	}
	if r := get(t, c, ts.URL+"/nope"); r.status != http.StatusNotFound || r.header.Get("RateLimit") != `"default";r=1;t=60` {
		t.Errorf("GET /nope = %d RateLimit %q, want 404 with r=1 (unknown paths spend quota)", r.status, r.header.Get("RateLimit"))
	}
	if r := do(t, c, http.MethodPost, ts.URL+"/hello"); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /hello = %d, want 405", r.status)
	}
	for _, path := range []string{"/hello", "/nope", "/metrics/"} {
		if r := get(t, c, ts.URL+path); r.status != http.StatusTooManyRequests {
			t.Errorf("GET %s with the quota spent = %d, want 429", path, r.status)
		}
	}
	if r := do(t, c, http.MethodPost, ts.URL+MetricsPath); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics = %d, want 405 (exempt, but read-only)", r.status)
	}
	m := scrape(t, c, ts.URL)
	if got, want := decisions(m), (Counts{Allowed: 2, Limited: 3}); got != want {
		t.Errorf("/metrics decisions = %+v, want %+v", got, want)
	}
	if m["ratelimit_limiter_unavailable_total"] != 0 {
		t.Errorf("ratelimit_limiter_unavailable_total = %d, want 0", m["ratelimit_limiter_unavailable_total"])
	}
	if m[`ratelimit_policy_info{algo="token-bucket",fail="open",quota="2",window_seconds="120"}`] != 1 {
		t.Errorf("no ratelimit_policy_info sample for the bucket in %v", m)
	}
}

// TestDelay: --delay slows /hello; the limiter answers first.
func TestDelay(t *testing.T) {
	tg := redistest.Standalone(t)
	h := newHandler(t, tg.Client, Config{Params: bucket(t, 1, "1/m"), Delay: 150 * time.Millisecond})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	key := uuid.NewString()
	forget(t, tg.Client, h, APIKey(key))
	if r := get(t, ts.Client(), ts.URL+"/hello", "X-API-Key", key); r.status != 200 || r.elapsed < 150*time.Millisecond {
		t.Errorf("delayed /hello = %d in %s, want 200 after at least 150ms", r.status, r.elapsed)
	}
	if r := get(t, ts.Client(), ts.URL+"/hello", "X-API-Key", key); r.status != 429 || r.elapsed >= 150*time.Millisecond {
		t.Errorf("refused /hello = %d in %s, want 429 without the delay", r.status, r.elapsed)
	}
}
