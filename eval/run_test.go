package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func decisions(t *testing.T, res Result) (allowed []bool, remaining, retry []int64) {
	t.Helper()
	for _, c := range res.Calls {
		if c.Allowed == nil || c.Remaining == nil {
			t.Fatalf("call %d has no decision: %+v", c.N, c)
		}
		allowed = append(allowed, *c.Allowed)
		remaining = append(remaining, *c.Remaining)
		if c.RetryMs != nil {
			retry = append(retry, *c.RetryMs)
		}
	}
	return allowed, remaining, retry
}

// TestAcceptanceTokenBucket: capacity 5, rate 1/s, 7 quick calls give 5
// allowed with remaining 4,3,2,1,0, then 2 refused with retry in (800, 1000].
func TestAcceptanceTokenBucket(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			key := redistest.Key(t, "tb")
			redistest.Cleanup(t, tg.Client, key)
			res, err := Run(context.Background(), tg.Client, Options{
				Params: limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.MustParse("1/s")},
				Key:    key, Count: 7, Server: tg.Server,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			allowed, remaining, retry := decisions(t, res)
			wantAllowed := []bool{true, true, true, true, true, false, false}
			wantRemaining := []int64{4, 3, 2, 1, 0, 0, 0}
			for i := range 7 {
				if allowed[i] != wantAllowed[i] || remaining[i] != wantRemaining[i] {
					t.Errorf("call %d: allowed %v remaining %d, want %v %d", i+1, allowed[i], remaining[i], wantAllowed[i], wantRemaining[i])
				}
			}
			for i := 5; i < 7; i++ {
				if retry[i] <= 800 || retry[i] > 1000 {
					t.Errorf("call %d retry = %d ms, want in (800, 1000]", i+1, retry[i])
				}
			}
			if res.Summary.Allowed != 5 || res.Summary.Refused != 2 || res.Summary.RetryMs == nil || *res.Summary.RetryMs != retry[6] {
				t.Errorf("summary = %+v, want 5 allowed, 2 refused, retry %d", res.Summary, retry[6])
			}
			for _, c := range res.Calls {
				if c.TTLMs <= 0 || c.TTLMs > 6000 {
					t.Errorf("call %d ttl = %d ms, want in (0, 6000]", c.N, c.TTLMs)
				}
			}
			if res.Kind != "eval" || res.Version != 2 || res.Algo != "token-bucket" || res.Key != key || res.Server == nil || *res.Server != tg.Server {
				t.Errorf("header = %q %d %q %q %+v", res.Kind, res.Version, res.Algo, res.Key, res.Server)
			}
			if res.Params.PolicyQuota != 5 || res.Params.PolicyWindowMs != 5000 {
				t.Errorf("policy = q=%d w=%dms, want q=5 w=5000ms", res.Params.PolicyQuota, res.Params.PolicyWindowMs)
			}
		})
	}
}

// TestAcceptanceSlidingWindow: limit 3, window 10s, 5 calls give 3 allowed
// then 2 refused with retry close to 10000 ms.
func TestAcceptanceSlidingWindow(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			key := redistest.Key(t, "sw")
			redistest.Cleanup(t, tg.Client, key)
			res, err := Run(context.Background(), tg.Client, Options{
				Params: limiter.Params{Algo: limiter.SlidingWindow, Limit: 3, Window: 10 * time.Second},
				Key:    key, Count: 5, Server: tg.Server,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			allowed, remaining, retry := decisions(t, res)
			want := []bool{true, true, true, false, false}
			wantRemaining := []int64{2, 1, 0, 0, 0}
			for i := range 5 {
				if allowed[i] != want[i] || remaining[i] != wantRemaining[i] {
					t.Errorf("call %d: allowed %v remaining %d, want %v %d", i+1, allowed[i], remaining[i], want[i], wantRemaining[i])
				}
			}
			for i := 3; i < 5; i++ {
				if retry[i] < 9000 || retry[i] > 10000 {
					t.Errorf("call %d retry = %d ms, want close to 10000", i+1, retry[i])
				}
			}
			// Each call sent a fresh request id; three entries were recorded.
			if n, err := tg.Client.ZCard(context.Background(), key).Result(); err != nil || n != 3 {
				t.Errorf("ZCARD %s = %d, %v; want 3", key, n, err)
			}
		})
	}
}

// TestFixedWindowAndGCRAByRun checks the other two algorithms end to end.
func TestFixedWindowAndGCRAByRun(t *testing.T) {
	tests := []struct {
		p        limiter.Params
		allowed  int
		lastLeft int64
	}{
		{limiter.Params{Algo: limiter.FixedWindow, Limit: 4, Window: 10 * time.Second}, 4, 0},
		{limiter.Params{Algo: limiter.GCRA, Rate: rate.Rate{Count: 1, Per: time.Second}, Burst: 3}, 3, 0},
	}
	for _, tg := range redistest.All(t) {
		for _, tt := range tests {
			t.Run(tg.Name+"/"+string(tt.p.Algo), func(t *testing.T) {
				key := redistest.Key(t, string(tt.p.Algo))
				redistest.Cleanup(t, tg.Client, key)
				res, err := Run(context.Background(), tg.Client, Options{Params: tt.p, Key: key, Count: 6})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if res.Summary.Allowed != tt.allowed || res.Summary.Refused != 6-tt.allowed {
					t.Errorf("summary = %+v, want %d allowed", res.Summary, tt.allowed)
				}
				if tt.p.Algo == limiter.FixedWindow {
					// The TTL is set only when the counter is new: later calls never extend it.
					for i := 1; i < len(res.Calls); i++ {
						if res.Calls[i].TTLMs > res.Calls[i-1].TTLMs || res.Calls[i].TTLMs <= 0 {
							t.Errorf("fixed window ttl went %d -> %d ms", res.Calls[i-1].TTLMs, res.Calls[i].TTLMs)
						}
					}
				}
				last := res.Calls[5]
				if *last.Remaining != tt.lastLeft || *last.RetryMs <= 0 {
					t.Errorf("last call = remaining %d retry %d, want remaining %d and a retry", *last.Remaining, *last.RetryMs, tt.lastLeft)
				}
			})
		}
	}
}

