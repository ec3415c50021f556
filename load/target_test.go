package load

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// limitedTarget is a real HTTP target whose limiter is an eval/model twin
// held in process, one per API key (else per client IP), answering like
// `ratelimit serve`: RateLimit-Policy and RateLimit on every response, and
// on a refusal 429 with Retry-After and Cache-Control: no-store.
type limitedTarget struct {
	*httptest.Server
	policy  header.Policy
	mu      sync.Mutex
	lims    map[string]model.Limiter
	mk      func() model.Limiter
	allowed atomic.Int64
	refused atomic.Int64
	// tamper, when set, edits the response headers (to test the checks).
	tamper func(h http.Header, allowed bool)
}

func newLimitedTarget(t *testing.T, p limiter.Params) *limitedTarget {
	t.Helper()
	l, err := limiter.NewLimiter(p)
	if err != nil {
		t.Fatalf("limiter.NewLimiter(%+v): %v", p, err)
	}
	pol := l.Policy()
	lt := &limitedTarget{
		policy: header.Policy{Name: "default", Quota: pol.Quota, Window: pol.WindowSeconds},
		lims:   map[string]model.Limiter{},
		mk:     l.Model,
	}
	lt.Server = httptest.NewServer(http.HandlerFunc(lt.serve))
	t.Cleanup(lt.Close)
	return lt
}

func (lt *limitedTarget) serve(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("X-API-Key")
	if key == "" {
		key, _, _ = net.SplitHostPort(r.RemoteAddr)
	}
	lt.mu.Lock()
	m := lt.lims[key]
	if m == nil {
		m = lt.mk()
		lt.lims[key] = m
	}
	d := m.Allow(time.Now().UnixMilli(), 1)
	lt.mu.Unlock()

	h := w.Header()
	reset := (d.ResetMs + 999) / 1000
	if err := header.Set(h, []header.Policy{lt.policy}, []header.Limit{{Name: "default", Remaining: d.Remaining, Reset: reset}}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !d.Allowed {
		h.Set("Retry-After", header.FormatRetryAfterMs(d.RetryMs))
		h.Set("Cache-Control", "no-store")
	}
	if lt.tamper != nil {
		lt.tamper(h, d.Allowed)
	}
	if !d.Allowed {
		lt.refused.Add(1)
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":"rate_limited"}`))
		return
	}
	lt.allowed.Add(1)
	_, _ = w.Write([]byte(`{"ok":true}`))
}

// plainTarget answers every request with status after delay, counting them.
type plainTarget struct {
	*httptest.Server
	hits atomic.Int64
}

func newPlainTarget(t *testing.T, status int, delay time.Duration) *plainTarget {
	t.Helper()
	pt := &plainTarget{}
	pt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pt.hits.Add(1)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("hello"))
	}))
	t.Cleanup(pt.Close)
	return pt
}
