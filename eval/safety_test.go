package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestUserScriptErrors: a Lua error while the user's script runs is the
// script failing (exit 1, the server's text kept); a script that does not
// compile is bad input (exit 2); on every target.
func TestUserScriptErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, src string
		code      int
		want      string
	}{
		{"runtime error", "return nil + 1", exitcode.Failed, "nil"},
		{"error()", "error('boom')", exitcode.Failed, "boom"},
		{"error_reply", "return redis.error_reply('ERR this script always fails')", exitcode.Failed, "always fails"},
		{"syntax error", "return {", exitcode.Usage, "does not compile"},
	}
	for _, tg := range redistest.All(t) {
		for _, tt := range tests {
			t.Run(tg.Name+"/"+tt.name, func(t *testing.T) {
				_, err := Run(context.Background(), tg.Client, Options{ScriptFile: writeFile(t, dir, "s.lua", tt.src), ScriptWords: []string{","}})
				msg := fmt.Sprint(err)
				if code := exitcode.Code(err); code != tt.code || !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
					t.Errorf("Run(%q) = %q (exit %d), want exit %d mentioning %q on one line", tt.src, msg, code, tt.code, tt.want)
				}
				if strings.Contains(msg, "check failed") {
					t.Errorf("message %q carries a verdict suffix", msg)
				}
			})
		}
	}
}

// TestJSONNaNAndInf: RESP3 doubles NaN and ±Inf from a real Redis 7 (0/0
// in Lua is sent as ",-nan") render in JSON as "NaN", "+Inf", "-Inf".
func TestJSONNaNAndInf(t *testing.T) {
	dir := t.TempDir()
	script := writeFile(t, dir, "nan.lua", "return {1, {double=0/0}, {double=1/0}, {double=-1/0}, {double=0.5}}")
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			res, err := Run(context.Background(), tg.Client, Options{ScriptFile: script, ScriptWords: []string{","}})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatalf("json.Marshal(result) = %v, want it encoded", err)
			}
			var back struct {
				Calls []struct{ Reply []any } `json:"calls"`
			}
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(back.Calls[0].Reply); got != "[1 NaN +Inf -Inf 0.5]" {
				t.Errorf("reply in json = %s, want [1 NaN +Inf -Inf 0.5]", got)
			}
		})
	}
}

func TestJSONReplyNonFinite(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	in := []any{map[any]any{"x": nan}, []any{1 / func() float64 { return 0 }()}}
	if _, err := json.Marshal(jsonReply(in)); err != nil {
		t.Fatalf("json.Marshal(jsonReply(%v)) = %v", in, err)
	}
}

// TestPlaceholders: {uuid}, {now_ms} and {n} in --script arguments are
// filled for every call; other braces stay as they are.
func TestPlaceholders(t *testing.T) {
	dir := t.TempDir()
	script := writeFile(t, dir, "echo.lua", "return ARGV")
	ids := 0
	now := time.UnixMilli(1_700_000_000_123)
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			res, err := Run(context.Background(), tg.Client, Options{
				ScriptFile: script, ScriptWords: []string{",", "req-{uuid}", "{now_ms}", "{n}", "{user42}"}, Count: 2,
				NewID: func() string { ids++; return fmt.Sprintf("id%d", ids) },
				Now:   func() time.Time { return now },
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := []string{fmt.Sprint(res.Calls[0].Reply), fmt.Sprint(res.Calls[1].Reply)}
			want := []string{fmt.Sprintf("[req-id%d 1700000000123 1 {user42}]", ids-1), fmt.Sprintf("[req-id%d 1700000000123 2 {user42}]", ids)}
			if got[0] != want[0] || got[1] != want[1] {
				t.Errorf("replies = %q, want %q", got, want)
			}
			if a := strings.Join(res.Script.Args, " "); a != strings.Trim(want[0], "[]") {
				t.Errorf("script args = %q, want the first call's %q", a, strings.Trim(want[0], "[]"))
			}
		})
	}
}

