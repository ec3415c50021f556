package limtest_test

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// reply is what one request got.
type reply struct {
	status int
	header http.Header
	took   time.Duration
}

// get sends GET base+"/" with the given header pairs.
func get(t *testing.T, base string, kv ...string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", base, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, took: time.Since(start)}
}

// burst sends n requests one after another and returns the replies.
func burst(t *testing.T, base string, n int, kv ...string) []reply {
	t.Helper()
	out := make([]reply, n)
	for i := range out {
		out[i] = get(t, base, kv...)
	}
	return out
}

func statuses(rs []reply) []int {
	s := make([]int, len(rs))
	for i, r := range rs {
		s[i] = r.status
	}
	return s
}

// wantStatuses checks the statuses of a burst exactly.
func wantStatuses(t *testing.T, rs []reply, want ...int) {
	t.Helper()
	got := statuses(rs)
	if len(got) != len(want) {
		t.Fatalf("statuses = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("statuses = %v, want %v", got, want)
		}
	}
}

func repeat(status, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = status
	}
	return s
}

func seq(parts ...[]int) []int {
	var out []int
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// header checks one header against a regular expression.
func header(t *testing.T, r reply, name, pattern string) string {
	t.Helper()
	v := r.header.Get(name)
	if !regexp.MustCompile(`^(?:` + pattern + `)$`).MatchString(v) {
		t.Errorf("%s = %q, want /%s/ (all headers: %v)", name, v, pattern, r.header)
	}
	return v
}

func absent(t *testing.T, r reply, names ...string) {
	t.Helper()
	for _, n := range names {
		if v, ok := r.header[http.CanonicalHeaderKey(n)]; ok {
			t.Errorf("%s = %q, want no such header", n, v)
		}
	}
}

func TestNginx(t *testing.T) {
	t.Parallel()
	t.Run("nodelay default 503", func(t *testing.T) {
		t.Parallel()
		// a new key starts empty: burst+1 admitted at once (1r/m: the bucket
		// leaks 16 milli-requests a second, nothing a slow machine could add)
		u := limtest.Nginx(t, limtest.NginxLimit{Rate: "1r/m", Burst: 2, NoDelay: true})
		rs := burst(t, u, 5)
		wantStatuses(t, rs, 200, 200, 200, 503, 503)
		absent(t, rs[3], "Retry-After")
	})
	t.Run("limit_req_status 429 keyed by header", func(t *testing.T) {
		t.Parallel()
		u := limtest.Nginx(t, limtest.NginxLimit{Rate: "1r/m", Burst: 1, NoDelay: true, Key: "$http_x_client_id", Status: 429})
		wantStatuses(t, burst(t, u, 3, "X-Client-Id", "a"), 200, 200, 429)
		wantStatuses(t, burst(t, u, 3, "X-Client-Id", "b"), 200, 200, 429)
		// an empty key is not limited at all
		wantStatuses(t, burst(t, u, 4), 200, 200, 200, 200)
	})
	t.Run("delay two-stage", func(t *testing.T) {
		t.Parallel()
		// excess at once: 0, 1000, 2000, 3000 admitted (burst 3000), the
		// fifth (4000, less what leaks while the five arrive) refused;
		// delays (excess - 1000) / 1 r/s: 0, 0, 1000, 2000 ms
		u := limtest.Nginx(t, limtest.NginxLimit{Rate: "1r/s", Burst: 3, Delay: 1, Status: 429})
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			got []reply
		)
		for range 5 {
			wg.Go(func() {
				r := get(t, u)
				mu.Lock()
				got = append(got, r)
				mu.Unlock()
			})
		}
		wg.Wait()
		var ok, refused, fast int
		var slowest time.Duration
		for _, r := range got {
			switch r.status {
			case 200:
				ok++
				slowest = max(slowest, r.took)
				if r.took < 900*time.Millisecond {
					fast++
				}
			case 429:
				refused++
			}
		}
		if ok != 4 || refused != 1 {
			t.Fatalf("statuses %v: want four 200 and one 429", statuses(got))
		}
		if fast < 2 || slowest < 1800*time.Millisecond {
			t.Errorf("%d answered at once and the slowest took %s; want at least 2 at once and one delayed about 2 s", fast, slowest)
		}
	})
}

