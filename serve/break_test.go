package serve

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestBreaks: each --break mode shows exactly its defect on a real server,
// and the same requests to the unbroken server show none of them.
func TestBreaks(t *testing.T) {
	tg := redistest.Standalone(t)
	// exhaust returns the responses to capacity+1 requests of one fresh
	// API key (the last one refused unless the break over-admits).
	exhaust := func(t *testing.T, b Break, n int, kv ...string) []response {
		t.Helper()
		h := newHandler(t, tg.Client, Config{Params: bucket(t, 3, "1/m"), Break: b})
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		key := "break-" + uuid.NewString()
		forget(t, tg.Client, h, APIKey(key))
		var rs []response
		for range n {
			rs = append(rs, get(t, ts.Client(), ts.URL+"/hello", append([]string{"X-API-Key", key}, kv...)...))
		}
		return rs
	}
	good := exhaust(t, "", 4)
	last := good[3]
	if last.status != http.StatusTooManyRequests || last.header.Get("Retry-After") == "" || last.header.Get("Retry-After") == "0" ||
		last.header.Get("Cache-Control") != "no-store" || last.header.Get("ETag") != "" {
		t.Fatalf("unbroken server: 4th request = %d %v, want 429 with Retry-After >= 1 and no-store", last.status, last.header)
	}

	t.Run("retry-after-zero", func(t *testing.T) {
		r := exhaust(t, BreakRetryAfterZero, 4)[3]
		if r.status != 429 || r.header.Get("Retry-After") != "0" {
			t.Errorf("got %d Retry-After %q, want 429 with Retry-After 0", r.status, r.header.Get("Retry-After"))
		}
	})
	t.Run("no-retry-after", func(t *testing.T) {
		r := exhaust(t, BreakNoRetryAfter, 4)[3]
		if _, ok := r.header["Retry-After"]; r.status != 429 || ok {
			t.Errorf("got %d Retry-After %q, want 429 without Retry-After", r.status, r.header.Get("Retry-After"))
		}
	})
	t.Run("cacheable-429", func(t *testing.T) {
		r := exhaust(t, BreakCacheable429, 4)[3]
		if cc := r.header.Get("Cache-Control"); r.status != 429 || !strings.Contains(cc, "max-age=60") || r.header.Get("ETag") == "" {
			t.Errorf("got %d Cache-Control %q ETag %q, want a cacheable 429", r.status, cc, r.header.Get("ETag"))
		}
	})
	t.Run("constant-reset", func(t *testing.T) {
		// a bucket of 3 refilling at 1/m is full again 60 s after its last
		// admission; with the break every response claims the policy's
		// window (180 s) however full the bucket is
		for i, r := range exhaust(t, BreakConstantReset, 4) {
			ls, err := header.ParseLimits(r.header.Values(header.NameRateLimit))
			if err != nil || len(ls) != 1 || ls[0].Reset != 180 {
				t.Errorf("response %d RateLimit %q (%v), want t=180 every time", i+1, r.header.Get(header.NameRateLimit), err)
			}
		}
		if ls, _ := header.ParseLimits(good[0].header.Values(header.NameRateLimit)); len(ls) != 1 || ls[0].Reset == 180 {
			t.Errorf("unbroken server's first RateLimit %q: want a reset shorter than the window", good[0].header.Get(header.NameRateLimit))
		}
	})
	t.Run("status-503", func(t *testing.T) {
		r := exhaust(t, BreakStatus503, 4)[3]
		if r.status != http.StatusServiceUnavailable || r.header.Get(header.NameRateLimit) == "" || r.header.Get("Retry-After") == "" {
			t.Errorf("got %d %v, want 503 with the limiter's headers", r.status, r.header)
		}
	})
	t.Run("over-admit", func(t *testing.T) {
		rs := exhaust(t, BreakOverAdmit, 7)
		for i, r := range rs[:6] {
			if r.status != 200 {
				t.Errorf("request %d = %d, want 200: the broken server admits twice the capacity of 3", i+1, r.status)
			}
		}
		if rs[6].status != 429 {
			t.Errorf("request 7 = %d, want 429", rs[6].status)
		}
		if p := rs[0].header.Get(header.NamePolicy); !strings.Contains(p, "q=3") {
			t.Errorf("RateLimit-Policy %q, want the advertised q=3", p)
		}
	})
	t.Run("trust-xff", func(t *testing.T) {
		for _, b := range []Break{"", BreakTrustXFF} {
			h := newHandler(t, tg.Client, Config{Params: bucket(t, 1, "1/m"), Break: b})
			ts := httptest.NewServer(h)
			forget(t, tg.Client, h, IP(netip.MustParseAddr("127.0.0.1")), IP(netip.MustParseAddr("192.0.2.1")), IP(netip.MustParseAddr("192.0.2.2")))
			first := get(t, ts.Client(), ts.URL+"/hello", "X-Forwarded-For", "192.0.2.1")
			second := get(t, ts.Client(), ts.URL+"/hello", "X-Forwarded-For", "192.0.2.2")
			ts.Close()
			if first.status != 200 {
				t.Fatalf("break %q: first request = %d", b, first.status)
			}
			spoofed := second.status == 200
			if spoofed != (b == BreakTrustXFF) {
				t.Errorf("break %q: a rotated X-Forwarded-For got %d (fresh quota: %v)", b, second.status, spoofed)
			}
		}
	})
}

func TestParseBreak(t *testing.T) {
	for _, b := range Breaks() {
		if got, err := ParseBreak(" " + strings.ToUpper(string(b)) + " "); err != nil || got != b {
			t.Errorf("ParseBreak(%q) = %q, %v", b, got, err)
		}
	}
	for _, s := range []string{"", "none"} {
		if got, err := ParseBreak(s); err != nil || got != "" {
			t.Errorf("ParseBreak(%q) = %q, %v; want no break", s, got, err)
		}
	}
	if _, err := ParseBreak("everything"); err == nil || !strings.Contains(err.Error(), "retry-after-zero") {
		t.Errorf("ParseBreak(everything) = %v, want an error listing the defects", err)
	}
}
