package probe

import (
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// tutorialLimiter is a limiter written the way blog posts write one, and
// independently of serve: an in-memory token bucket per client with its
// own float arithmetic, legacy X-RateLimit-* headers (the reset as a Unix
// time), Retry-After on 429 but no Cache-Control, and the client taken
// from X-Forwarded-For when there is one (the classic mistake).
type tutorialLimiter struct {
	mu       sync.Mutex
	capacity float64
	perSec   float64
	buckets  map[string]*tutorialBucket
}

type tutorialBucket struct {
	tokens float64
	last   time.Time
}

func (l *tutorialLimiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	client := r.Header.Get("X-API-Key")
	if client == "" {
		client = r.Header.Get("X-Forwarded-For")
	}
	if client == "" {
		client, _, _ = net.SplitHostPort(r.RemoteAddr)
	}
	now := time.Now()
	l.mu.Lock()
	b := l.buckets[client]
	if b == nil {
		b = &tutorialBucket{tokens: l.capacity, last: now}
		l.buckets[client] = b
	}
	b.tokens = math.Min(l.capacity, b.tokens+now.Sub(b.last).Seconds()*l.perSec)
	b.last = now
	allowed := b.tokens >= 1
	if allowed {
		b.tokens--
	}
	remaining := math.Floor(b.tokens)
	toFull := time.Duration((l.capacity - b.tokens) / l.perSec * float64(time.Second))
	wait := math.Ceil((1 - b.tokens) / l.perSec)
	l.mu.Unlock()

	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(int(l.capacity)))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(int(remaining)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(now.Add(toFull).UnixNano())/1e9)), 10))
	if !allowed {
		h.Set("Retry-After", strconv.Itoa(int(math.Max(wait, 1))))
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
		return
	}
	_, _ = w.Write([]byte("hello\n"))
}

// TestTutorialLimiter: the report card of a limiter probe did not see
// being written, check by check.
func TestTutorialLimiter(t *testing.T) {
	ts := httptest.NewServer(&tutorialLimiter{capacity: 5, perSec: 2.5, buckets: map[string]*tutorialBucket{}})
	t.Cleanup(ts.Close)
	res := probe(t, ts.URL+"/")
	want := map[string]string{
		CheckLimitedStatus:    Pass, // 429
		CheckRetryAfter:       Pass, // whole seconds, at least 1
		CheckRetryAfterHonest: Pass, // ceil of the real wait
		CheckHeaders:          Warn, // only the legacy fields
		CheckReset:            Pass, // the epoch reset is honest within its rounding
		CheckPolicy:           Pass, // burst 5 = X-RateLimit-Limit; no window to wait for
		CheckCacheable:        Warn, // no Cache-Control: not storable, but no no-store
		CheckIsolation:        Pass, // keyed by X-API-Key
		CheckSpoofing:         Fail, // trusts X-Forwarded-For from anyone
		CheckHeadersOnSuccess: Pass, // the legacy fields on every response
	}
	for _, c := range res.Checks {
		if c.Status != want[c.ID] {
			dump(t, res)
			t.Errorf("check %s = %s (%s), want %s", c.ID, c.Status, c.Message, want[c.ID])
		}
	}
	if res.Policy.Quota != 5 || res.Policy.Source != "X-RateLimit-Limit" {
		t.Errorf("policy = %+v, want q=5 from X-RateLimit-Limit", res.Policy)
	}
}
