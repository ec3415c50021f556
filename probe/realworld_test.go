package probe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"net/http/httptest"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/serve"
)

// statusOf is each check's status, by id.
func statusOf(res Result) map[string]string {
	out := map[string]string{}
	for _, c := range res.Checks {
		out[c.ID] = c.Status
	}
	return out
}

// algoTarget starts serve with one algorithm of quota 10 over 2 s.
func algoTarget(t *testing.T, p limiter.Params) string {
	t.Helper()
	tg := redistest.Standalone(t)
	h, err := serve.New(serve.Config{Store: redislimit.NewStore(tg.Client), Params: p,
		KeyPrefix: "probe-algo-" + uuid.NewString()[:8], RedisTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/hello"
}

// AlgoParams are serve's four algorithms, each a quota of 10 over 2 s.
var algoParams = []limiter.Params{
	{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")},
	{Algo: limiter.SlidingWindow, Limit: 10, Window: 2 * time.Second},
	{Algo: limiter.FixedWindow, Limit: 10, Window: 2 * time.Second},
	{Algo: limiter.GCRA, Rate: rate.MustParse("5/s"), Burst: 10},
}

// TestEveryAlgorithmPasses: serve is a correct limiter whatever its
// algorithm, so probe finds nothing wrong with any of them (issue 21:
// the windows used to fail reset, their burst "before the reset" having
// run after it).
func TestEveryAlgorithmPasses(t *testing.T) {
	for _, p := range algoParams {
		t.Run(string(p.Algo), func(t *testing.T) {
			t.Parallel()
			res := probe(t, algoTarget(t, p))
			for id, st := range statusOf(res) {
				if st == Fail || st == Warn {
					dump(t, res)
					t.Fatalf("serve --algo %s: %s is %s", p.Algo, id, st)
				}
			}
		})
	}
}

// TestAddressKeyedLimiter: express-rate-limit keyed by the client address
// (its default) gives every identity one quota. The probe sees it, runs
// the phases one after another from a full quota, and never blames the
// headers for its own consumption; the shared quota is a warning; a second
// probe right after the first waits for the reset instead of warning.
func TestAddressKeyedLimiter(t *testing.T) {
	url := limtest.Express(t, limtest.ExpressOptions{Limit: 5, Window: 2 * time.Second, StandardHeaders: "draft-8"})
	for run := range 2 {
		res := probe(t, url)
		dump(t, res)
		st := statusOf(res)
		if !res.Shared || st[CheckIsolation] != Warn || st[CheckPolicy] != Pass || st[CheckReset] == Fail || res.Verdict != Pass {
			dump(t, res)
			t.Fatalf("run %d: shared %v, %v, verdict %s", run, res.Shared, st, res.Verdict)
		}
		if run == 1 && !strings.Contains(strings.Join(res.Notes, ";"), "waited") {
			t.Errorf("the second probe did not say it waited for the shared quota: %q", res.Notes)
		}
	}
}

// TestOlderDrafts: express-rate-limit's draft-06 (standardHeaders: true)
// and draft-07 fields are read, policy and all: the headers check warns
// naming the draft, nothing fails.
func TestOlderDrafts(t *testing.T) {
	for _, draft := range []string{"true", "draft-7"} {
		t.Run(draft, func(t *testing.T) {
			url := limtest.Express(t, limtest.ExpressOptions{Limit: 5, Window: 2 * time.Second, StandardHeaders: draft, KeyHeader: "X-API-Key"})
			res := probe(t, url)
			st := statusOf(res)
			name := map[string]string{"true": "draft-06", "draft-7": "draft-07"}[draft]
			var msg string
			for _, c := range res.Checks {
				if c.ID == CheckHeaders {
					msg = c.Message
				}
			}
			if res.Verdict != Pass || st[CheckHeaders] != Warn || !strings.Contains(msg, name) || res.Policy.Quota != 5 || res.Policy.WindowMs != 2000 {
				dump(t, res)
				t.Fatalf("standardHeaders %s: verdict %s, %v, policy %+v", draft, res.Verdict, st, res.Policy)
			}
		})
	}
}

// TestRetryAfterZero: Retry-After: 0 is judged by the retry at once: a
// limiter whose 0 is a lie (the retry is refused) fails
// retry-after-honest; one that never says 0 (slowapi's memory store)
// passes.
func TestRetryAfterZero(t *testing.T) {
	liar := limtest.Fake(t, limtest.FakeSpec{Algorithm: limtest.FakeFixedWindow, Limit: 5, Window: 2 * time.Second,
		Style: limtest.FakeSlowAPI, KeyHeader: "X-API-Key", DishonestRetryAfter: true})
	if st := statusOf(probe(t, liar)); st[CheckRetryAfterHonest] != Fail || st[CheckRetryAfter] != Pass {
		t.Errorf("dishonest Retry-After: 0: %v", st)
	}
	slowapi := limtest.Fake(t, limtest.FakeSpec{Algorithm: limtest.FakeFixedWindow, Limit: 5, Window: 2 * time.Second,
		Style: limtest.FakeSlowAPI, KeyHeader: "X-API-Key"})
	if st := statusOf(probe(t, slowapi)); st[CheckRetryAfterHonest] == Fail || st[CheckRetryAfter] == Fail {
		t.Errorf("slowapi: %v", st)
	}
}

// TestNginx: Debian's nginx limit_req refuses with 503 by default: with
// the status declared (--limited-status 503) that is a warning, not a
// missing limiter; nginx sends neither Retry-After nor RateLimit, which
// stay failures.
func TestNginx(t *testing.T) {
	for _, status := range []int{0, 429} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			url := limtest.Nginx(t, limtest.NginxLimit{Rate: "5r/s", Burst: 9, NoDelay: true, Key: "$http_x_api_key", Status: status})
			res := probe(t, url, func(o *Options) { o.Limited = []int{503}; o.Quota, o.Window = 10, 2*time.Second })
			dump(t, res)
			st := statusOf(res)
			want := Pass
			if status == 0 {
				want = Warn
			}
			if st[CheckLimitedStatus] != want || st[CheckRetryAfter] != Fail || st[CheckHeaders] != Fail || st[CheckPolicy] != Pass {
				dump(t, res)
				t.Fatalf("nginx limit_req_status %d: %v", status, st)
			}
		})
	}
}
