package cmd

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/serve"
)

func TestServeFlags(t *testing.T) {
	tests := []struct {
		args []string
		want func(c serve.Config) bool
		desc string
	}{
		{nil, func(c serve.Config) bool {
			return c.Params.Algo == limiter.TokenBucket && c.Params.Capacity == 10 && c.Params.Rate.String() == "5/s" &&
				c.Params.Cost == 1 && c.IdentityHeader == "X-API-Key" && c.TrustProxy == 0 && c.Fail == serve.FailOpen &&
				c.RedisTimeout == 50*time.Millisecond && c.Delay == 0 && c.KeyPrefix == "rl" &&
				c.ReadHeaderTimeout == 5*time.Second && c.ReadTimeout == 10*time.Second && c.WriteTimeout == 10*time.Second &&
				c.IdleTimeout == time.Minute && c.MaxHeaderBytes == 16<<10 && c.MaxBody == 1<<20 && c.MaxConns == 1024
		}, "defaults: bucket 10 at 5/s, X-API-Key, fail open after 50ms, server limits"},
		{[]string{"--read-header-timeout", "1s", "--read-timeout", "2s", "--write-timeout", "3s", "--idle-timeout", "4s",
			"--max-header-bytes", "4096", "--max-body", "100", "--max-conns", "8"}, func(c serve.Config) bool {
			return c.ReadHeaderTimeout == time.Second && c.ReadTimeout == 2*time.Second && c.WriteTimeout == 3*time.Second &&
				c.IdleTimeout == 4*time.Second && c.MaxHeaderBytes == 4096 && c.MaxBody == 100 && c.MaxConns == 8
		}, "server limit flags"},
		{[]string{"--read-timeout", "2s"}, func(c serve.Config) bool {
			return c.ReadTimeout == 2*time.Second && c.ReadHeaderTimeout == 2*time.Second
		}, "a short read timeout bounds the header timeout when that is not given"},
		{[]string{"--algo", "token-bucket", "--capacity", "20", "--rate", "300/m", "--cost", "2"}, func(c serve.Config) bool {
			return c.Params.Capacity == 20 && c.Params.Rate.PerSecond() == 5 && c.Params.Cost == 2
		}, "bucket flags"},
		{[]string{"--algo", "sliding-window", "--limit", "100", "--window", "10s"}, func(c serve.Config) bool {
			return c.Params.Algo == limiter.SlidingWindow && c.Params.Limit == 100 && c.Params.Window == 10*time.Second
		}, "sliding window"},
		{[]string{"--algo", "fixed", "--limit", "7", "--window", "1500ms"}, func(c serve.Config) bool {
			return c.Params.Algo == limiter.FixedWindow && c.Params.Limit == 7 && c.Params.Window == 1500*time.Millisecond
		}, "fixed window"},
		{[]string{"--algo", "gcra", "--rate", "2/s", "--burst", "4"}, func(c serve.Config) bool {
			return c.Params.Algo == limiter.GCRA && c.Params.Burst == 4 && c.Params.Rate.PerSecond() == 2
		}, "gcra"},
		{[]string{"--identity-header", "Authorization", "--trust-proxy", "2", "--fail", "closed", "--limiter-timeout", "20ms", "--delay", "500ms", "--key-prefix", "svc"}, func(c serve.Config) bool {
			return c.IdentityHeader == "Authorization" && c.TrustProxy == 2 && c.Fail == serve.FailClosed &&
				c.RedisTimeout == 20*time.Millisecond && c.Delay == 500*time.Millisecond && c.KeyPrefix == "svc"
		}, "server flags"},
		{[]string{"--limiter-timeout", "0"}, func(c serve.Config) bool {
			return c.RedisTimeout == serve.WaitForever
		}, "--limiter-timeout 0 waits for ever"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			tf := newTestFactory(t)
			var got serve.Config
			c := newServeCmd(tf.Factory, func(o *serveOptions) error {
				var err error
				got, err = o.config()
				return err
			})
			c.SetArgs(tt.args)
			c.SetOut(io.Discard)
			c.SetErr(io.Discard)
			if err := c.Execute(); err != nil {
				t.Fatalf("serve %v: %v", tt.args, err)
			}
			if !tt.want(got) {
				t.Errorf("serve %v: config %+v", tt.args, got)
			}
		})
	}
}

