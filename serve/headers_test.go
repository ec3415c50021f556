package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestPolicyField pins the RateLimit-Policy value for each algorithm and
// reads it back with the header package's parser.
func TestPolicyField(t *testing.T) {
	client := redistest.Embedded(t).Client // no request is sent
	tests := []struct {
		name   string
		params limiter.Params
		policy string // PolicyName; "" is the default
		want   string
		q, w   int64
	}{
		{"bucket 10 at 5/s", bucket(t, 10, "5/s"), "", `"default";q=10;w=2`, 10, 2},
		{"bucket 10 at 3/s rounds w up", bucket(t, 10, "3/s"), "", `"default";q=10;w=4`, 10, 4},
		{"bucket 100 at 30/m", bucket(t, 100, "30/m"), "", `"default";q=100;w=200`, 100, 200},
		{"bucket faster than its size", bucket(t, 1, "1000/s"), "", `"default";q=1;w=1`, 1, 1},
		{"sliding window 100 per minute", limiter.Params{Algo: limiter.SlidingWindow, Limit: 100, Window: time.Minute}, "", `"default";q=100;w=60`, 100, 60},
		{"fixed window 5 per 1.5s", limiter.Params{Algo: limiter.FixedWindow, Limit: 5, Window: 1500 * time.Millisecond}, "", `"default";q=5;w=2`, 5, 2},
		{"gcra 5/s burst 10", limiter.Params{Algo: limiter.GCRA, Rate: rate.MustParse("5/s"), Burst: 10}, "", `"default";q=10;w=2`, 10, 2},
		{"named policy", bucket(t, 10, "5/s"), "api", `"api";q=10;w=2`, 10, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMiddleware(Config{Store: redislimit.NewStore(client), Params: tt.params, PolicyName: tt.policy})
			if err != nil {
				t.Fatalf("NewMiddleware: %v", err)
			}
			if m.policyValue != tt.want {
				t.Errorf("RateLimit-Policy = %s, want %s", m.policyValue, tt.want)
			}
			ps, err := header.ParsePolicies([]string{m.policyValue})
			if err != nil {
				t.Fatalf("ParsePolicies(%s): %v", m.policyValue, err)
			}
			if len(ps) != 1 || ps[0].Quota != tt.q || ps[0].Window != tt.w {
				t.Errorf("ParsePolicies(%s) = %+v, want q=%d w=%d", m.policyValue, ps, tt.q, tt.w)
			}
		})
	}
}

// TestLimitField pins the RateLimit value of a decision: r is the remaining
// quota, t the seconds until the full quota is back, rounded up.
func TestLimitField(t *testing.T) {
	tests := []struct {
		d    limiter.Decision
		want string
	}{
		{limiter.Decision{Allowed: true, Remaining: 9, ResetMs: 200}, `"default";r=9;t=1`},
		{limiter.Decision{Allowed: true, Remaining: 10, ResetMs: 0}, `"default";r=10;t=0`},
		{limiter.Decision{Allowed: true, Remaining: 4, ResetMs: 1000}, `"default";r=4;t=1`},
		{limiter.Decision{Allowed: true, Remaining: 3, ResetMs: 1001}, `"default";r=3;t=2`},
		{limiter.Decision{Allowed: false, Remaining: 0, RetryMs: 183, ResetMs: 1983}, `"default";r=0;t=2`},
		{limiter.Decision{Allowed: false, Remaining: 0, RetryMs: 59_000, ResetMs: 59_001}, `"default";r=0;t=60`},
		{limiter.Decision{Allowed: true, Remaining: 1, ResetMs: 1}, `"default";r=1;t=1`},
	}
	for _, tt := range tests {
		got := limitField("default", tt.d)
		if got != tt.want {
			t.Errorf("limitField(%+v) = %s, want %s", tt.d, got, tt.want)
		}
		ls, err := header.ParseLimits([]string{got})
		if err != nil {
			t.Fatalf("ParseLimits(%s): %v", got, err)
		}
		if len(ls) != 1 || ls[0].Remaining != tt.d.Remaining || ls[0].Reset != ceilSeconds(tt.d.ResetMs) {
			t.Errorf("ParseLimits(%s) = %+v", got, ls)
		}
	}
}

