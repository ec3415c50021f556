package limtest

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The reference targets of the behaviours real limiters add to the plain
// algorithms (issue 31): each is written here the way a product's own
// code does it (wall-clock times, per-key records, the comparisons the
// products make), independently of package limiter/model, so a test can
// hold the model against it. docs/limiters.md names the products.

// BehaviourKind is one limiting behaviour.
type BehaviourKind int

const (
	// Slowdown never refuses: the n-th request of a fixed window (from
	// the key's first request, re-anchored at the first request after it
	// ends), n > Limit, is held (n - Limit) x Step, at most MaxDelay
	// (express-slow-down on express-rate-limit's MemoryStore).
	Slowdown BehaviourKind = iota
	// BlockAfterRefusal is a fixed window of Limit per Window whose first
	// refusal rewrites the key to expire Block later: refused until then,
	// a fresh window after (rate-limiter-flexible's blockDuration, in
	// memory).
	BlockAfterRefusal
	// ElasticExpiry is a counter whose expiry every hit, refused ones
	// included, moves to now + Window; refused above Limit (limits'
	// elastic expiry on its memory storage).
	ElasticExpiry
	// TickingWindow counts in windows of Window numbered from the key's
	// first request, for ever (a per-key epoch).
	TickingWindow
	// LossyBucket is a bucket of Limit tokens refilled at Rate per
	// second, credited in whole tokens from the last admission, the
	// fraction dropped.
	LossyBucket
	// WholeSeconds is a counter on Unix seconds: a window starts at the
	// first hit's second and is reset when start + Window < now (whole
	// seconds); each hit is counted, then refused when count >= Limit.
	WholeSeconds
)