// TestServeUsageErrors: bad flags exit 2 with one line, before any Redis
// connection is attempted (the factory has no Redis configured).
func TestServeUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--algo", "leaky"}, "unknown algorithm"},
		{[]string{"serve", "--capacity", "0"}, "--capacity"},
		{[]string{"serve", "--rate", "fast"}, "rate"},
		{[]string{"serve", "--algo", "sliding-window", "--capacity", "5"}, "--capacity does not apply to sliding-window"},
		{[]string{"serve", "--algo", "token-bucket", "--window", "1m"}, "--window does not apply to token-bucket"},
		{[]string{"serve", "--algo", "fixed-window", "--limit", "0"}, "--limit"},
		{[]string{"serve", "--algo", "gcra", "--burst", "0"}, "--burst"},
		{[]string{"serve", "--cost", "0"}, "--cost"},
		{[]string{"serve", "--cost", "11"}, "exceeds --capacity"},
		{[]string{"serve", "--fail", "maybe"}, "--fail"},
		{[]string{"serve", "--trust-proxy", "-1"}, "--trust-proxy"},
		{[]string{"serve", "--limiter-timeout", "-1s"}, "--limiter-timeout"},
		{[]string{"serve", "--identity-header", "X API Key"}, "--identity-header"},
		{[]string{"serve", "--identity-header", ""}, "--identity-header"},
		{[]string{"serve", "--key-prefix", "a{b}"}, "--key-prefix"},
		{[]string{"serve", "--delay", "-1s"}, "--delay"},
		{[]string{"serve", "--read-timeout", "0s"}, "--read-timeout must be positive"},
		{[]string{"serve", "--read-header-timeout", "-1s"}, "--read-header-timeout must be positive"},
		{[]string{"serve", "--write-timeout", "0s"}, "--write-timeout must be positive"},
		{[]string{"serve", "--idle-timeout", "0s"}, "--idle-timeout must be positive"},
		{[]string{"serve", "--read-header-timeout", "20s"}, "--read-header-timeout 20s exceeds --read-timeout 10s"},
		{[]string{"serve", "--max-body", "0"}, "--max-body must be at least 1"},
		{[]string{"serve", "--max-header-bytes", "-5"}, "--max-header-bytes must be at least 1"},
		{[]string{"serve", "--max-conns", "0"}, "--max-conns must be at least 1"},
		{[]string{"serve", "--max-conns", "many"}, "--max-conns"},
		{[]string{"serve", "extra"}, "unknown command"},
		{[]string{"-o", "json", "serve"}, "--output"},
	} {
		tf := newTestFactory(t)
		code := tf.execute(t, tt.args...)
		errOut := tf.ErrOut.String()
		if code != exitcode.Usage {
			t.Errorf("ratelimit %v exit = %d, want 2 (stderr %q)", tt.args, code, errOut)
		}
		if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "error: ") || !strings.Contains(errOut, tt.want) {
			t.Errorf("ratelimit %v stderr = %q, want one 'error:' line with %q", tt.args, errOut, tt.want)
		}
	}
}

func TestServeAddressInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Close() })
	tf := newTestFactory(t)
	code := tf.execute(t, "serve", "--redis", "embedded", "--addr", busy.Addr().String())
	if code != exitcode.Usage {
		t.Errorf("serve on a busy address exit = %d, want 2", code)
	}
	want := "error: listen on " + busy.Addr().String() + ": address already in use"
	if !strings.Contains(tf.ErrOut.String(), want) {
		t.Errorf("stderr = %q, want %q", tf.ErrOut.String(), want)
	}
}

