package limtest

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// What the fake mirrors, and where it was read (docs/limiters.md has the
// whole account):
//   - strategies: alisaifee/limits limits/strategies.py (5.x):
//     FixedWindowRateLimiter.hit is incr(key, expiry) <= amount,
//     MovingWindowRateLimiter and SlidingWindowCounterRateLimiter, and each
//     get_window_stats (reset, remaining);
//   - storage: limits/storage/memory.py (MemoryStorage.incr, get,
//     get_expiry, acquire_entry, get_moving_window,
//     acquire_sliding_window_entry, _get_sliding_window_info),
//     limits/storage/base.py (TimestampedSlidingWindow.sliding_window_keys),
//     limits/storage/redis.py (RedisStorage.get_expiry: max(TTL, 0) +
//     time.time());
//   - headers: laurentS/slowapi slowapi/extension.py
//     (Limiter._inject_headers: reset_in = 1 + window_stats[0], Retry-After
//     str(int(reset_in - time.time()))) and alisaifee/flask-limiter
//     flask_limiter/_extension.py (RequestLimit.reset_at =
//     int(window[0] + 1), Limiter.__inject_headers: Retry-After
//     int(reset_at - time.time())).

// FakeAlgorithm is one of the strategies of the Python `limits` library,
// which slowapi and Flask-Limiter both run on.
type FakeAlgorithm int

const (
	// FakeFixedWindow is limits' "fixed-window" (the default of slowapi and
	// Flask-Limiter): a counter whose window starts at the key's first hit
	// and lasts Window; every hit is counted, refused ones too.
	FakeFixedWindow FakeAlgorithm = iota
	// FakeMovingWindow is limits' "moving-window": a log of admitted hits;
	// a hit is refused when Limit hits lie within the last Window.
	FakeMovingWindow
	// FakeSlidingWindowCounter is limits' "sliding-window-counter" on its
	// memory storage: windows aligned to the clock (floor(t / Window)), the
	// previous window's count weighted by the time left in the current
	// one, floor()ed; refused hits are not counted.
	FakeSlidingWindowCounter
)

// FakeStyle is whose header code the fake mirrors.
type FakeStyle int

const (
	// FakeSlowAPI mirrors slowapi's Limiter._inject_headers:
	// X-RateLimit-Reset is 1 + the reset epoch as a Python float
	// ("1796326311.1529"), Retry-After is int(1 + reset - now).
	FakeSlowAPI FakeStyle = iota
	// FakeFlaskLimiter mirrors Flask-Limiter's Limiter.__inject_headers:
	// X-RateLimit-Reset is int(reset + 1), Retry-After is
	// int(int(reset + 1) - now), which is 0 while up to a second remains.
	FakeFlaskLimiter
)

// FakeStorage is which `limits` storage the fake's reset time mirrors.
type FakeStorage int

const (
	// FakeMemory is limits' MemoryStorage ("memory://", the default): the
	// fixed window's expiry is a float epoch.
	FakeMemory FakeStorage = iota
	// FakeRedis is limits' RedisStorage for the fixed window: get_expiry is
	// max(TTL, 0) + time.time(), where Redis rounds TTL to the nearest
	// second, so slowapi's Retry-After becomes round(ms left / 1000): 0
	// while less than half a second remains.
	FakeRedis
)

// FakeSpec configures Fake.
type FakeSpec struct {
	Algorithm FakeAlgorithm
	// Limit hits per Window. The real libraries only know whole seconds
	// (limits' granularities); the fake takes any positive duration.
	Limit  int
	Window time.Duration
	Style  FakeStyle
	// Storage applies to FakeFixedWindow only.
	Storage FakeStorage
	// KeyHeader keys clients by this request header; "" keys them only by
	// the peer address (slowapi's get_remote_address, Flask-Limiter's
	// get_remote_address), ignoring every client-IP header.
	KeyHeader string
	// Status of a refusal; 0 means 429. 503 mimics a limiter refusing with
	// Service Unavailable.
	Status int
	// DishonestRetryAfter sends "Retry-After: 0" on every refusal however
	// long the client must really wait.
	DishonestRetryAfter bool
	// Now is the clock (default time.Now), for tests of the fake itself.
	Now func() time.Time
}

