package probe

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// quotaTarget is a fixed window of q per w seconds for each X-API-Key
// that advertises itself honestly (RateLimit-Policy, RateLimit, and
// Retry-After until the window ends).
func quotaTarget(t *testing.T, q, w int) string {
	t.Helper()
	var mu sync.Mutex
	type win struct {
		start time.Time
		n     int
	}
	keys := map[string]*win{}
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		k := r.Header.Get(DefaultIdentityHeader)
		now := time.Now()
		x := keys[k]
		if x == nil || now.Sub(x.start) >= time.Duration(w)*time.Second {
			x = &win{start: now}
			keys[k] = x
		}
		x.n++
		n := x.n
		left := int(time.Until(x.start.Add(time.Duration(w)*time.Second)).Seconds() + 0.999)
		mu.Unlock()
		rw.Header().Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=%d`, q, w))
		rw.Header().Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, max(q-n, 0), left))
		if n > q {
			rw.Header().Set("Retry-After", fmt.Sprint(left))
			rw.Header().Set("Cache-Control", "no-store")
			rw.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(rw, "ok")
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestCutChecksSkip: checks whose evidence the probe could not gather
// (a quota too large to spend, the polling cut by --max-time) are skipped
// with the reason, never failed.
func TestCutChecksSkip(t *testing.T) {
	t.Run("quota too large", func(t *testing.T) {
		t.Parallel()
		res := probe(t, quotaTarget(t, 1000000, 60))
		st := statusOf(res)
		// a bounded burst is still sent (refusals would contradict the
		// policy); none came, so the run decided nothing: undecided
		if res.Verdict != "undecided" || st[CheckLimitedStatus] != Skip || res.Requests > 200 {
			dump(t, res)
			t.Fatalf("q=1000000: verdict %s, limited-status %s, %d requests; want undecided, skipped, at most 200", res.Verdict, st[CheckLimitedStatus], res.Requests)
		}
		for _, c := range res.Checks {
			if (c.Status == Skip || c.Status == Undecided) && !strings.Contains(c.Message, "above the") {
				t.Errorf("%s skipped without the reason: %q", c.ID, c.Message)
			}
		}
	})
	t.Run("polling cut by --max-time", func(t *testing.T) {
		t.Parallel()
		res := probe(t, quotaTarget(t, 5, 60), func(o *Options) { o.MaxTime = 3 * time.Second })
		st := statusOf(res)
		if st[CheckLimitedStatus] != Pass || st[CheckRetryAfterHonest] != Skip {
			dump(t, res)
			t.Fatalf("limited-status %s, retry-after-honest %s; want pass and skipped (the polling was cut)", st[CheckLimitedStatus], st[CheckRetryAfterHonest])
		}
		for id, s := range st {
			if s == Fail {
				dump(t, res)
				t.Errorf("%s fails on an honest limiter whose phases --max-time cut", id)
			}
		}
	})
}
