package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// TestRedisTrouble pauses, then stops, a dedicated redis-server (never the
// shared one) while serving: fail open answers 200 within the deadline plus
// a little and counts fail_open; fail closed answers 503 with Retry-After.
func TestRedisTrouble(t *testing.T) {
	redistest.Require(t)
	redisconn.Quiet() // go-redis would log every refused dial once the server is stopped
	sb, err := sandbox.Start(context.Background(), sandbox.Config{})
	if err != nil {
		t.Fatalf("start dedicated server: %v", err)
	}
	// Stopping the dedicated server removes its data directory, and with it
	// every key these tests wrote.
	t.Cleanup(func() { _ = sb.Stop() })
	// A client as the CLI builds it: a read timeout far above the deadline,
	// so the middleware itself must keep to the deadline.
	client := redis.NewClient(&redis.Options{Addr: sb.Addrs[0], ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = client.Close() })

	const deadline = 50 * time.Millisecond
	// slack covers the HTTP round trip on a busy 2-core machine under -race.
	const slack = 60 * time.Millisecond
	logs := &redistest.Buffer{}
	open := newHandler(t, client, Config{Params: bucket(t, 10, "5/s"), RedisTimeout: deadline, Fail: FailOpen, Log: logs})
	closed := newHandler(t, client, Config{Params: bucket(t, 10, "5/s"), RedisTimeout: deadline, Fail: FailClosed, Log: logs})
	tsOpen, tsClosed := httptest.NewServer(open), httptest.NewServer(closed)
	t.Cleanup(tsOpen.Close)
	t.Cleanup(tsClosed.Close)
	key := "trouble-" + uuid.NewString()
	for _, ts := range []*httptest.Server{tsOpen, tsClosed} {
		if r := get(t, ts.Client(), ts.URL+"/hello", "X-API-Key", key); r.status != 200 {
			t.Fatalf("before the trouble: %d %s", r.status, r.body)
		}
	}

	t.Run("one EVALSHA per request", func(t *testing.T) {
		before := commandCalls(t, client)
		const n = 7
		for range n {
			if r := get(t, tsOpen.Client(), tsOpen.URL+"/hello", "X-API-Key", key); r.status != 200 {
				t.Fatalf("request = %d", r.status)
			}
		}
		after := commandCalls(t, client)
		if d := after["evalsha"] - before["evalsha"]; d != n {
			t.Errorf("%d requests ran EVALSHA %d times, want %d", n, d, n)
		}
		// Commands the script runs inside count too (TIME, HMGET, ...); what
		// must not move are the client-side alternatives to EVALSHA.
		for _, cmd := range []string{"eval", "eval_ro", "evalsha_ro", "script|load", "script|exists", "fcall"} {
			if d := after[cmd] - before[cmd]; d != 0 {
				t.Errorf("requests also ran %s (%d calls)", cmd, d)
			}
		}
	})

	checkOpen := func(t *testing.T, what string, wantMin time.Duration) {
		t.Helper()
		before := open.Counts()
		r := get(t, tsOpen.Client(), tsOpen.URL+"/hello", "X-API-Key", key)
		t.Logf("fail open, %s: %d in %s", what, r.status, r.elapsed)
		if r.status != http.StatusOK || r.body != `{"ok":true}`+"\n" {
			t.Errorf("fail open, %s: %d %q, want 200 {\"ok\":true}", what, r.status, r.body)
		}
		if r.elapsed < wantMin || r.elapsed > deadline+slack {
			t.Errorf("fail open, %s: answered in %s, want between %s and %s", what, r.elapsed, wantMin, deadline+slack)
		}
		if r.header.Get("RateLimit") != "" || r.header.Get("RateLimit-Policy") != `"default";q=10;w=2` {
			t.Errorf("fail open, %s: RateLimit %q, RateLimit-Policy %q; want only the policy", what, r.header.Get("RateLimit"), r.header.Get("RateLimit-Policy"))
		}
		m := decisions(scrape(t, tsOpen.Client(), tsOpen.URL))
		if m.FailOpen != before.FailOpen+1 || m.Allowed != before.Allowed {
			t.Errorf("fail open, %s: /metrics %+v after %+v, want fail_open +1", what, m, before)
		}
	}
	checkClosed := func(t *testing.T, what string, wantMin time.Duration) {
		t.Helper()
		before := closed.Counts()
		r := get(t, tsClosed.Client(), tsClosed.URL+"/hello", "X-API-Key", key)
		t.Logf("fail closed, %s: %d in %s", what, r.status, r.elapsed)
		if r.status != http.StatusServiceUnavailable {
			t.Errorf("fail closed, %s: %d %q, want 503", what, r.status, r.body)
		}
		if r.elapsed < wantMin || r.elapsed > deadline+slack {
			t.Errorf("fail closed, %s: answered in %s, want between %s and %s", what, r.elapsed, wantMin, deadline+slack)
		}
		if r.header.Get("Retry-After") != "1" || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("fail closed, %s: Retry-After %q, Cache-Control %q; want 1 and no-store", what, r.header.Get("Retry-After"), r.header.Get("Cache-Control"))
		}
		var body refusal
		if err := json.Unmarshal([]byte(r.body), &body); err != nil || body != (refusal{Error: "limiter_unavailable", RetryAfterMs: 1000}) {
			t.Errorf("fail closed, %s: body %q (%v)", what, r.body, err)
		}
		m := decisions(scrape(t, tsClosed.Client(), tsClosed.URL))
		if m.FailClosed != before.FailClosed+1 || m.Allowed != before.Allowed || m.Limited != before.Limited {
			t.Errorf("fail closed, %s: /metrics %+v after %+v, want fail_closed +1", what, m, before)
		}
	}

	// CLIENT PAUSE ALL holds every command for 3 s: the server is up but
	// silent, the case a timeout exists for.
	pauser := redis.NewClient(&redis.Options{Addr: sb.Addrs[0]})
	t.Cleanup(func() { _ = pauser.Close() })
	if err := pauser.Do(context.Background(), "CLIENT", "PAUSE", "3000", "ALL").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	paused := time.Now()
	t.Run("paused", func(t *testing.T) {
		checkOpen(t, "paused", deadline)
		checkClosed(t, "paused", deadline)
		checkOpen(t, "paused, again", deadline)
		if time.Since(paused) > 2500*time.Millisecond {
			t.Fatal("the checks outlasted the pause; results are not about a paused server")
		}
	})
	if !strings.Contains(logs.String(), "limiter unavailable, failing open (serving)") ||
		!strings.Contains(logs.String(), "limiter unavailable, failing closed (503)") ||
		strings.Contains(logs.String(), key) {
		t.Errorf("trouble log = %q, want a line per policy and never the API key", logs.String())
	}

	// Stopped: connections are refused, so the answer comes before the deadline.
	if err := sb.Stop(); err != nil {
		t.Fatalf("stop dedicated server: %v", err)
	}
	t.Run("stopped", func(t *testing.T) {
		checkOpen(t, "stopped", 0)
		checkClosed(t, "stopped", 0)
	})
}

// commandCalls reads INFO commandstats: command name -> calls.
func commandCalls(t *testing.T, c *redis.Client) map[string]int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		n, _, _ := strings.Cut(rest, ",")
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q: %v", line, err)
		}
		out[name] = v
	}
	return out
}
