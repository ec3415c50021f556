package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestEvalFlags(t *testing.T) {
	tf := newTestFactory(t)
	var got *evalOptions
	c := newEvalCmd(tf.Factory, func(o *evalOptions) error { got = o; return nil })
	c.SetArgs([]string{"rl:{u}:tb", "--algo", "gcra", "--rate", "300/m", "--burst", "4", "--cost", "2", "-n", "3", "--interval", "150ms"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Algo != "gcra" || got.Rate.PerSecond() != 5 || got.Burst != 4 || got.Cost != 2 || got.Count != 3 ||
		got.Interval != 150*time.Millisecond || len(got.Args) != 1 || got.Args[0] != "rl:{u}:tb" {
		t.Errorf("options = %+v", got)
	}
	if !got.Changed["burst"] || got.Changed["capacity"] {
		t.Errorf("changed = %v, want burst and not capacity", got.Changed)
	}

	c = newEvalCmd(tf.Factory, func(o *evalOptions) error { got = o; return nil })
	c.SetArgs([]string{"--script", "f.lua", "k1", "k2", ",", "10", "--", "-5"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Script != "f.lua" || strings.Join(got.Args, " ") != "k1 k2 , 10 -5" {
		t.Errorf("script %q args %q, want f.lua and k1 k2 , 10 -5", got.Script, got.Args)
	}
}

func TestEvalBadInput(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "ok.lua")
	if err := os.WriteFile(script, []byte("return 1"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.lua")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"k", "--capacity", "0", "--rate", "1/s"},
		{"k", "--capacity", "-3", "--rate", "1/s"},
		{"k", "--capacity", "5", "--rate", "0"},
		{"k", "--capacity", "5", "--rate", "abc"},
		{"k", "--capacity", "5", "--rate", "5/x"},
		{"k", "--algo", "leaky"},
		{"k", "--capacity", "5"},
		{"k", "--capacity", "5", "--rate", "1/s", "--window", "10s"},
		{"k", "--algo", "sliding-window", "--limit", "3", "--window", "10s", "--burst", "2"},
		{"k", "--algo", "sliding-window", "--limit", "3", "--window", "abc"},
		{"k", "--capacity", "5", "--rate", "1/s", "--cost", "0"},
		{"k", "--capacity", "5", "--rate", "1/s", "-n", "0"},
		{"k", "--capacity", "5", "--rate", "1/s", "--arrivals", "20/s"},
		{"k", "extra", "--capacity", "5", "--rate", "1/s"},
		{"k", "--identity", "u", "--capacity", "5", "--rate", "1/s"},
		{"--capacity", "5", "--rate", "1/s"},
		{"--identity", "a}b", "--capacity", "5", "--rate", "1/s"},
		{"--simulate", "--capacity", "5", "--rate", "1/s"},
		{"--simulate", "--arrivals", "20/s", "--for", "30s", "k", "--capacity", "5", "--rate", "1/s"},
		{"--simulate", "--arrivals", "20/s", "--for", "-1s", "--capacity", "5", "--rate", "1/s"},
		{"--simulate", "--arrivals", "1e-300/s", "--for", "30s", "--capacity", "5", "--rate", "1/s"},
		{"--simulate", "--arrivals", "1/h", "--for", "1000h", "--capacity", "5", "--rate", "1/s"},
		{"--simulate", "--arrivals", "20000/s", "--for", "60s", "--capacity", "5", "--rate", "1/s"},
		{"k", "--capacity", "1", "--rate", "1e-300/s"},
		{"k", "--capacity", "1000000000", "--rate", "0.5/s"},
		{"k", "--capacity", "5", "--rate", "2000000000/s"},
		{"k", "--algo", "gcra", "--rate", "1e-300/s", "--burst", "1"},
		{"k", "--algo", "gcra", "--rate", "2000000/s", "--burst", "1"},
		{"k", "--algo", "fixed-window", "--limit", "1000000000000001", "--window", "1s"},
		{"k", "--algo", "sliding-window", "--limit", "5", "--window", "300000h"},
		{"--script", script, "k", "10"},
		{"--script", script, "k,", "10"},
		{"--script", filepath.Join(dir, "missing.lua"), "k", ",", "10"},
		{"--script", dir, "k", ","},
		{"--script", script, "k", ",", "--capacity", "5"},
		{"--script", script, "k", ",", "-n", "0"},
		{"--script", script, "k", ",", "-n", "-1"},
		{"k", "--capacity", "5", "--rate", "1/s", "-n", "-2"},
		{"--script", script, "k", ",", "--force"},
		{"--simulate", "--arrivals", "20/s", "--for", "30s", "--capacity", "5", "--rate", "1/s", "--force"},
		{"--script", "/dev/zero", "k", ","},
		{"--script", fifo, "k", ","},
		{"-o", "junit", "k", "--capacity", "5", "--rate", "1/s"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			tf := newTestFactory(t)
			tf.Factory.Redis = nil // bad input must be caught before connecting
			code := tf.execute(t, append([]string{"eval"}, args...)...)
			if code != exitcode.Usage {
				t.Fatalf("exit = %d, want %d (stderr %q)", code, exitcode.Usage, tf.ErrOut.String())
			}
			if lines := strings.Count(tf.ErrOut.String(), "\n"); lines != 1 || !strings.HasPrefix(tf.ErrOut.String(), "error: ") {
				t.Errorf("stderr = %q, want one error line", tf.ErrOut.String())
			}
		})
	}
}

// TestEvalWrongTypeKey: a key that holds other data is exit 2 with one
// line telling to pick another key.
func TestEvalWrongTypeKey(t *testing.T) {
	tg := redistest.Standalone(t)
	key := redistest.Key(t, "taken")
	redistest.Cleanup(t, tg.Client, key)
	if err := tg.Client.Set(context.Background(), key, "user data", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	tf := newTestFactory(t)
	code := tf.execute(t, "eval", "--redis", tg.URL, key, "--capacity", "5", "--rate", "1/s")
	msg := tf.ErrOut.String()
	if code != exitcode.Usage || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "holds a string") || !strings.Contains(msg, "pick another key") {
		t.Fatalf("exit = %d, stderr %q; want 2 and one line saying the key holds a string and to pick another key", code, msg)
	}
}

// TestEvalRatesWithExponents: rates whose shortest form has an exponent
// (1e+06, 1e-05) run on every target, the embedded one included.
func TestEvalRatesWithExponents(t *testing.T) {
	for _, tg := range redistest.All(t) {
		for _, args := range [][]string{
			{"--capacity", "5", "--rate", "1000000/s"},
			{"--capacity", "5", "--rate", "0.00001/s"},
			{"--algo", "gcra", "--burst", "5", "--rate", "1000000/s"},
			{"--algo", "gcra", "--burst", "5", "--rate", "0.00001/s"},
		} {
			t.Run(tg.Name+"/"+strings.Join(args, " "), func(t *testing.T) {
				url := tg.URL
				if tg.Name == "embedded" {
					url = "embedded"
				}
				key := redistest.Key(t, "rate")
				redistest.Cleanup(t, tg.Client, key)
				tf := newTestFactory(t)
				if code := tf.execute(t, append([]string{"eval", "--redis", url, key, "-n", "2", "-o", "json"}, args...)...); code != 0 {
					t.Fatalf("exit %d: %s", code, tf.ErrOut.String())
				}
				var res eval.Result
				if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil || res.Summary.Allowed != 2 {
					t.Errorf("result %+v, %v; want 2 allowed", res.Summary, err)
				}
			})
		}
	}
}

func TestEvalFunctionOnEmbeddedIsUsageError(t *testing.T) {
	tf := newTestFactory(t)
	code := tf.execute(t, "eval", "--redis", "embedded", "k", "--capacity", "5", "--rate", "1/s", "--function")
	if code != exitcode.Usage || !strings.Contains(tf.ErrOut.String(), "Redis Functions") {
		t.Fatalf("exit = %d, stderr %q; want 2 and a word on Redis Functions", code, tf.ErrOut.String())
	}
}

// TestEvalCommandOnAllTargets runs the acceptance calls through the command
// on the real standalone server, the real cluster and the embedded server.
func TestEvalCommandOnAllTargets(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			url := tg.URL
			if tg.Name == "embedded" {
				url = "embedded" // the command's own in-process server
			}
			key := redistest.Key(t, "tb")
			redistest.Cleanup(t, tg.Client, key)
			tf := newTestFactory(t)
			if code := tf.execute(t, "eval", "--redis", url, key, "--capacity", "5", "--rate", "1/s", "-n", "7", "-o", "json"); code != 0 {
				t.Fatalf("exit %d: %s", code, tf.ErrOut.String())
			}
			var res eval.Result
			if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
				t.Fatalf("decode json: %v\n%s", err, tf.Out.String())
			}
			if res.Kind != "eval" || res.Summary.Allowed != 5 || res.Summary.Refused != 2 || *res.Summary.RetryMs <= 800 || *res.Summary.RetryMs > 1000 {
				t.Errorf("result kind %q summary %+v", res.Kind, res.Summary)
			}
			if !strings.Contains(tf.Out.String(), `"retry_ms"`) || !strings.Contains(tf.Out.String(), `"latency_ms"`) {
				t.Errorf("json lacks snake_case fields:\n%s", tf.Out.String())
			}

			tf = newTestFactory(t)
			if code := tf.execute(t, "eval", "--redis", url, "--simulate", "--arrivals", "20/s", "--for", "30s", "--capacity", "10", "--rate", "5/s"); code != 0 {
				t.Fatalf("simulate exit %d: %s", code, tf.ErrOut.String())
			}
			out := tf.Out.String()
			if !strings.HasPrefix(out, "server: ") || !strings.Contains(out, "600 arrivals: 159 admitted") || !strings.Contains(out, "same decisions") {
				t.Errorf("simulate text:\n%s", out)
			}
		})
	}
}