// Fake starts an in-process HTTP server (httptest, on 127.0.0.1:0) that
// limits like slowapi or Flask-Limiter on the `limits` library, which
// cannot be installed here (PyPI is out of reach), and returns its base
// URL. Every answer carries X-RateLimit-Limit, X-RateLimit-Remaining,
// X-RateLimit-Reset and Retry-After, allowed ones too, as both libraries
// do with headers enabled. docs/limiters.md cites the code each behaviour
// mirrors.
func Fake(t testing.TB, spec FakeSpec) string {
	t.Helper()
	if spec.Limit <= 0 || spec.Window <= 0 {
		t.Fatalf("limtest.Fake: Limit and Window must be positive, got %d and %s", spec.Limit, spec.Window)
	}
	f := &fake{spec: spec, store: newMemStore(), events: map[string][]float64{}}
	if f.spec.Now == nil {
		f.spec.Now = time.Now
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

type fake struct {
	spec   FakeSpec
	mu     sync.Mutex
	store  *memStore
	events map[string][]float64 // moving window: atimes, newest first
}

// epoch is Python's time.time(): float seconds.
func epoch(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := peerAddr(r)
	if f.spec.KeyHeader != "" {
		if v := r.Header.Get(f.spec.KeyHeader); v != "" {
			key = "hdr:" + v
		}
	}
	f.mu.Lock()
	allowed := f.hit(key, epoch(f.spec.Now()))
	statsAt := epoch(f.spec.Now())
	reset, remaining := f.windowStats(key, statsAt)
	f.mu.Unlock()

	// header names as each framework writes them on the wire: Starlette
	// (slowapi) lower-cases every name, werkzeug (Flask) keeps them
	h := w.Header()
	set := func(name, value string) { h[strings.ToLower(name)] = []string{value} }
	if f.spec.Style == FakeFlaskLimiter {
		set = func(name, value string) { h[name] = []string{value} }
	}
	set("X-RateLimit-Limit", strconv.Itoa(f.spec.Limit))
	set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	// the header code calls time.time() again, always a little later
	// than get_window_stats did (microseconds in CPython); a frozen test
	// clock gets the next float instead
	after := epoch(f.spec.Now())
	if after <= statsAt {
		after = math.Nextafter(statsAt, math.Inf(1))
	}
	switch f.spec.Style {
	case FakeFlaskLimiter:
		// RequestLimit.reset_at = int(window[0] + 1); Retry-After =
		// int(reset_at - time.time())
		resetAt := math.Trunc(reset + 1)
		set("X-RateLimit-Reset", strconv.FormatInt(int64(resetAt), 10))
		set("Retry-After", strconv.FormatInt(int64(math.Trunc(resetAt-after)), 10))
	default:
		// reset_in = 1 + window_stats[0]; str(reset_in);
		// str(int(reset_in - time.time()))
		resetIn := 1 + reset
		set("X-RateLimit-Reset", pyFloat(resetIn))
		set("Retry-After", strconv.FormatInt(int64(math.Trunc(resetIn-after)), 10))
	}
	if allowed {
		h.Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	if f.spec.DishonestRetryAfter {
		set("Retry-After", "0")
	}
	status := f.spec.Status
	if status == 0 {
		status = http.StatusTooManyRequests
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf("Rate limit exceeded: %d per %s", f.spec.Limit, f.spec.Window)})
}

// windowSeconds is the limit item's get_expiry(), in seconds.
func (f *fake) windowSeconds() float64 { return f.spec.Window.Seconds() }

// hit is RateLimiter.hit of the configured strategy.
func (f *fake) hit(key string, now float64) bool {
	w, limit := f.windowSeconds(), f.spec.Limit
	switch f.spec.Algorithm {
	case FakeMovingWindow:
		// MemoryStorage.acquire_entry: refuse when the limit-th newest entry
		// is still inside the window; else record this hit
		ev := f.events[key]
		if len(ev) >= limit && ev[limit-1] >= now-w {
			return false
		}
		f.events[key] = append([]float64{now}, ev...)
		if len(f.events[key]) > 2*limit {
			f.events[key] = f.events[key][:2*limit]
		}
		return true
	case FakeSlidingWindowCounter:
		// MemoryStorage.acquire_sliding_window_entry
		prevCount, prevTTL, curCount, _ := f.slidingWindow(key, now)
		weighted := float64(prevCount)*prevTTL/w + float64(curCount)
		if math.Floor(weighted)+1 > float64(limit) {
			return false
		}
		_, cur := slidingKeys(key, w, now)
		f.store.incr(cur, 2*w, now)
		return true
	default:
		// FixedWindowRateLimiter.hit: incr(key, expiry) <= amount
		return f.store.incr(key, w, now) <= limit
	}
}

// windowStats is RateLimiter.get_window_stats: (reset epoch, remaining).
func (f *fake) windowStats(key string, now float64) (float64, int) {
	w, limit := f.windowSeconds(), f.spec.Limit
	switch f.spec.Algorithm {
	case FakeMovingWindow:
		// get_moving_window: the oldest entry inside the window and the
		// number of entries inside it; reset = that entry + expiry
		ev := f.events[key]
		n := sort.Search(len(ev), func(i int) bool { return ev[i] <= now-w })
		start := now
		if n > 0 {
			start = ev[n-1]
		}
		return start + w, limit - n
	case FakeSlidingWindowCounter:
		prevCount, prevTTL, curCount, curTTL := f.slidingWindow(key, now)
		weighted := float64(prevCount)*prevTTL/w + float64(curCount)
		remaining := max(0, limit-int(math.Floor(weighted)))
		if prevCount == 0 && curCount == 0 {
			return now, remaining
		}
		prevReset, curReset := math.Inf(1), math.Inf(1)
		if prevCount > 0 {
			prevReset = math.Mod(prevTTL, w/float64(prevCount))
		}
		if curCount > 0 {
			curReset = math.Mod(curTTL, w)
		}
		return now + math.Min(prevReset, curReset), remaining
	default:
		remaining := max(0, limit-f.store.get(key, now))
		if f.spec.Storage == FakeRedis {
			// RedisStorage.get_expiry: max(TTL, 0) + time.time(), where
			// TTL is the PTTL rounded to the nearest second by Redis
			exp, ok := f.store.expiry(key)
			ttl := 0.0
			if ok {
				pttl := math.Floor((exp - now) * 1000)
				ttl = math.Floor((pttl + 500) / 1000)
			}
			return max(ttl, 0) + now, remaining
		}
		// MemoryStorage.get_expiry: expirations.get(key, time.time())
		if exp, ok := f.store.expiry(key); ok {
			return exp, remaining
		}
		return now, remaining
	}
}

// slidingKeys is TimestampedSlidingWindow.sliding_window_keys.
func slidingKeys(key string, w, now float64) (prev, cur string) {
	return key + "/" + strconv.FormatInt(int64((now-w)/w), 10), key + "/" + strconv.FormatInt(int64(now/w), 10)
}

// slidingWindow is MemoryStorage._get_sliding_window_info.
func (f *fake) slidingWindow(key string, now float64) (prevCount int, prevTTL float64, curCount int, curTTL float64) {
	w := f.windowSeconds()
	prevKey, curKey := slidingKeys(key, w, now)
	prevCount = f.store.get(prevKey, now)
	curCount = f.store.get(curKey, now)
	if prevCount > 0 {
		prevTTL = (1 - pyMod((now-w)/w, 1)) * w
	}
	curTTL = (1-pyMod(now/w, 1))*w + w
	return prevCount, prevTTL, curCount, curTTL
}

// pyMod is Python's float %, whose result takes the divisor's sign.
func pyMod(a, b float64) float64 {
	m := math.Mod(a, b)
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}

// pyFloat formats x as Python's str(float) does: the shortest repr that
// reads back, with ".0" on whole numbers.
func pyFloat(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// peerAddr is the connection's peer address without the port.
func peerAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// memStore is limits' MemoryStorage counters: a count and a float expiry
// per key; an expired key reads as absent.
type memStore struct {
	count map[string]int
	exp   map[string]float64
}

func newMemStore() *memStore {
	return &memStore{count: map[string]int{}, exp: map[string]float64{}}
}

// get pops an expired key and returns the count.
func (m *memStore) get(key string, now float64) int {
	if e, ok := m.exp[key]; !ok || e <= now {
		delete(m.count, key)
		delete(m.exp, key)
	}
	return m.count[key]
}

// incr adds one and starts the expiry when the count becomes 1.
func (m *memStore) incr(key string, expiry, now float64) int {
	m.get(key, now)
	m.count[key]++
	if m.count[key] == 1 {
		m.exp[key] = now + expiry
	}
	return m.count[key]
}

func (m *memStore) expiry(key string) (float64, bool) {
	e, ok := m.exp[key]
	return e, ok
}