func TestHAProxy(t *testing.T) {
	t.Parallel()
	t.Run("by address", func(t *testing.T) {
		t.Parallel()
		u := limtest.HAProxy(t, limtest.HAProxyLimit{Period: 10 * time.Second, Limit: 3, RetryAfter: "10"})
		rs := burst(t, u, 5)
		wantStatuses(t, rs, 200, 200, 200, 429, 429)
		header(t, rs[3], "Retry-After", "10")
		absent(t, rs[0], "Retry-After")
	})
	t.Run("by header, 503", func(t *testing.T) {
		t.Parallel()
		u := limtest.HAProxy(t, limtest.HAProxyLimit{Period: 10 * time.Second, Limit: 2, Header: "X-Client-Id", Status: 503})
		wantStatuses(t, burst(t, u, 3, "X-Client-Id", "a"), 200, 200, 503)
		wantStatuses(t, burst(t, u, 3, "X-Client-Id", "b"), 200, 200, 503)
		// no header: not tracked, not limited
		wantStatuses(t, burst(t, u, 4), 200, 200, 200, 200)
	})
}

// sec10 matches the seconds left of a 10 s window that just started.
const sec10 = `10|[1-9]`

func TestExpress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		opts    limtest.ExpressOptions
		allowed map[string]string // header: pattern on the first answer
		refused map[string]string // header: pattern on the first refusal
		absent  []string
	}{
		{
			name: "draft-6",
			opts: limtest.ExpressOptions{Limit: 3, Window: 10 * time.Second, StandardHeaders: "true"},
			allowed: map[string]string{
				"RateLimit-Policy": "3;w=10", "RateLimit-Limit": "3", "RateLimit-Remaining": "2", "RateLimit-Reset": sec10,
			},
			refused: map[string]string{"RateLimit-Remaining": "0", "Retry-After": sec10},
			absent:  []string{"X-RateLimit-Limit", "RateLimit"},
		},
		{
			name: "draft-7 and legacy",
			opts: limtest.ExpressOptions{Limit: 3, Window: 10 * time.Second, StandardHeaders: "draft-7", LegacyHeaders: true},
			allowed: map[string]string{
				"RateLimit-Policy": "3;w=10", "RateLimit": "limit=3, remaining=2, reset=" + sec10,
				"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "2", "X-RateLimit-Reset": `\d{10}`,
			},
			refused: map[string]string{"RateLimit": "limit=3, remaining=0, reset=" + sec10, "Retry-After": sec10},
			absent:  []string{"RateLimit-Limit"},
		},
		{
			name: "draft-8",
			opts: limtest.ExpressOptions{Limit: 3, Window: 10 * time.Second, StandardHeaders: "draft-8"},
			allowed: map[string]string{
				"RateLimit-Policy": `"3-in-10sec"; q=3; w=10; pk=:[A-Za-z0-9+/=]+:`, "RateLimit": `"3-in-10sec"; r=2; t=` + sec10,
			},
			refused: map[string]string{"RateLimit": `"3-in-10sec"; r=0; t=` + sec10, "Retry-After": sec10},
			absent:  []string{"X-RateLimit-Limit"},
		},
		{
			name:    "legacy only, 503",
			opts:    limtest.ExpressOptions{Limit: 3, Window: 10 * time.Second, LegacyHeaders: true, StatusCode: 503},
			allowed: map[string]string{"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "2"},
			refused: map[string]string{"X-RateLimit-Remaining": "0", "Retry-After": sec10},
			absent:  []string{"RateLimit", "RateLimit-Policy"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			u := limtest.Express(t, c.opts)
			rs := burst(t, u, 5)
			refusal := 429
			if c.opts.StatusCode != 0 {
				refusal = c.opts.StatusCode
			}
			wantStatuses(t, rs, seq(repeat(200, 3), repeat(refusal, 2))...)
			for name, p := range c.allowed {
				header(t, rs[0], name, p)
			}
			for name, p := range c.refused {
				header(t, rs[3], name, p)
			}
			absent(t, rs[0], c.absent...)
			absent(t, rs[0], "Retry-After")
		})
	}
	t.Run("keyed by header", func(t *testing.T) {
		t.Parallel()
		u := limtest.Express(t, limtest.ExpressOptions{Limit: 2, Window: 10 * time.Second, KeyHeader: "X-Client-Id", StandardHeaders: "draft-7"})
		wantStatuses(t, burst(t, u, 3, "X-Client-Id", "a"), 200, 200, 429)
		wantStatuses(t, burst(t, u, 3, "X-Client-Id", "b"), 200, 200, 429)
	})
	for _, client := range []string{"ioredis", "redis"} {
		t.Run("rate-limit-redis with "+client, func(t *testing.T) {
			t.Parallel()
			rdb := redistest.Standalone(t)
			prefix := "limtest:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
			u := limtest.Express(t, limtest.ExpressOptions{
				Limit: 3, Window: 10 * time.Second, StandardHeaders: "draft-7",
				RedisURL: rdb.URL, RedisClient: client, Prefix: prefix,
			})
			rs := burst(t, u, 5)
			wantStatuses(t, rs, 200, 200, 200, 429, 429)
			header(t, rs[3], "RateLimit", "limit=3, remaining=0, reset="+sec10)
			keys := redistest.ScanKeys(t, rdb.Client, prefix+"*")
			if len(keys) != 1 {
				t.Errorf("keys under %s = %v, want one counter", prefix, keys)
			}
		})
	}
}