// TestEvalNoTTLGates: a key a script leaves without a TTL fails the check
// (exit 1) in every format, --allow-no-ttl accepts it (exit 0), and a
// script that sets its TTLs passes: the negative control.
func TestEvalNoTTLGates(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			leaky := filepath.Join("..", "eval", "testdata", "leaky_counter.lua")
			for _, format := range []string{"text", "json", "markdown"} {
				key := redistest.Key(t, "leak")
				redistest.Cleanup(t, tg.Client, key, key+":total")
				tf := newTestFactory(t)
				code := tf.execute(t, "eval", "--redis", tg.URL, "-o", format, "--script", leaky, key, ",", "1", "-n", "2")
				if code != exitcode.Failed || !strings.Contains(tf.ErrOut.String(), "2 keys without a TTL") || !strings.Contains(tf.ErrOut.String(), "--allow-no-ttl") {
					t.Errorf("-o %s: leaky script exit %d, stderr %q; want exit 1 naming 2 keys and --allow-no-ttl", format, code, tf.ErrOut.String())
				}
				out := tf.Out.String()
				if format == "text" {
					for _, want := range []string{"allowed  remaining", "1 allowed, 1 refused", "FAIL: 2 keys without a TTL", key + ":total"} {
						if !strings.Contains(out, want) {
							t.Errorf("text lacks %q:\n%s", want, out)
						}
					}
				}
				if format == "markdown" && !strings.Contains(out, "**FAIL**") {
					t.Errorf("markdown does not say FAIL:\n%s", out)
				}
			}

			key := redistest.Key(t, "leak")
			redistest.Cleanup(t, tg.Client, key, key+":total")
			tf := newTestFactory(t)
			if code := tf.execute(t, "eval", "--redis", tg.URL, "--allow-no-ttl", "--script", leaky, key, ",", "1", "-n", "2"); code != exitcode.OK {
				t.Errorf("--allow-no-ttl exit %d: %s", code, tf.ErrOut.String())
			}
			if !strings.Contains(tf.Out.String(), "accepted with --allow-no-ttl") {
				t.Errorf("text does not say the keys were accepted:\n%s", tf.Out.String())
			}

			good := writeFile(t, "ttl.lua", "redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000) return {1, 0}")
			key = redistest.Key(t, "good")
			redistest.Cleanup(t, tg.Client, key)
			tf = newTestFactory(t)
			if code := tf.execute(t, "eval", "--redis", tg.URL, "--script", good, key, ",", "1", "-n", "2"); code != exitcode.OK {
				t.Errorf("a script that sets TTLs: exit %d: %s", code, tf.ErrOut.String())
			}
		})
	}
	tf := newTestFactory(t)
	if code := tf.execute(t, "eval", "--redis", "embedded", "k", "--capacity", "1", "--rate", "1/s", "--allow-no-ttl"); code != exitcode.Usage {
		t.Errorf("--allow-no-ttl without --script: exit %d, want 2", code)
	}
}