// TestServeRuns starts `ratelimit serve` on a free port against the real
// standalone server, sends requests, then cancels the context as Ctrl-C
// would: the request in flight finishes, the command exits 0.
func TestServeRuns(t *testing.T) {
	sb := redistest.StandaloneSandbox(t)
	tg := redistest.Standalone(t)
	tf := newTestFactory(t)
	errOut := &redistest.Buffer{}
	tf.IO.ErrOut = errOut
	prefix := "test-" + uuid.NewString()
	apiKey := "cmd-" + uuid.NewString()
	ipKey := serve.IP(netip.MustParseAddr("127.0.0.1")).Key(prefix, limiter.TokenBucket)
	redistest.Cleanup(t, tg.Client, serve.APIKey(apiKey).Key(prefix, limiter.TokenBucket), ipKey)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	codec := make(chan int, 1)
	go func() {
		codec <- run(ctx, tf.Factory, []string{"serve", "--redis", sb.URL, "--addr", "127.0.0.1:0",
			"--capacity", "2", "--rate", "1/m", "--key-prefix", prefix, "--delay", "400ms",
			// the start-up line and a graceful stop are judged here, not
			// the deadline (serve/fail_test.go judges it): under the
			// default 50 ms a loaded machine fails a decision open and the
			// counts below are off by one
			"--limiter-timeout", "10s"})
	}()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no startup line on stderr: %q", errOut.String())
		}
		if _, rest, ok := strings.Cut(errOut.String(), "serve: listening on "); ok {
			url, _, _ = strings.Cut(rest, ";")
		}
	}
	for _, want := range []string{"serve: limiter state on redis 7", "serve: listening on http://127.0.0.1:",
		`token-bucket capacity 2, rate 1/m (RateLimit-Policy "default";q=2;w=120)`, "identity X-API-Key", "fail open", "/hello delayed 400ms"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	get := func(key string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, url+"/hello", nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		return resp, err
	}
	for i, want := range []int{200, 200, 429} {
		resp, err := get(apiKey)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if resp.StatusCode != want || resp.Header.Get("RateLimit-Policy") != `"default";q=2;w=120` {
			t.Errorf("request %d = %d, RateLimit-Policy %q; want %d", i+1, resp.StatusCode, resp.Header.Get("RateLimit-Policy"), want)
		}
	}

	// A slow request in flight when the context is cancelled still completes.
	inflight := make(chan int, 1)
	go func() {
		resp, err := get("")
		if err != nil {
			inflight <- -1
			return
		}
		inflight <- resp.StatusCode
	}()
	// it is in flight once the limiter decided it (its key exists): the
	// handler holds it for --delay 400ms from then
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n, err := tg.Client.Exists(context.Background(), ipKey).Result()
		if err != nil {
			t.Fatalf("EXISTS %s: %v", ipKey, err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request sent before the shutdown never reached the limiter")
		}
	}
	cancel()
	if got := <-inflight; got != 200 {
		t.Errorf("request in flight at shutdown = %d, want 200", got)
	}
	select {
	case code := <-codec:
		if code != exitcode.OK {
			t.Errorf("serve exit after cancel = %d, want 0; stderr:\n%s", code, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after cancel")
	}
	if !strings.Contains(errOut.String(), "serve: stopped; allowed 3, limited 1, fail open 0, fail closed 0") {
		t.Errorf("no closing line with counts:\n%s", errOut.String())
	}
	if strings.Contains(errOut.String(), apiKey) {
		t.Errorf("stderr shows the API key in clear:\n%s", errOut.String())
	}
	if _, err := get(apiKey); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

// TestServeACL: `ratelimit serve` as an ACL user with serve's minimal ACL
// starts and limits exactly (12 requests on a bucket of 10: ten 200s, two
// 429s); as a user without EVAL and EVALSHA it refuses to start, exit 3,
// with one line naming the rule to add. Standalone and cluster.
func TestServeACL(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			prefix := "test-" + uuid.NewString()
			m, err := serve.NewMiddleware(serve.Config{Store: redislimit.NewStore(tg.Client), Params: limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("1/m")}, KeyPrefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			// Connecting asks for PING, INFO and CLUSTER SLOTS today.
			rules := append([]string{"+ping", "+info", "+cluster|slots"}, m.ACLRules()...)
			args := []string{"serve", "--addr", "127.0.0.1:0", "--capacity", "10", "--rate", "1/m", "--key-prefix", prefix}

			t.Run("permitted", func(t *testing.T) {
				url := redistest.ACLUser(t, tg, rules...)
				tf := newTestFactory(t)
				errOut := &redistest.Buffer{}
				tf.IO.ErrOut = errOut
				apiKey := "acl-" + uuid.NewString()
				redistest.Cleanup(t, tg.Client, serve.APIKey(apiKey).Key(prefix, limiter.TokenBucket))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				codec := make(chan int, 1)
				// what the ACL lets serve decide is judged, not how fast:
				// each decision waits for Redis (under the default 50 ms
				// deadline a loaded machine fails one open: 11 admitted)
				go func() {
					codec <- run(ctx, tf.Factory, slices.Concat([]string{"--redis", url}, args, []string{"--limiter-timeout", "0"}))
				}()
				base := waitServeURL(t, errOut, codec)
				var got []int
				for range 12 {
					req, _ := http.NewRequest(http.MethodGet, base+"/hello", nil)
					req.Header.Set("X-API-Key", apiKey)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					got = append(got, resp.StatusCode)
				}
				if want := []int{200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429, 429}; !slices.Equal(got, want) {
					t.Errorf("12 requests = %v, want %v", got, want)
				}
				cancel()
				if code := <-codec; code != exitcode.OK {
					t.Errorf("serve exit after cancel = %d, want 0; stderr:\n%s", code, errOut.String())
				}
				if !strings.Contains(errOut.String(), "serve: stopped; allowed 10, limited 2, fail open 0, fail closed 0") {
					t.Errorf("no closing line with every request decided:\n%s", errOut.String())
				}
			})
			t.Run("no eval, no evalsha", func(t *testing.T) {
				denied := slices.DeleteFunc(slices.Clone(rules), func(r string) bool { return r == "+eval" || r == "+evalsha" })
				url := redistest.ACLUser(t, tg, denied...)
				tf := newTestFactory(t)
				code := tf.execute(t, append([]string{"--redis", url}, args...)...)
				e := tf.ErrOut.String()
				if code != exitcode.Unreachable {
					t.Errorf("serve as a user without +eval/+evalsha exit = %d, want 3; stderr:\n%s", code, e)
				}
				if strings.Count(e, "\n") > 2 || !strings.Contains(e, "error: serve: start-up probe") || !strings.Contains(e, "add +eval to its rules") ||
					!strings.Contains(e, "serve's minimal ACL: +evalsha +eval ") || strings.Contains(e, "listening") {
					t.Errorf("stderr = %q, want one error line naming +eval and the minimal ACL, and no listening line", e)
				}
				if _, pass, _ := strings.Cut(strings.TrimPrefix(url, "redis://"), ":"); strings.Contains(e, strings.SplitN(pass, "@", 2)[0]) {
					t.Errorf("stderr shows the password: %q", e)
				}
			})
		})
	}
}

// waitServeURL reads the startup line of a running `ratelimit serve`.
func waitServeURL(t *testing.T, errOut *redistest.Buffer, codec <-chan int) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case code := <-codec:
			t.Fatalf("serve exited %d before listening: %s", code, errOut.String())
		default:
		}
		if _, rest, ok := strings.Cut(errOut.String(), "serve: listening on "); ok {
			url, _, _ := strings.Cut(rest, ";")
			return url
		}
	}
	t.Fatalf("no startup line on stderr: %q", errOut.String())
	return ""
}