// TestRefusal pins a refused response: status, Retry-After (whole seconds,
// rounded up, at least 1), Cache-Control and the JSON body.
func TestRefusal(t *testing.T) {
	tests := []struct {
		status     int
		code       string
		retryMs    int64
		retryAfter string
		body       string
	}{
		{http.StatusTooManyRequests, "rate_limited", 183, "1", `{"error":"rate_limited","retry_after_ms":183}` + "\n"},
		{http.StatusTooManyRequests, "rate_limited", 1, "1", `{"error":"rate_limited","retry_after_ms":1}` + "\n"},
		{http.StatusTooManyRequests, "rate_limited", 0, "1", `{"error":"rate_limited","retry_after_ms":0}` + "\n"},
		{http.StatusTooManyRequests, "rate_limited", 1000, "1", `{"error":"rate_limited","retry_after_ms":1000}` + "\n"},
		{http.StatusTooManyRequests, "rate_limited", 1001, "2", `{"error":"rate_limited","retry_after_ms":1001}` + "\n"},
		{http.StatusTooManyRequests, "rate_limited", 59_999, "60", `{"error":"rate_limited","retry_after_ms":59999}` + "\n"},
		{http.StatusServiceUnavailable, "limiter_unavailable", 1000, "1", `{"error":"limiter_unavailable","retry_after_ms":1000}` + "\n"},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		refuse(w, tt.status, tt.code, tt.retryMs)
		res := w.Result()
		if res.StatusCode != tt.status {
			t.Errorf("refuse(%d, %s, %d) status = %d", tt.status, tt.code, tt.retryMs, res.StatusCode)
		}
		if got := res.Header.Get("Retry-After"); got != tt.retryAfter {
			t.Errorf("refuse(..., %d) Retry-After = %q, want %q", tt.retryMs, got, tt.retryAfter)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("refuse Cache-Control = %q, want no-store", got)
		}
		if got := res.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("refuse Content-Type = %q, want application/json", got)
		}
		if got := w.Body.String(); got != tt.body {
			t.Errorf("refuse(..., %d) body = %q, want %q", tt.retryMs, got, tt.body)
		}
		if _, err := header.CheckRetryAfter(res.Header, time.Now()); err != nil {
			t.Errorf("CheckRetryAfter: %v", err)
		}
		if storable, why := header.Storable429(res.Header); storable {
			t.Errorf("Storable429 = true (%s)", why)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	client := redistest.Embedded(t).Client
	good := bucket(t, 10, "5/s")
	tests := []struct {
		name string
		cfg  Config
	}{
		{"bad algorithm", Config{Store: redislimit.NewStore(client), Params: limiter.Params{Algo: "leaky"}}},
		{"zero capacity", Config{Store: redislimit.NewStore(client), Params: bucket(t, 0, "5/s")}},
		{"cost above capacity", Config{Store: redislimit.NewStore(client), Params: limiter.Params{Algo: limiter.TokenBucket, Capacity: 2, Rate: good.Rate, Cost: 3}}},
		{"negative trust", Config{Store: redislimit.NewStore(client), Params: good, TrustProxy: -1}},
		{"bad fail mode", Config{Store: redislimit.NewStore(client), Params: good, Fail: "sideways"}},
		{"negative timeout", Config{Store: redislimit.NewStore(client), Params: good, RedisTimeout: -time.Millisecond}},
		{"header with space", Config{Store: redislimit.NewStore(client), Params: good, IdentityHeader: "X API Key"}},
		{"prefix with brace", Config{Store: redislimit.NewStore(client), Params: good, KeyPrefix: "rl{x}"}},
		{"negative delay", Config{Store: redislimit.NewStore(client), Params: good, Delay: -time.Second}},
		{"policy name not ascii", Config{Store: redislimit.NewStore(client), Params: good, PolicyName: "dé"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil {
				t.Fatal("New: no error")
			}
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Errorf("New: %v: exit code %d, want 2", err, code)
			}
		})
	}
	if _, err := New(Config{Params: good}); err == nil {
		t.Error("New without a client: no error")
	}
	if err := (Config{Params: good, Fail: "maybe"}).Validate(); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("Validate without a client = %v, want a usage error for --fail", err)
	}
	if m, err := NewMiddleware(Config{Store: redislimit.NewStore(client), Params: good, Fail: " Closed "}); err != nil {
		t.Errorf("NewMiddleware(Fail \" Closed \"): %v", err)
	} else if m.Config().Fail != FailClosed {
		t.Errorf("Fail \" Closed \" became %q, want closed", m.Config().Fail)
	}
	if err := (Config{Params: good}).Validate(); err != nil {
		t.Errorf("Validate(defaults) = %v", err)
	}
}

func TestParseFailMode(t *testing.T) {
	for in, want := range map[string]FailMode{"open": FailOpen, "closed": FailClosed, " Closed ": FailClosed} {
		if got, err := ParseFailMode(in); err != nil || got != want {
			t.Errorf("ParseFailMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseFailMode("close"); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("ParseFailMode(close) = %v, want a usage error", err)
	}
}