// TestReadScriptRefusesStreams: a FIFO, a device or a directory as the
// script is refused at once (exit 2) instead of blocking or filling
// memory; so is a file over the ceiling.
func TestReadScriptRefusesStreams(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.lua")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	big := writeFile(t, dir, "big.lua", "return 1 --"+strings.Repeat("x", 1<<20))
	for _, path := range []string{fifo, "/dev/zero", dir, big} {
		done := make(chan error, 1)
		go func() { _, err := ReadScript(path); done <- err }()
		select {
		case err := <-done:
			if code := exitcode.Code(err); code != exitcode.Usage || strings.Contains(err.Error(), "\n") {
				t.Errorf("ReadScript(%s) = %v (exit %d), want a one-line exit-2 error", path, err, code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadScript(%s) still reading after 10s", path)
		}
	}
	if src, err := ReadScript(writeFile(t, dir, "ok.lua", "return 1")); err != nil || src != "return 1" {
		t.Errorf("ReadScript(ok.lua) = %q, %v", src, err)
	}
}

// busyServer lowers busy-reply-threshold on the shared standalone server
// for this test, so a script blocks other clients after 100 ms, and at
// cleanup kills any script left running and restores the setting.
func busyServer(t *testing.T) redistest.Target {
	t.Helper()
	ctx := context.Background()
	tg := redistest.Standalone(t)
	old, err := tg.Client.ConfigGet(ctx, "busy-reply-threshold").Result()
	if err != nil {
		t.Fatalf("CONFIG GET busy-reply-threshold: %v", err)
	}
	if err := tg.Client.ConfigSet(ctx, "busy-reply-threshold", "100").Err(); err != nil {
		t.Fatalf("CONFIG SET busy-reply-threshold 100: %v", err)
	}
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: addrOf(t, tg), ReadTimeout: 2 * time.Second})
		defer c.Close()
		for range 50 {
			_ = c.ScriptKill(ctx).Err()
			_ = c.FunctionKill(ctx).Err()
			if c.Ping(ctx).Err() == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := c.ConfigSet(ctx, "busy-reply-threshold", old["busy-reply-threshold"]).Err(); err != nil {
			t.Errorf("restore busy-reply-threshold: %v", err)
		}
	})
	return tg
}

func addrOf(t *testing.T, tg redistest.Target) string {
	t.Helper()
	o, err := redis.ParseURL(tg.URL)
	if err != nil {
		t.Fatalf("parse %s: %v", tg.URL, err)
	}
	return o.Addr
}

// shortClient is a client to tg that gives up waiting for a reply after
// 500 ms, as --redis-timeout 500ms would.
func shortClient(t *testing.T, tg redistest.Target) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addrOf(t, tg), ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// serverBusy reports whether the server answers BUSY (a script blocks it).
func serverBusy(t *testing.T, tg redistest.Target) bool {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addrOf(t, tg), ReadTimeout: 2 * time.Second, MaxRetries: -1})
	defer c.Close()
	err := c.Ping(context.Background()).Err()
	return err != nil && strings.HasPrefix(err.Error(), "BUSY")
}

// TestUserScriptTimeout: a user script that never returns is the script
// failing (exit 1) with what happened and how to stop it; on a server
// another process started it is left alone (the server answers BUSY
// afterwards), on one this process owns it is killed (the server answers).
func TestUserScriptTimeout(t *testing.T) {
	dir := t.TempDir()
	busy := writeFile(t, dir, "busy.lua", "while true do end")
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own=%v", own), func(t *testing.T) {
			tg := busyServer(t)
			key := redistest.Key(t, "busy")
			_, err := Run(context.Background(), shortClient(t, tg), Options{ScriptFile: busy, ScriptWords: []string{key, ",", "1"}, OwnServer: own})
			msg := fmt.Sprint(err)
			if code := exitcode.Code(err); code != exitcode.Failed || !strings.Contains(msg, "still running") || !strings.Contains(msg, "SCRIPT KILL") || strings.Contains(msg, "\n") {
				t.Fatalf("Run(busy.lua) = %q (exit %d), want exit 1 saying it is still running and naming SCRIPT KILL", msg, code)
			}
			if got := serverBusy(t, tg); got == own {
				t.Errorf("server busy after the run = %v, want %v (own server: %v)", got, !own, own)
			}
			if own && !strings.Contains(msg, "stopped the script") {
				t.Errorf("message %q does not say the script was stopped", msg)
			}
		})
	}
}