func TestScriptsCommand(t *testing.T) {
	tf := newTestFactory(t)
	if code := tf.execute(t, "scripts"); code != 0 {
		t.Fatalf("exit %d: %s", code, tf.ErrOut.String())
	}
	for _, name := range limiter.ScriptNames() {
		if !strings.Contains(tf.Out.String(), name) {
			t.Errorf("list lacks %s:\n%s", name, tf.Out.String())
		}
	}

	tf = newTestFactory(t)
	if code := tf.execute(t, "scripts", "gcra"); code != 0 {
		t.Fatalf("exit %d: %s", code, tf.ErrOut.String())
	}
	s, _ := limiter.ScriptByName("gcra")
	if tf.Out.String() != s.Source || !strings.HasPrefix(s.Source, "-- gcra.lua") {
		t.Errorf("scripts gcra printed %d bytes, want the %d-byte source", tf.Out.Len(), len(s.Source))
	}

	dir := filepath.Join(t.TempDir(), "lua")
	tf = newTestFactory(t)
	if code := tf.execute(t, "scripts", "--export", dir, "-o", "json"); code != 0 {
		t.Fatalf("exit %d: %s", code, tf.ErrOut.String())
	}
	var cat eval.Catalog
	if err := json.Unmarshal(tf.Out.Bytes(), &cat); err != nil || cat.Kind != "scripts" || len(cat.Scripts) != 4 {
		t.Fatalf("export json = %+v, %v", cat, err)
	}
	for _, s := range limiter.Scripts() {
		b, err := os.ReadFile(filepath.Join(dir, s.File))
		if err != nil || string(b) != s.Source {
			t.Errorf("exported %s: %v, same content %v", s.File, err, string(b) == s.Source)
		}
	}

	tf = newTestFactory(t)
	if code := tf.execute(t, "scripts", "leaky-bucket"); code != exitcode.Usage {
		t.Errorf("scripts leaky-bucket exit = %d, want 2", code)
	}
}