// BehaviourSpec configures Behave.
type BehaviourSpec struct {
	Kind   BehaviourKind
	Limit  int           // requests per window; the bucket's capacity
	Window time.Duration // the window (not LossyBucket)
	// Rate is LossyBucket's refill in tokens per second; 1 s / Rate
	// should be whole milliseconds.
	Rate float64
	// Block is BlockAfterRefusal's block.
	Block time.Duration
	// Step and MaxDelay are Slowdown's (MaxDelay 0: no cap).
	Step, MaxDelay time.Duration
	// KeyHeader keys clients by this request header, falling back to the
	// peer address.
	KeyHeader string
	// DateReset sends X-RateLimit-Limit, -Remaining and -Reset, the reset
	// as an HTTP-date (`Fri, 04 Dec 2026 19:24:59 GMT`), on every answer
	// of the window kinds (with DateZone "UTC": `... UTC`).
	DateReset bool
	DateZone  string
	// DateSkew moves the date sent by this much: a negative skew
	// understates the wait (a broken reset, the negative control).
	DateSkew time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Behaviour is the decision of a reference target, apart from its server:
// what the property tests compare the models with.
type Behaviour struct {
	spec BehaviourSpec
	mu   sync.Mutex
	keys map[string]*record
}

// record is one key's state; each kind reads the fields it needs.
type record struct {
	hits      int
	resetTime time.Time // Slowdown: when the window is over
	expiresAt time.Time // BlockAfterRefusal, ElasticExpiry
	created   time.Time // TickingWindow
	tick      int64
	tokens    int // LossyBucket
	last      time.Time
	startSec  int64 // WholeSeconds
}

// NewBehaviour returns the decision of spec, fresh.
func NewBehaviour(spec BehaviourSpec) *Behaviour {
	if spec.Now == nil {
		spec.Now = time.Now
	}
	return &Behaviour{spec: spec, keys: map[string]*record{}}
}

// Answer is one decision: admitted (after Delay) or refused, and when the
// key's current window or block is over (zero when there is none).
type Answer struct {
	Allowed   bool
	Delay     time.Duration
	Remaining int
	Reset     time.Time
}

// Decide decides one request of key at now.
func (b *Behaviour) Decide(key string, now time.Time) Answer {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.spec
	r := b.keys[key]
	switch s.Kind {
	case Slowdown:
		if r == nil || !r.resetTime.After(now) {
			r = &record{resetTime: now.Add(s.Window)}
			b.keys[key] = r
		}
		r.hits++
		a := Answer{Allowed: true, Remaining: max(s.Limit-r.hits, 0), Reset: r.resetTime}
		if r.hits > s.Limit {
			a.Delay = time.Duration(r.hits-s.Limit) * s.Step
			if s.MaxDelay > 0 && a.Delay > s.MaxDelay {
				a.Delay = s.MaxDelay
			}
		}
		return a
	case BlockAfterRefusal, ElasticExpiry:
		if r != nil && !r.expiresAt.After(now) {
			r = nil
		}
		if r == nil {
			r = &record{expiresAt: now.Add(s.Window)}
			b.keys[key] = r
		}
		r.hits++
		if s.Kind == ElasticExpiry {
			r.expiresAt = now.Add(s.Window)
		}
		if r.hits <= s.Limit {
			return Answer{Allowed: true, Remaining: s.Limit - r.hits, Reset: r.expiresAt}
		}
		if s.Kind == BlockAfterRefusal && r.hits == s.Limit+1 {
			r.expiresAt = now.Add(s.Block)
		}
		return Answer{Reset: r.expiresAt}
	case TickingWindow:
		if r == nil {
			r = &record{created: now}
			b.keys[key] = r
		}
		tick := int64(now.Sub(r.created) / s.Window)
		if tick != r.tick {
			r.tick, r.hits = tick, 0
		}
		reset := r.created.Add(time.Duration(tick+1) * s.Window)
		if r.hits >= s.Limit {
			return Answer{Reset: reset}
		}
		r.hits++
		return Answer{Allowed: true, Remaining: s.Limit - r.hits, Reset: reset}
	case LossyBucket:
		if r == nil {
			r = &record{tokens: s.Limit, last: now}
			b.keys[key] = r
		}
		every := time.Duration(float64(time.Second) / s.Rate)
		if earned := now.Sub(r.last) / every; earned > 0 {
			r.tokens = int(min(int64(s.Limit), int64(r.tokens)+int64(earned)))
		}
		if r.tokens < 1 {
			return Answer{Reset: r.last.Add(every)}
		}
		r.tokens--
		r.last = now
		return Answer{Allowed: true, Remaining: r.tokens}
	case WholeSeconds:
		sec := now.Unix()
		if r == nil || r.startSec+int64(s.Window/time.Second) < sec {
			r = &record{startSec: sec}
			b.keys[key] = r
		}
		r.hits++
		reset := time.Unix(r.startSec+int64(s.Window/time.Second)+1, 0)
		if r.hits >= s.Limit {
			return Answer{Reset: reset}
		}
		return Answer{Allowed: true, Remaining: s.Limit - 1 - r.hits, Reset: reset}
	}
	panic(fmt.Sprintf("limtest: unknown behaviour %d", s.Kind))
}

// Behave starts a reference target of spec on a loopback port (httptest,
// 127.0.0.1:0) and returns its base URL: 200 "ok" when admitted (after
// the delay, for Slowdown), 429 when refused.
func Behave(t testing.TB, spec BehaviourSpec) string {
	t.Helper()
	if spec.Limit <= 0 || spec.Kind != LossyBucket && spec.Window <= 0 || spec.Kind == LossyBucket && !(spec.Rate > 0) {
		t.Fatalf("limtest.Behave: a positive Limit and Window (Rate for LossyBucket) needed, got %+v", spec)
	}
	if spec.Kind == WholeSeconds && spec.Window%time.Second != 0 {
		t.Fatalf("limtest.Behave: WholeSeconds needs a Window of whole seconds, got %s", spec.Window)
	}
	b := NewBehaviour(spec)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := peerAddr(r)
		if spec.KeyHeader != "" {
			if v := r.Header.Get(spec.KeyHeader); v != "" {
				key = "hdr:" + v
			}
		}
		a := b.Decide(key, b.spec.Now())
		if spec.DateReset && !a.Reset.IsZero() {
			h := w.Header()
			h.Set("X-RateLimit-Limit", strconv.Itoa(spec.Limit))
			h.Set("X-RateLimit-Remaining", strconv.Itoa(a.Remaining))
			// the next whole second: a reset never before the real one
			at := a.Reset.UTC().Add(spec.DateSkew).Add(time.Second - 1).Truncate(time.Second)
			v := at.Format(http.TimeFormat)
			if spec.DateZone == "UTC" {
				v = at.Format("Mon, 02 Jan 2006 15:04:05") + " UTC"
			}
			h.Set("X-RateLimit-Reset", v)
			if !a.Allowed {
				h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(a.Reset.Sub(b.spec.Now()).Seconds())), 10))
			}
		}
		if !a.Allowed {
			http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
			return
		}
		if a.Delay > 0 {
			select {
			case <-time.After(a.Delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