// TestBusyServer: when another client's script blocks the server, eval
// says the server is busy and how to stop it (exit 3), for the built-in
// limiters and for user scripts; it kills nothing.
func TestBusyServer(t *testing.T) {
	tg := busyServer(t)
	blocker := redis.NewClient(&redis.Options{Addr: addrOf(t, tg), ReadTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { _ = blocker.Close() })
	go func() { _ = blocker.Eval(context.Background(), "while true do end", nil).Err() }()
	for range 100 {
		if serverBusy(t, tg) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !serverBusy(t, tg) {
		t.Fatal("the blocking script did not make the server answer BUSY")
	}
	dir := t.TempDir()
	runs := map[string]Options{
		"limiter": {Params: safetyParams[limiter.TokenBucket], Key: redistest.Key(t, "b")},
		"script":  {ScriptFile: writeFile(t, dir, "ok.lua", "return 1"), ScriptWords: []string{redistest.Key(t, "s"), ","}},
	}
	for name, opts := range runs {
		t.Run(name, func(t *testing.T) {
			_, err := Run(context.Background(), shortClient(t, tg), opts)
			msg := fmt.Sprint(err)
			if code := exitcode.Code(err); code != exitcode.Unreachable || !strings.Contains(msg, "BUSY") || !strings.Contains(msg, "SCRIPT KILL") || strings.Contains(msg, "\n") {
				t.Errorf("Run on a busy server = %q (exit %d), want exit 3 saying BUSY and naming SCRIPT KILL", msg, code)
			}
		})
	}
	if !serverBusy(t, tg) {
		t.Error("eval stopped another client's script")
	}
}

// aclClient logs in to tg as an ACL user with rules, bypassing the
// command's connection setup, so only what eval itself sends is allowed.
func aclClient(t *testing.T, tg redistest.Target, rules ...string) redis.UniversalClient {
	t.Helper()
	o, err := redis.ParseURL(redistest.ACLUser(t, tg, rules...))
	if err != nil {
		t.Fatal(err)
	}
	var c redis.UniversalClient
	if tg.Name == "cluster" {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{o.Addr}, Username: o.Username, Password: o.Password, MaxRedirects: 3})
	} else {
		c = redis.NewClient(o)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestMinimalACL: eval works for an ACL user allowed only the commands
// each limiter script (Limiter.ACL) and --script need, and a missing one
// is exit 3 naming what to add.
func TestMinimalACL(t *testing.T) {
	ctx := context.Background()
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		cluster := []string{}
		if tg.Name == "cluster" {
			cluster = []string{"+cluster|slots"} // the cluster client's own
		}
		for _, algo := range limiter.Scripted() {
			t.Run(tg.Name+"/"+string(algo), func(t *testing.T) {
				l := mustLimiter(t, safetyParams[algo])
				rules := append(append([]string{"~test:*"}, cluster...), strings.Fields(l.ACL())...)
				key := redistest.Key(t, "acl")
				redistest.Cleanup(t, tg.Client, key)
				_ = flushScriptsOf(tg.Client) // the first call must fall back to EVAL
				res, err := Run(ctx, aclClient(t, tg, rules...), Options{Params: safetyParams[algo], Key: key, Count: 4})
				if err != nil || res.Summary.Allowed != 3 {
					t.Fatalf("Run with rules %q = %+v, %v; want 3 allowed", rules, res.Summary, err)
				}
				// Foreign key refused and replaced with the same rules.
				fkey := redistest.Key(t, "aclforeign")
				redistest.Cleanup(t, tg.Client, fkey)
				if err := tg.Client.Set(ctx, fkey, "x", 0).Err(); err != nil {
					t.Fatal(err)
				}
				_, err = Run(ctx, aclClient(t, tg, rules...), Options{Params: safetyParams[algo], Key: fkey})
				if code := exitcode.Code(err); code != exitcode.Usage {
					t.Errorf("foreign key with rules %q = %v (exit %d), want exit 2", rules, err, code)
				}
				forced := safetyParams[algo]
				forced.Force = true
				if _, err = Run(ctx, aclClient(t, tg, rules...), Options{Params: forced, Key: fkey}); err != nil {
					t.Errorf("Force with rules %q: %v", rules, err)
				}
				// Negative control: without one command the script calls.
				short := slicesWithout(rules, "+time")
				_, err = Run(ctx, aclClient(t, tg, short...), Options{Params: safetyParams[algo], Key: redistest.Key(t, "acl2")})
				msg := fmt.Sprint(err)
				if code := exitcode.Code(err); code != exitcode.Unreachable || !strings.Contains(msg, "+time") || strings.Contains(msg, "\n") {
					t.Errorf("Run without +time = %q (exit %d), want exit 3 naming the rules to add", msg, code)
				}
				// Without EVALSHA itself: NOPERM names the command.
				_, err = Run(ctx, aclClient(t, tg, slicesWithout(rules, "+evalsha")...), Options{Params: safetyParams[algo], Key: redistest.Key(t, "acl3")})
				if msg := fmt.Sprint(err); exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(msg, "+evalsha") {
					t.Errorf("Run without +evalsha = %q (exit %d), want exit 3 naming +evalsha", msg, exitcode.Code(err))
				}
			})
		}
		t.Run(tg.Name+"/script", func(t *testing.T) {
			rules := append(append([]string{"~test:*"}, cluster...), strings.Fields(ScriptACL)...)
			rules = append(rules, "+time", "+hmget", "+hset", "+expire") // what article_token_bucket.lua calls
			keys := redistest.KeysOneSlot(t, 1)
			redistest.Cleanup(t, tg.Client, keys...)
			res, err := Run(ctx, aclClient(t, tg, rules...), Options{
				ScriptFile: filepath.Join("testdata", "article_token_bucket.lua"), ScriptWords: []string{keys[0], ",", "5", "1", "1"}, Count: 2,
			})
			if err != nil || res.Summary.Allowed != 2 {
				t.Fatalf("Run --script with rules %q = %+v, %v", rules, res.Summary, err)
			}
			// A command the user's script calls but may not: exit 3, ACL LOG.
			_, err = Run(ctx, aclClient(t, tg, rules...), Options{
				ScriptFile: writeFile(t, t.TempDir(), "flush.lua", "return redis.call('INCR', KEYS[1])"), ScriptWords: []string{keys[0] + "x", ","},
			})
			if msg := fmt.Sprint(err); exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(msg, "ACL LOG") {
				t.Errorf("script calling a denied command = %q (exit %d), want exit 3 pointing at ACL LOG", msg, exitcode.Code(err))
			}
		})
	}
}

func slicesWithout(s []string, drop string) []string {
	var out []string
	for _, x := range s {
		if x != drop {
			out = append(out, x)
		}
	}
	return out
}

// flushScriptsOf empties the script cache of every primary.
func flushScriptsOf(c redis.UniversalClient) error {
	return primaries(context.Background(), c, func(ctx context.Context, n redis.Cmdable) error { return n.ScriptFlush(ctx).Err() })
}