// TestEvalForeignKey: a user's session hash (and a sorted set under
// sliding-window) survives eval untouched, exit 2 with one line naming the
// key and its type; --force replaces it.
func TestEvalForeignKey(t *testing.T) {
	ctx := context.Background()
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		for _, algo := range []string{"token-bucket", "sliding-window"} {
			t.Run(tg.Name+"/"+algo, func(t *testing.T) {
				key := redistest.Key(t, "session")
				redistest.Cleanup(t, tg.Client, key)
				args := []string{"eval", "--redis", tg.URL, key, "--capacity", "5", "--rate", "1/s"}
				read := func() any { return tg.Client.HGetAll(ctx, key).Val() }
				typ := "hash"
				if algo == "sliding-window" {
					args = []string{"eval", "--redis", tg.URL, key, "--algo", algo, "--limit", "5", "--window", "10s"}
					read = func() any { return tg.Client.ZRangeWithScores(ctx, key, 0, -1).Val() }
					typ = "zset"
					if err := tg.Client.ZAdd(ctx, key, redis.Z{Score: 1, Member: "alice"}, redis.Z{Score: 2, Member: "bob"}).Err(); err != nil {
						t.Fatal(err)
					}
				} else if err := tg.Client.HSet(ctx, key, "user", "alice", "cart", "3").Err(); err != nil {
					t.Fatal(err)
				}
				before := fmt.Sprint(read())
				tf := newTestFactory(t)
				code := tf.execute(t, args...)
				msg := tf.ErrOut.String()
				if code != exitcode.Usage || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, key) || !strings.Contains(msg, "holds a "+typ) || !strings.Contains(msg, "--force") {
					t.Errorf("exit = %d, stderr %q; want 2 and one line naming the key, its type and --force", code, msg)
				}
				if after := fmt.Sprint(read()); after != before {
					t.Errorf("key after eval = %s, want it untouched: %s", after, before)
				}
				if ttl := tg.Client.PTTL(ctx, key).Val(); ttl != -1 {
					t.Errorf("PTTL after eval = %d, want -1 (no TTL set on the user's key)", ttl)
				}
				tf = newTestFactory(t)
				if code := tf.execute(t, append(args, "--force")...); code != 0 {
					t.Fatalf("--force: exit %d: %s", code, tf.ErrOut.String())
				}
				if after := fmt.Sprint(read()); after == before || tg.Client.PTTL(ctx, key).Val() <= 0 {
					t.Errorf("key after --force = %s (ttl %d), want the limiter's state with a TTL", after, tg.Client.PTTL(ctx, key).Val())
				}
			})
		}
	}
}