func TestFlexible(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		u := limtest.Flexible(t, limtest.FlexibleOptions{Points: 3, Duration: 10 * time.Second})
		rs := burst(t, u, 5)
		wantStatuses(t, rs, 200, 200, 200, 429, 429)
		header(t, rs[0], "X-RateLimit-Remaining", "2")
		header(t, rs[0], "X-RateLimit-Reset", `\d{10}`)
		absent(t, rs[0], "Retry-After")
		// the README's msBeforeNext / 1000: a fraction of seconds
		ra := header(t, rs[3], "Retry-After", `\d(\.\d+)?|10`)
		if !strings.Contains(ra, ".") {
			t.Logf("Retry-After %q happened to be whole", ra)
		}
		header(t, rs[3], "X-RateLimit-Limit", "3")
		header(t, rs[3], "X-RateLimit-Remaining", "0")
	})
	t.Run("redis, integer Retry-After, block", func(t *testing.T) {
		t.Parallel()
		rdb := redistest.Standalone(t)
		prefix := "limtest" + strconv.FormatInt(time.Now().UnixNano(), 36)
		u := limtest.Flexible(t, limtest.FlexibleOptions{
			Points: 3, Duration: 10 * time.Second, BlockDuration: 5 * time.Second,
			IntegerRetryAfter: true, RedisURL: rdb.URL, Prefix: prefix, KeyHeader: "X-Client-Id",
		})
		rs := burst(t, u, 5, "X-Client-Id", "a")
		wantStatuses(t, rs, 200, 200, 200, 429, 429)
		// the fourth request starts a 5 s block
		header(t, rs[3], "Retry-After", "5")
		keys := redistest.ScanKeys(t, rdb.Client, prefix+"*")
		if len(keys) != 1 {
			t.Errorf("keys under %s = %v, want one", prefix, keys)
		}
	})
}

func TestHttprate(t *testing.T) {
	t.Parallel()
	t.Run("by IP", func(t *testing.T) {
		t.Parallel()
		u := limtest.Httprate(t, limtest.HttprateOptions{Limit: 3, Window: 10 * time.Second})
		rs := burst(t, u, 5)
		wantStatuses(t, rs, 200, 200, 200, 429, 429)
		header(t, rs[0], "X-RateLimit-Limit", "3")
		header(t, rs[0], "X-RateLimit-Remaining", "2")
		header(t, rs[0], "X-RateLimit-Reset", `\d{10}`)
		absent(t, rs[0], "Retry-After")
		// Retry-After is the whole window, whatever remains of it
		header(t, rs[3], "Retry-After", "10")
		window, _ := limtest.HttprateWindowOffset(t, u)
		if window != 10*time.Second {
			t.Errorf("window = %s, want 10s", window)
		}
	})
	t.Run("by header, clock aligned", func(t *testing.T) {
		t.Parallel()
		u := limtest.Httprate(t, limtest.HttprateOptions{Limit: 2, Window: time.Minute, KeyHeader: "X-Client-Id", ClockAligned: true})
		wantStatuses(t, burst(t, u, 3, "X-Client-Id", "a"), 200, 200, 429)
		wantStatuses(t, burst(t, u, 3, "X-Client-Id", "b"), 200, 200, 429)
		if _, off := limtest.HttprateWindowOffset(t, u); off != 0 {
			t.Errorf("offset = %s, want 0 with an explicit counter", off)
		}
	})
}

