package probe

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/serve"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// serveTarget starts the reference server (a bucket of 10 at 5/s, the
// README's example) on a real redis-server, broken with b.
func serveTarget(t *testing.T, b serve.Break) string {
	t.Helper()
	tg := redistest.Standalone(t)
	h, err := serve.New(serve.Config{
		Store:        redislimit.NewStore(tg.Client),
		Params:       limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")},
		KeyPrefix:    "probe-test-" + uuid.NewString()[:8],
		RedisTimeout: 2 * time.Second,
		Break:        b,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/hello"
}

func probe(t *testing.T, url string, mod ...func(*Options)) Result {
	t.Helper()
	o := Options{URL: url, RunID: uuid.NewString()[:8]}
	for _, m := range mod {
		m(&o)
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run(%s): %v", url, err)
	}
	return res
}

func failed(res Result) []string {
	var out []string
	for _, c := range res.Checks {
		if c.Status == Fail {
			out = append(out, c.ID)
		}
	}
	return out
}

func dump(t *testing.T, res Result) {
	t.Helper()
	t.Logf("shared %v, %d requests of %d, %.0f ms, notes %q", res.Shared, res.Requests, res.Budget, res.ElapsedMs, res.Notes)
	for _, c := range res.Checks {
		t.Logf("%-5s %-20s %s", c.Status, c.ID, c.Message)
		for _, e := range c.Evidence {
			t.Logf("      %s", e)
		}
	}
}

// TestReferencePasses: plain serve passes every check, within its budget
// and the policy's window plus 10 s.
func TestReferencePasses(t *testing.T) {
	start := time.Now()
	res := probe(t, serveTarget(t, ""))
	took := time.Since(start)
	if f := failed(res); len(f) > 0 || res.Verdict != Pass {
		dump(t, res)
		t.Fatalf("plain serve: failed %v, want none", f)
	}
	for _, c := range res.Checks {
		if c.Status != Pass {
			dump(t, res)
			t.Errorf("check %s = %s (%s), want pass on the reference server", c.ID, c.Status, c.Message)
		}
	}
	if res.Requests > res.Budget {
		t.Errorf("sent %d requests, budget %d", res.Requests, res.Budget)
	}
	if res.Policy.Quota != 10 || res.Policy.WindowMs != 2000 {
		t.Errorf("policy = %+v, want q=10 w=2s", res.Policy)
	}
	if took > 2*time.Second+10*time.Second {
		t.Errorf("probe took %s, more than the window plus 10 s", took)
	}
}

// TestBreaksFailExactlyTheirCheck: every serve --break mode fails the
// check that guards it, and no other.
func TestBreaksFailExactlyTheirCheck(t *testing.T) {
	want := map[serve.Break]string{
		serve.BreakRetryAfterZero: CheckRetryAfterHonest, // 0 is valid syntax; the retry at once is refused
		serve.BreakNoRetryAfter:   CheckRetryAfter,
		serve.BreakCacheable429:   CheckCacheable,
		serve.BreakConstantReset:  CheckReset,
		serve.BreakStatus503:      CheckLimitedStatus,
		serve.BreakTrustXFF:       CheckSpoofing,
		serve.BreakOverAdmit:      CheckPolicy,
	}
	for _, b := range serve.Breaks() {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			res := probe(t, serveTarget(t, b))
			if f := failed(res); len(f) != 1 || f[0] != want[b] {
				dump(t, res)
				t.Errorf("serve --break %s: failed %v, want exactly [%s]", b, f, want[b])
			}
			if res.Verdict != Fail {
				t.Errorf("verdict %q, want fail", res.Verdict)
			}
		})
	}
}

func TestSkipAndWarnOnly(t *testing.T) {
	url := serveTarget(t, serve.BreakCacheable429)
	res := probe(t, url, func(o *Options) { o.WarnOnly = []string{CheckCacheable}; o.Skip = []string{CheckSpoofing} })
	for _, c := range res.Checks {
		switch c.ID {
		case CheckCacheable:
			if c.Status != Warn || !strings.Contains(c.Message, "--warn-only") {
				t.Errorf("cacheable-429 = %s %q, want a warning by --warn-only", c.Status, c.Message)
			}
		case CheckSpoofing:
			if c.Status != Skip {
				t.Errorf("ip-spoofing = %s, want skip", c.Status)
			}
		}
	}
	if res.Verdict != Pass {
		t.Errorf("verdict %q, want pass with the only failure downgraded", res.Verdict)
	}
}

func TestValidate(t *testing.T) {
	for _, o := range []Options{
		{URL: "ftp://x/", RunID: "r"},
		{URL: "http:///x", RunID: "r"},
		{URL: "http://127.0.0.1:1/", RunID: "r", Skip: []string{"nope"}},
		{URL: "http://127.0.0.1:1/", RunID: "r", IdentityHeader: "bad header"},
		{URL: "http://127.0.0.1:1/", RunID: "r", Budget: -1},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", o)
		}
	}
}

func TestUnreachable(t *testing.T) {
	_, err := Run(context.Background(), Options{URL: "http://127.0.0.1:1/", RunID: "r", Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "could not be reached") {
		t.Fatalf("Run(closed port) = %v, want unreachable", err)
	}
}