// TestEvalJSONNaN: -o json of a script returning RESP3 doubles NaN and Inf
// prints a document, the values as strings.
func TestEvalJSONNaN(t *testing.T) {
	tg := redistest.Standalone(t)
	script := filepath.Join(t.TempDir(), "nan.lua")
	if err := os.WriteFile(script, []byte("return {double=0/0}"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf := newTestFactory(t)
	if code := tf.execute(t, "eval", "--redis", tg.URL, "--script", script, ",", "-o", "json"); code != 0 {
		t.Fatalf("exit %d: %s", code, tf.ErrOut.String())
	}
	var res eval.Result
	if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil || len(res.Calls) != 1 || res.Calls[0].Reply != "NaN" {
		t.Errorf("json %s (%v), want one call replying \"NaN\"", tf.Out.String(), err)
	}
}

// TestEvalScriptTimeout: a user script that never returns, on a server
// this process did not start, is exit 1 with what happened and how to stop
// it; eval does not kill it (the server stays busy until the cleanup does).
func TestEvalScriptTimeout(t *testing.T) {
	ctx := context.Background()
	tg := redistest.Standalone(t)
	if err := tg.Client.ConfigSet(ctx, "busy-reply-threshold", "100").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: evalAddrOf(t, tg.URL), ReadTimeout: 2 * time.Second})
		defer c.Close()
		for range 50 {
			_ = c.ScriptKill(ctx).Err()
			if c.Ping(ctx).Err() == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = c.ConfigSet(ctx, "busy-reply-threshold", "5000").Err()
	})
	busy := filepath.Join(t.TempDir(), "busy.lua")
	if err := os.WriteFile(busy, []byte("while true do end"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf := newTestFactory(t)
	code := tf.execute(t, "eval", "--redis", tg.URL, "--redis-timeout", "500ms", "--script", busy, redistest.Key(t, "busy"), ",", "1")
	msg := tf.ErrOut.String()
	if code != exitcode.Failed || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "still running") || !strings.Contains(msg, "SCRIPT KILL") {
		t.Errorf("exit = %d, stderr %q; want 1 and one line saying the script is still running and how to stop it", code, msg)
	}
	c := redis.NewClient(&redis.Options{Addr: evalAddrOf(t, tg.URL), MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY") {
		t.Errorf("PING after the run = %v, want BUSY: a server eval did not start is left alone", err)
	}
}

// TestEvalMinimalACL: eval runs for an ACL user with only the rules the
// README lists (plus what connecting needs today: +ping +info).
func TestEvalMinimalACL(t *testing.T) {
	tg := redistest.Standalone(t)
	connect := []string{"+ping", "+info", "~test:*"}
	for _, algo := range limiter.Scripted() {
		t.Run(string(algo), func(t *testing.T) {
			l, err := limiter.NewLimiter(limiter.Params{Algo: algo, Capacity: 5, Rate: rate.MustParse("1/s"), Limit: 5, Window: 10 * time.Second, Burst: 5})
			if err != nil {
				t.Fatal(err)
			}
			url := redistest.ACLUser(t, tg, append(connect, strings.Fields(l.ACL())...)...)
			key := redistest.Key(t, "acl")
			redistest.Cleanup(t, tg.Client, key)
			args := []string{"eval", "--redis", url, key, "--algo", string(algo), "-n", "2"}
			for _, f := range algo.Flags() {
				args = append(args, "--"+f, map[string]string{"capacity": "5", "rate": "1/s", "limit": "5", "window": "10s", "burst": "5"}[f])
			}
			tf := newTestFactory(t)
			if code := tf.execute(t, args...); code != 0 {
				t.Fatalf("exit %d: %s", code, tf.ErrOut.String())
			}
			url = redistest.ACLUser(t, tg, append(connect, "+evalsha")...)
			tf = newTestFactory(t)
			code := tf.execute(t, append(args[:2:2], append([]string{url}, args[3:]...)...)...)
			if msg := tf.ErrOut.String(); code != exitcode.Unreachable || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "ACL") {
				t.Errorf("with only +evalsha: exit %d, stderr %q; want 3 and one line naming the ACL rules", code, msg)
			}
		})
	}
}