// clock is a settable time source for Fake.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func TestFake(t *testing.T) {
	t.Parallel()
	base := time.Unix(1796326310, 152900000)
	t.Run("slowapi fixed window", func(t *testing.T) {
		c := &clock{t: base}
		u := limtest.Fake(t, limtest.FakeSpec{Limit: 3, Window: time.Second, Now: c.Now})
		rs := burst(t, u, 5)
		wantStatuses(t, rs, 200, 200, 200, 429, 429)
		header(t, rs[0], "X-RateLimit-Limit", "3")
		header(t, rs[0], "X-RateLimit-Remaining", "2")
		// 1 + (first hit + 1 s), a Python float
		header(t, rs[0], "X-RateLimit-Reset", `1796326312\.152\d*`)
		header(t, rs[3], "X-RateLimit-Remaining", "0")
		// int(1 + reset - now): 1 s of the window remains, so int(1.99..) = 1
		header(t, rs[3], "Retry-After", "1")
		// 0.9 s later: int(1 + 0.1) = 1, never 0 on the memory storage
		c.Set(base.Add(900 * time.Millisecond))
		header(t, get(t, u), "Retry-After", "1")
		// the window ended at first hit + 1 s: a new one starts
		c.Set(base.Add(1000 * time.Millisecond))
		header(t, get(t, u), "X-RateLimit-Remaining", "2")
	})
	t.Run("flask-limiter Retry-After 0", func(t *testing.T) {
		c := &clock{t: base}
		u := limtest.Fake(t, limtest.FakeSpec{Limit: 1, Window: time.Second, Style: limtest.FakeFlaskLimiter, Now: c.Now})
		wantStatuses(t, burst(t, u, 2), 200, 429)
		// reset_at = int(1796326311.1529 + 1) = 1796326312
		c.Set(base.Add(500 * time.Millisecond))
		r := get(t, u)
		header(t, r, "X-RateLimit-Reset", "1796326312")
		header(t, r, "Retry-After", "1")
		// 0.1 s of the window remains; reset_at - now = 0.947: int() is 0
		c.Set(base.Add(900 * time.Millisecond))
		r = get(t, u)
		if r.status != 429 {
			t.Fatalf("status = %d inside the window, want 429", r.status)
		}
		header(t, r, "Retry-After", "0")
	})
	t.Run("slowapi redis TTL rounding", func(t *testing.T) {
		c := &clock{t: base}
		u := limtest.Fake(t, limtest.FakeSpec{Limit: 1, Window: 2 * time.Second, Storage: limtest.FakeRedis, Now: c.Now})
		wantStatuses(t, burst(t, u, 2), 200, 429)
		c.Set(base.Add(1600 * time.Millisecond)) // 400 ms left: TTL rounds to 0
		r := get(t, u)
		if r.status != 429 {
			t.Fatalf("status = %d, want 429", r.status)
		}
		header(t, r, "Retry-After", "0")
	})
	t.Run("sliding window counter", func(t *testing.T) {
		// 4 s windows aligned to the clock: 1796326320 starts one
		c := &clock{t: time.Unix(1796326320, 0)}
		u := limtest.Fake(t, limtest.FakeSpec{Algorithm: limtest.FakeSlidingWindowCounter, Limit: 10, Window: 4 * time.Second, Now: c.Now})
		wantStatuses(t, burst(t, u, 11), seq(repeat(200, 10), []int{429})...)
		// 6 s in, half of the next window is left: 10 × 2/4 = 5; 5 more fit
		c.Set(time.Unix(1796326326, 0))
		rs := burst(t, u, 6)
		wantStatuses(t, rs, seq(repeat(200, 5), []int{429})...)
		header(t, rs[0], "X-RateLimit-Remaining", "4")
	})
	t.Run("moving window", func(t *testing.T) {
		c := &clock{t: base}
		u := limtest.Fake(t, limtest.FakeSpec{Algorithm: limtest.FakeMovingWindow, Limit: 2, Window: time.Second, Now: c.Now})
		get(t, u)
		c.Set(base.Add(600 * time.Millisecond))
		wantStatuses(t, burst(t, u, 2), 200, 429)
		// the first hit leaves the window at 1 s
		c.Set(base.Add(1001 * time.Millisecond))
		wantStatuses(t, burst(t, u, 2), 200, 429)
	})
	t.Run("503, dishonest Retry-After, keyed by header", func(t *testing.T) {
		u := limtest.Fake(t, limtest.FakeSpec{Limit: 1, Window: time.Minute, Status: 503, DishonestRetryAfter: true, KeyHeader: "X-Client-Id"})
		rs := burst(t, u, 2, "X-Client-Id", "a")
		wantStatuses(t, rs, 200, 503)
		header(t, rs[1], "Retry-After", "0")
		header(t, rs[0], "Retry-After", "[56][0-9]")
		wantStatuses(t, burst(t, u, 2, "X-Client-Id", "b"), 200, 503)
	})
	t.Run("keyed by peer address only", func(t *testing.T) {
		u := limtest.Fake(t, limtest.FakeSpec{Limit: 1, Window: time.Minute})
		wantStatuses(t, []reply{get(t, u, "X-Forwarded-For", "10.0.0.1"), get(t, u, "X-Forwarded-For", "10.0.0.2")}, 200, 429)
	})
}