func TestRunIntervalUsesInjectedSleep(t *testing.T) {
	tg := redistest.Embedded(t)
	var slept []time.Duration
	res, err := Run(context.Background(), tg.Client, Options{
		Params:   limiter.Params{Algo: limiter.FixedWindow, Limit: 10, Window: time.Minute},
		Key:      redistest.Key(t, "fw"),
		Count:    4,
		Interval: 250 * time.Millisecond,
		Sleep: func(_ context.Context, d time.Duration) error {
			slept = append(slept, d)
			return nil
		},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Calls) != 4 || len(slept) != 3 {
		t.Fatalf("calls = %d, sleeps = %v; want 4 calls and 3 sleeps", len(res.Calls), slept)
	}
	for _, d := range slept {
		if d != 250*time.Millisecond {
			t.Errorf("slept %s, want 250ms", d)
		}
	}
}

func TestKeyFor(t *testing.T) {
	tests := []struct {
		id   string
		algo limiter.Algo
		hash bool
		want string
	}{
		{"user42", limiter.TokenBucket, false, "rl:{user42}:token-bucket"},
		{"sk_live_abc", limiter.GCRA, true, ""},
	}
	for _, tt := range tests {
		got, err := KeyFor(tt.id, tt.algo, tt.hash)
		if err != nil {
			t.Fatalf("KeyFor(%q): %v", tt.id, err)
		}
		if tt.hash {
			// The expected prefix is computed independently of KeyFor.
			tt.want = "rl:{" + sha256Prefix(tt.id) + "}:" + string(tt.algo)
			if strings.Contains(got, tt.id) {
				t.Errorf("KeyFor(%q, hash) = %q leaks the id", tt.id, got)
			}
		}
		if got != tt.want {
			t.Errorf("KeyFor(%q, %q, %v) = %q, want %q", tt.id, tt.algo, tt.hash, got, tt.want)
		}
	}
	for _, bad := range []string{"", "a}b", "{x"} {
		if _, err := KeyFor(bad, limiter.TokenBucket, false); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("KeyFor(%q) err = %v, want a usage error", bad, err)
		}
	}
}

func TestRunIdentityKey(t *testing.T) {
	tg := redistest.Embedded(t)
	res, err := Run(context.Background(), tg.Client, Options{
		Params:   limiter.Params{Algo: limiter.TokenBucket, Capacity: 2, Rate: rate.MustParse("1/s")},
		Identity: "api-key-123", HashIdentity: true,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := "rl:{" + sha256Prefix("api-key-123") + "}:token-bucket"
	if res.Key != want || !res.IdentityHashed {
		t.Errorf("key = %q hashed %v, want %q true", res.Key, res.IdentityHashed, want)
	}
	if n, _ := tg.Client.Exists(context.Background(), want).Result(); n != 1 {
		t.Errorf("key %s was not written", want)
	}
}

func TestRunBadInput(t *testing.T) {
	tg := redistest.Embedded(t)
	dir := t.TempDir()
	tb := limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.MustParse("1/s")}
	script := filepath.Join("testdata", "raw_reply.lua")
	tests := []struct {
		name string
		opts Options
	}{
		{"no key", Options{Params: tb}},
		{"key and identity", Options{Params: tb, Key: "k", Identity: "u"}},
		{"hash without identity", Options{Params: tb, Key: "k", HashIdentity: true}},
		{"negative count", Options{Params: tb, Key: "k", Count: -1}},
		{"negative interval", Options{Params: tb, Key: "k", Interval: -time.Second}},
		{"capacity 0", Options{Params: limiter.Params{Algo: limiter.TokenBucket, Rate: rate.MustParse("1/s")}, Key: "k"}},
		{"unknown algo", Options{Params: limiter.Params{Algo: "leaky"}, Key: "k"}},
		{"words without script", Options{Params: tb, Key: "k", ScriptWords: []string{"x"}}},
		{"missing comma", Options{ScriptFile: script, ScriptWords: []string{"k", "v"}}},
		{"unreadable file", Options{ScriptFile: filepath.Join(dir, "nope.lua"), ScriptWords: []string{"k", ","}}},
		{"empty file", Options{ScriptFile: writeFile(t, dir, "empty.lua", "  \n"), ScriptWords: []string{"k", ","}}},
		{"script and key", Options{ScriptFile: script, Key: "k", ScriptWords: []string{"k", ","}}},
		{"syntax error", Options{ScriptFile: writeFile(t, dir, "bad.lua", "return {"), ScriptWords: []string{","}}},
		{"function on miniredis", Options{Params: tb, Key: redistest.Key(t, "f"), Function: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), tg.Client, tt.opts)
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Fatalf("Run = %v (exit %d), want exit %d", err, code, exitcode.Usage)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") {
				t.Errorf("error %q is not one line", msg)
			}
		})
	}
}

func TestRunUnreachable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	_, err := Run(context.Background(), c, Options{Params: limiter.Params{Algo: limiter.FixedWindow, Limit: 1, Window: time.Second}, Key: "k"})
	if code := exitcode.Code(err); code != exitcode.Unreachable {
		t.Fatalf("Run = %v (exit %d), want exit %d", err, code, exitcode.Unreachable)
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