func evalAddrOf(t *testing.T, url string) string {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return o.Addr
}

// TestEvalDashWarns: words after -- go to the script, flags included;
// one that spells eval's own flag gets one warning line on stderr, and a
// negative number (an argument) gets none.
func TestEvalDashWarns(t *testing.T) {
	tg := redistest.Standalone(t)
	script := writeFile(t, "echo.lua", "redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000) return ARGV")
	key := redistest.Key(t, "dash")
	redistest.Cleanup(t, tg.Client, key)
	for _, tt := range []struct {
		name string
		args []string
		warn string // "" for no warning
		argv string
	}{
		{"flags after --", []string{"--", key, ",", "-5", "-n", "1", "--interval=1s"}, `"-n" "--interval=1s" after -- go to the script as ARGV`, `["-5","-n","1","--interval=1s"]`},
		{"one shorthand", []string{"--", key, ",", "-n3"}, `"-n3" after -- goes to the script as ARGV`, `["-n3"]`},
		{"global flag", []string{"--", key, ",", "--redis"}, `"--redis" after -- goes`, `["--redis"]`},
		{"numbers only", []string{"--", key, ",", "-5", "-1.5"}, "", `["-5","-1.5"]`},
		{"before --", []string{"-n", "1", "--", key, ",", "-5"}, "", `["-5"]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tf := newTestFactory(t)
			args := append([]string{"eval", "--redis", tg.URL, "-o", "json", "--script", script}, tt.args...)
			if code := tf.execute(t, args...); code != exitcode.OK {
				t.Fatalf("exit %d: %s", code, tf.ErrOut)
			}
			stderr := tf.ErrOut.String()
			if tt.warn == "" && strings.Contains(stderr, "warning") {
				t.Errorf("unexpected warning: %q", stderr)
			}
			if tt.warn != "" && (!strings.Contains(stderr, tt.warn) || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "before --")) {
				t.Errorf("stderr = %q, want one warning line with %q", stderr, tt.warn)
			}
			var doc eval.Result
			if err := json.Unmarshal(tf.Out.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(doc.Calls[0].Reply); string(got) != tt.argv {
				t.Errorf("ARGV sent %s, want %s", got, tt.argv)
			}
		})
	}
	tf := newTestFactory(t)
	if code := tf.execute(t, "eval", "--help"); code != exitcode.OK || !strings.Contains(tf.Out.String(), "every word after -- goes to the script, flags included") {
		t.Errorf("eval --help does not document --: exit %d", code)
	}
}

// TestEvalRuntimeErrorShowsLine: a Lua error at run time is the script
// failing: exit 1, the message names the script's line, and it does not
// point to --help (that hint is for usage errors).
func TestEvalRuntimeErrorShowsLine(t *testing.T) {
	script := writeFile(t, "boom.lua", "local a = 1\nlocal b = 2\nlocal c = nil + a\nreturn c\n")
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			key := redistest.Key(t, "boom")
			tf := newTestFactory(t)
			code := tf.execute(t, "eval", "--redis", tg.URL, "--script", script, key, ",")
			msg := tf.ErrOut.String()
			if code != exitcode.Failed || !strings.Contains(msg, "user_script:3") || strings.Contains(msg, "--help") || strings.Count(msg, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 1, one line naming user_script:3, no --help", code, msg)
			}
		})
	}
}

// TestEvalWordsAndUnits: singular and plural nouns, windows read "per
// minute", latency in auto-scaled units, and the checks and verdict in
// text and JUnit of the same run.
func TestEvalWordsAndUnits(t *testing.T) {
	tg := redistest.Standalone(t)
	key := redistest.Key(t, "words")
	redistest.Cleanup(t, tg.Client, key)
	tf := newTestFactory(t)
	if code := tf.execute(t, "eval", "--redis", tg.URL, key, "--algo", "fixed-window", "--limit", "3", "--window", "1m"); code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, tf.ErrOut)
	}
	out := tf.Out.String()
	for _, want := range []string{"limit 3 per minute", "verdict: PASS"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if !hasFields(out, "ttl", "PASS") {
		t.Errorf("text lacks a line ttl PASS:\n%s", out)
	}
	if strings.Contains(out, "1m0s") || !strings.ContainsAny(out, "µs") {
		t.Errorf("text has 1m0s or no auto-scaled latency:\n%s", out)
	}

	leaky := filepath.Join("..", "eval", "testdata", "leaky_counter.lua")
	k2 := redistest.Key(t, "words")
	redistest.Cleanup(t, tg.Client, k2, k2+":total")
	tf = newTestFactory(t)
	if code := tf.execute(t, "eval", "--redis", tg.URL, "--script", leaky, k2, ",", "1"); code != exitcode.Failed {
		t.Fatalf("leaky script: exit %d, want 1: %s", code, tf.ErrOut)
	}
	out = tf.Out.String()
	if !hasFields(out, "ttl", "FAIL") {
		t.Errorf("text lacks a line ttl FAIL:\n%s", out)
	}
	for _, want := range []string{"1 call of leaky_counter.lua", "2 keys without a TTL", "verdict: FAIL"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "(s)") {
		t.Errorf("text has a (s) plural:\n%s", out)
	}
}

// FuzzEvalFlagLike: any words after -- are classified without a panic,
// and only words starting with a dash are ever flagged.
func FuzzEvalFlagLike(f *testing.F) {
	for _, s := range []string{"-n", "--interval=1s", "-5", "--", "-", "--=", "-\xff", "--count"} {
		f.Add(s)
	}
	c := newEvalCmd(NewFactory(), nil)
	f.Fuzz(func(t *testing.T, w string) {
		for _, got := range flagLike(c, []string{w, "x"}) {
			if !strings.HasPrefix(got, "-") {
				t.Fatalf("flagLike flagged %q", got)
			}
		}
	})
}

// TestDurationFlagAlias: --duration is the one spelling of a duration in
// eval --simulate and sandbox; --for still works and is not in --help.
func TestDurationFlagAlias(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "--redis", "embedded", "--simulate", "--arrivals", "20/s", "--duration", "2s", "--algo", "token-bucket", "--capacity", "10", "--rate", "5/s", "-o", "json"},
		{"eval", "--redis", "embedded", "--simulate", "--arrivals", "20/s", "--for", "2s", "--algo", "token-bucket", "--capacity", "10", "--rate", "5/s", "-o", "json"},
	} {
		tf := newTestFactory(t)
		if code := tf.execute(t, args...); code != exitcode.OK {
			t.Fatalf("ratelimit %q = %d (stderr %q)", args, code, tf.ErrOut.String())
		}
		if !strings.Contains(tf.Out.String(), `"duration_ms": 2000`) {
			t.Errorf("ratelimit %q: want duration_ms 2000 in %s", args, tf.Out.String())
		}
	}
	for _, cmd := range []string{"eval", "sandbox"} {
		tf := newTestFactory(t)
		tf.execute(t, cmd, "--help")
		help := tf.Out.String()
		if !strings.Contains(help, "--duration") || strings.Contains(help, "  --for ") {
			t.Errorf("%s --help: want --duration and no --for flag line:\n%s", cmd, help)
		}
	}
}

// hasFields reports whether some line of out begins with the fields
// want, whatever the spacing between them.
func hasFields(out string, want ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(want) && slices.Equal(f[:len(want)], want) {
			return true
		}
	}
	return false
}
