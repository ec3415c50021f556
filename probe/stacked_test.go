package probe

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// stackedTarget advertises two policy items, the long one first:
// "hour";q=hourQ;w=3600 and "burst";q=5;w=1 (a token bucket of 5 at
// 5/s), and enforces the hour only when enforceHour.
func stackedTarget(t *testing.T, hourQ int64, enforceHour bool) string {
	t.Helper()
	burst, err := limiter.NewLimiter(limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.MustParse("5/s"), Cost: 1})
	if err != nil {
		t.Fatal(err)
	}
	hour, err := limiter.NewLimiter(limiter.Params{Algo: limiter.FixedWindow, Limit: hourQ, Window: time.Hour, Cost: 1})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	type pair struct{ burst, hour model.Limiter }
	keys := map[string]*pair{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(DefaultIdentityHeader)
		if id == "" {
			id = r.RemoteAddr[:strings.LastIndexByte(r.RemoteAddr, ':')]
		}
		mu.Lock()
		k := keys[id]
		if k == nil {
			k = &pair{burst.Model(), hour.Model()}
			keys[id] = k
		}
		now := time.Now().UnixMilli()
		d := k.burst.Allow(now, 1)
		if d.Allowed && enforceHour {
			if h := k.hour.Allow(now, 1); !h.Allowed {
				d = h
			}
		}
		mu.Unlock()
		up := func(ms int64) int64 { return int64(math.Ceil(float64(ms) / 1000)) }
		w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"hour";q=%d;w=3600, "burst";q=5;w=1`, hourQ))
		w.Header().Set("RateLimit", fmt.Sprintf(`"burst";r=%d;t=%d`, d.Remaining, up(d.ResetMs)))
		if !d.Allowed {
			w.Header().Set("Retry-After", fmt.Sprint(up(d.RetryMs)))
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/hello"
}

// TestStackedPolicies: a limiter that advertises two items (1000 per
// hour, then 5 per second) is judged by the one a burst runs into (5 per
// second), and the hour is checked as never exceeded; a limiter that
// advertises 8 per hour and does not enforce it fails policy, naming the
// hour.
func TestStackedPolicies(t *testing.T) {
	t.Run("both enforced", func(t *testing.T) {
		t.Parallel()
		res := probe(t, stackedTarget(t, 1000, true))
		st := statusOf(res)
		if res.Policy.Quota != 5 || st[CheckPolicy] != Pass {
			dump(t, res)
			t.Fatalf("policy q=%d (%s): %s, want q=5 judged and passing", res.Policy.Quota, res.Policy.Source, st[CheckPolicy])
		}
		for id, s := range st {
			if s == Fail {
				dump(t, res)
				t.Errorf("%s fails on a correct stacked limiter", id)
			}
		}
	})
	t.Run("hour not enforced", func(t *testing.T) {
		t.Parallel()
		res := probe(t, stackedTarget(t, 8, false))
		var pol Check
		for _, c := range res.Checks {
			if c.ID == CheckPolicy {
				pol = c
			}
		}
		if pol.Status != Fail || !strings.Contains(pol.Message, `"hour"`) {
			dump(t, res)
			t.Fatalf("policy %s %q: want a failure naming the hour", pol.Status, pol.Message)
		}
	})
}
