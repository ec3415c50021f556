package race

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// raceClient opens a client to url whose pool fits n goroutines, as the
// command does.
func raceClient(t *testing.T, url string, n int) redis.UniversalClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A generous command timeout: tests run under -race on a shared machine.
	conn, err := redisconn.Open(ctx, redisconn.Options{URL: url, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c := conn.NewClient(n + 8)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// runKeys returns the keys of run id left on every primary behind c.
func runKeys(t *testing.T, c redis.UniversalClient, runID string) []string {
	t.Helper()
	return redistest.ScanKeys(t, c, fmt.Sprintf("race:{%s}*", runID))
}

func strategyByName(t *testing.T, res Result, name string) Strategy {
	t.Helper()
	for _, s := range res.Strategies {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no strategy %q in result", name)
	return Strategy{}
}

// TestRunDefaults is the acceptance run at the defaults on a real
// standalone server, a real 3-primary cluster and the embedded server.
func TestRunDefaults(t *testing.T) {
	targets := []redistest.Target{redistest.Standalone(t), redistest.Cluster(t), redistest.Embedded(t)}
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			c := raceClient(t, tg.URL, DefaultConcurrency)
			opts := Options{Concurrency: DefaultConcurrency, Limit: DefaultLimit, Trials: DefaultTrials}
			res, err := Run(context.Background(), c, opts)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Verdict != "pass" || len(res.Failures()) != 0 {
				t.Errorf("verdict %q, failures %v, want pass", res.Verdict, res.Failures())
			}
			if got := len(res.Strategies); got != 5 {
				t.Fatalf("%d strategies, want 5", got)
			}
			naive := strategyByName(t, res, Naive)
			for i, a := range naive.Allowed {
				if a < 5*DefaultLimit {
					t.Errorf("naive admitted %d in trial %d, want at least %d (5 x limit)", a, i+1, 5*DefaultLimit)
				}
				if v := naive.FinalValue[i]; v == nil || *v >= int64(a) {
					t.Errorf("naive trial %d: final value %v with %d admitted, want lost updates", i+1, v, a)
				}
			}
			if res.RaceReproduced == nil || !*res.RaceReproduced {
				t.Errorf("race_reproduced = %v, want true", res.RaceReproduced)
			}
			for _, name := range []string{Watch, Incr, Script} {
				s := strategyByName(t, res, name)
				if !s.AtomicExpected {
					t.Errorf("%s: atomic_expected false", name)
				}
				for i, a := range s.Allowed {
					if a != DefaultLimit {
						t.Errorf("%s admitted %d in trial %d, want exactly %d", name, a, i+1, DefaultLimit)
					}
					if s.Errors[i] != 0 {
						t.Errorf("%s: %d errors in trial %d (%s)", name, s.Errors[i], i+1, s.ErrorSample)
					}
				}
			}
			if s := strategyByName(t, res, Script); *s.FinalValue[0] != DefaultLimit {
				t.Errorf("script: %d tokens taken, want %d", *s.FinalValue[0], DefaultLimit)
			}
			if s := strategyByName(t, res, Incr); *s.FinalValue[0] != DefaultConcurrency {
				t.Errorf("incr: final value %d, want %d (every INCR counted)", *s.FinalValue[0], DefaultConcurrency)
			}
			if left := runKeys(t, c, res.RunID); len(left) > 0 {
				t.Errorf("keys left after the run: %v", left)
			}
			if tg.Name == "cluster" && res.Node == "" {
				t.Errorf("cluster run does not name its node")
			}
		})
	}
}

func writeScript(t *testing.T, src string, args ...string) *UserScript {
	t.Helper()
	return &UserScript{Path: "/scripts/" + strings.ReplaceAll(t.Name(), "/", "_") + ".lua", Source: src, Args: args}
}

func TestRunUserScripts(t *testing.T) {
	c := raceClient(t, redistest.Standalone(t).URL, 100)
	const limit = 7
	// Checks {limit}, {uuid} (fresh per call: SADD must add) and {now_ms}
	// (within a minute of the server's clock), and admits the first limit.
	checking := `
local limit = tonumber(ARGV[1])
if limit ~= 7 then return redis.error_reply('ERR limit ' .. tostring(ARGV[1])) end
if redis.call('SADD', KEYS[1], ARGV[2]) == 0 then return redis.error_reply('ERR uuid reused ' .. ARGV[2]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000
if math.abs(now - tonumber(ARGV[3])) > 60000 then return redis.error_reply('ERR now_ms ' .. ARGV[3]) end
redis.call('PEXPIRE', KEYS[1], 60000)
if redis.call('SCARD', KEYS[1]) <= limit then return {1, 0} end
return {0, 0}`
	tests := []struct {
		name       string
		script     *UserScript
		wantPass   bool
		wantErrors bool
		admitted   int // every trial; -1: not checked
	}{
		{"always allows", writeScript(t, "return {1}"), false, false, 100},
		{"placeholders", writeScript(t, checking, "{limit}", "req-{uuid}", "{now_ms}"), true, false, limit},
		{"lua false refuses, under-admits", writeScript(t, "return false"), false, false, 0},
		{"boolean reply", writeScript(t, "return {redis.call('INCR', KEYS[1]) <= tonumber(ARGV[1])}", "{limit}"), true, false, limit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), c, Options{Concurrency: 100, Limit: limit, Trials: 2, Strategies: []string{}, User: tt.script})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Pass() != tt.wantPass {
				t.Errorf("verdict %q (failures %v), want pass=%v", res.Verdict, res.Failures(), tt.wantPass)
			}
			s := strategyByName(t, res, User)
			if s.Label != tt.script.Label() || s.ScriptFile != tt.script.Path {
				t.Errorf("label %q script %q, want %q %q", s.Label, s.ScriptFile, tt.script.Label(), tt.script.Path)
			}
			for i, a := range s.Allowed {
				if tt.admitted >= 0 && a != tt.admitted {
					t.Errorf("trial %d admitted %d, want %d (errors %d: %s)", i+1, a, tt.admitted, s.Errors[i], s.ErrorSample)
				}
				if (s.Errors[i] > 0) != tt.wantErrors {
					t.Errorf("trial %d: %d errors (%s), want errors=%v", i+1, s.Errors[i], s.ErrorSample, tt.wantErrors)
				}
			}
			if !tt.wantPass && !strings.Contains(strings.Join(res.Failures(), "; "), tt.script.Label()) {
				t.Errorf("failures %v do not name %s", res.Failures(), tt.script.Label())
			}
			if left := runKeys(t, c, res.RunID); len(left) > 0 {
				t.Errorf("keys left: %v", left)
			}
		})
	}
}

// TestRunUserScriptUnderAdmits: on a real standalone server and a real
// cluster, a user script that admits fewer than the limit on a fresh key
// fails the check (it used to pass, every call counted as refused), while
// the embedded fixed-window script with its ARGV right admits exactly the
// limit and passes. The fixed-window script with the ARGV the old --help
// example gave ("{limit} 1": a window of limit ms and a limit of 1) admits
// one per window, a few in all, and fails.
func TestRunUserScriptUnderAdmits(t *testing.T) {
	fw, ok := limiter.ScriptByName(string(limiter.FixedWindow))
	if !ok {
		t.Fatal("no fixed-window script")
	}
	tests := []struct {
		name, src string
		args      []string
		admitted  int
		pass      bool
	}{
		{"nil", "return nil", nil, 0, false},
		{"false", "return false", nil, 0, false},
		{"zero", "return {0, 0}", nil, 0, false},
		{"fixed window, old help args", fw.Source, []string{"{limit}", "1"}, -1, false}, // 1 per 10 ms window
		{"fixed window", fw.Source, []string{"60000", "{limit}"}, 10, true},
	}
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		c := raceClient(t, tg.URL, 200)
		for _, tt := range tests {
			t.Run(tg.Name+"/"+tt.name, func(t *testing.T) {
				script := writeScript(t, tt.src, tt.args...)
				res, err := Run(context.Background(), c, Options{Concurrency: 200, Limit: 10, Trials: 2, Strategies: []string{}, User: script})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				s := strategyByName(t, res, User)
				for i, a := range s.Allowed {
					if tt.admitted >= 0 && a != tt.admitted || tt.admitted < 0 && (a < 1 || a >= 10) {
						t.Errorf("trial %d admitted %d, want %d (-1: from 1 to 9)", i+1, a, tt.admitted)
					}
				}
				want := fmt.Sprintf("under-admission: %s admitted %d of 200 with limit 10 in trial 1", script.Label(), s.Allowed[0])
				if res.Pass() != tt.pass || !tt.pass && (len(res.Failures()) != 1 || !strings.HasPrefix(res.Failures()[0], want+"; under-admission")) {
					t.Errorf("verdict %q failures %q, want pass=%v (failure %q)", res.Verdict, res.Failures(), tt.pass, want)
				}
				if left := runKeys(t, c, res.RunID); len(left) > 0 {
					t.Errorf("keys left: %v", left)
				}
			})
		}
	}
}

// TestRunUserScriptFailsEveryCall: a script whose every call fails is bad
// input (exit 2), not an over-admission (exit 1).
func TestRunUserScriptFailsEveryCall(t *testing.T) {
	c := raceClient(t, redistest.Standalone(t).URL, 20)
	for _, tt := range []struct{ src, want string }{
		{"return {'maybe'}", "its reply must start with 1 (allowed) or 0 (refused)"},
		{"return redis.error_reply('ERR broken')", "ERR broken; fix the script or its --args"},
	} {
		script := writeScript(t, tt.src)
		res, err := Run(context.Background(), c, Options{Concurrency: 20, Limit: 5, Trials: 2, Strategies: []string{}, User: script, RunID: NewRunID()})
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "--script "+script.Label()+" failed on every call in trial 1") ||
			!strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run(%s) = %v (exit %d), want exit 2 naming the script and %q", tt.src, err, exitcode.Code(err), tt.want)
		}
		if left := runKeys(t, c, res.RunID); res.RunID != "" && len(left) > 0 {
			t.Errorf("keys left: %v", left)
		}
	}
}

func TestRunUserScriptThatDoesNotCompile(t *testing.T) {
	c := raceClient(t, redistest.Standalone(t).URL, 10)
	_, err := Run(context.Background(), c, Options{Concurrency: 10, Limit: 1, Trials: 1, Strategies: []string{}, User: writeScript(t, "return {1")})
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "load --script") {
		t.Fatalf("Run = %v (exit %d), want a usage error naming --script", err, exitcode.Code(err))
	}
}

// TestRunCancelledDeletesKeys interrupts a run after its first strategy
// trial, as Ctrl-C would, and checks that no key of the run is left.
func TestRunCancelledDeletesKeys(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			c := raceClient(t, tg.URL, 50)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := Options{Concurrency: 50, Limit: 5, Trials: 3, RunID: NewRunID()}
			var seen []string
			opts.Progress = func(done, total int) {
				// The key of the trial just finished was deleted; make
				// sure cleanup also covers keys written before the stop.
				if done == 1 {
					k := Key(opts.RunID, Multi, 1)
					if err := c.Set(context.Background(), k, 1, time.Minute).Err(); err != nil {
						t.Errorf("set %s: %v", k, err)
					}
					seen = runKeys(t, c, opts.RunID)
					cancel()
				}
			}
			_, err := Run(ctx, c, opts)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, want context.Canceled", err)
			}
			if len(seen) != 1 {
				t.Errorf("keys before the stop = %v, want the one written", seen)
			}
			if left := runKeys(t, c, opts.RunID); len(left) > 0 {
				t.Errorf("keys left after cancel: %v", left)
			}
		})
	}
}

// TestRunMaxClients starts a server that accepts only 40 clients and races
// 100 goroutines: a clear exit-2 error naming maxclients, before or during
// the warm-up.
func TestRunMaxClients(t *testing.T) {
	redistest.Require(t)
	tests := []struct {
		name string
		args []string
		// noInfo connects as an ACL user that may not run INFO or CONFIG
		// (as on many managed services; the sandbox itself needs INFO).
		noInfo bool
	}{
		{"config readable", []string{"--maxclients", "40"}, false},
		{"config disabled", []string{"--maxclients", "40", "--rename-command", "CONFIG", ""}, false},
		// No early check possible: the warm-up fails and the server is asked
		// with a bare connection, which it refuses with its error line.
		{"config and info disabled", []string{"--maxclients", "40"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb, err := sandbox.Start(context.Background(), sandbox.Config{Args: tt.args})
			if err != nil {
				t.Fatalf("start server: %v", err)
			}
			t.Cleanup(func() { _ = sb.Stop() })
			url := sb.URL
			if tt.noInfo {
				admin := redis.NewClient(&redis.Options{Addr: sb.Addrs[0]})
				err := admin.Do(context.Background(), "ACL", "SETUSER", "racer", "on", ">pw", "~*", "&*", "+@all", "-info", "-config").Err()
				_ = admin.Close()
				if err != nil {
					t.Fatalf("ACL SETUSER: %v", err)
				}
				url = "redis://racer:pw@" + sb.Addrs[0]
			}
			c := raceClient(t, url, 100)
			_, err = Run(context.Background(), c, Options{Concurrency: 100, Limit: 5, Trials: 1, Strategies: []string{Incr}})
			if err == nil {
				t.Fatal("Run succeeded with 100 connections on a server with maxclients 40")
			}
			t.Logf("Run: %v", err)
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "maxclients") || !strings.Contains(err.Error(), "--concurrency") {
				t.Errorf("Run = %v (exit %d), want exit 2 naming maxclients and --concurrency", err, exitcode.Code(err))
			}
		})
	}
}

// TestRunNotReproduced: with no more goroutines than the limit nothing can
// over-admit; the note says so and the verdict still passes.
func TestRunNotReproduced(t *testing.T) {
	c := raceClient(t, redistest.Standalone(t).URL, 5)
	res, err := Run(context.Background(), c, Options{Concurrency: 5, Limit: 10, Trials: 1, Strategies: []string{Naive, Script}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Pass() || res.RaceReproduced == nil || *res.RaceReproduced {
		t.Fatalf("verdict %q, race_reproduced %v; want pass, false", res.Verdict, res.RaceReproduced)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "not reproduced") || !strings.Contains(res.Notes[0], "--concurrency 5") {
		t.Errorf("notes %q, want one saying the race was not reproduced at --concurrency 5", res.Notes)
	}
}

// lostServer starts a dedicated standalone server (never the shared one:
// these tests stop it) and returns it with a race client of n connections.
func lostServer(t *testing.T, n int) (*sandbox.Sandbox, redis.UniversalClient) {
	t.Helper()
	redistest.Require(t)
	sb, err := sandbox.Start(context.Background(), sandbox.Config{})
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { _ = sb.Stop() })
	return sb, raceClient(t, sb.URL, n)
}

// checkLost checks that err is the one-line exit-3 error naming addr.
func checkLost(t *testing.T, err error, addr, doing string) {
	t.Helper()
	if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), "redis at "+addr+" ") ||
		!strings.Contains(err.Error(), doing) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Run = %v (exit %d), want a one-line exit 3 naming %s and %q", err, exitcode.Code(err), addr, doing)
	}
}

// TestRunServerLost stops a dedicated server before the run, between two
// trials and in the middle of a trial: each time exit 3 naming the
// server, never a failed verdict (exit 1).
func TestRunServerLost(t *testing.T) {
	t.Run("before the run", func(t *testing.T) {
		for _, strategies := range [][]string{{Naive}, {Incr, Script}} {
			sb, c := lostServer(t, 20)
			if err := sb.Stop(); err != nil {
				t.Fatal(err)
			}
			_, err := Run(context.Background(), c, Options{Concurrency: 20, Limit: 5, Trials: 2, Strategies: strategies})
			t.Logf("Run(%v): %v", strategies, err)
			if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), sb.Addrs[0]) {
				t.Errorf("Run(%v) on a stopped server = %v (exit %d), want exit 3 naming %s", strategies, err, exitcode.Code(err), sb.Addrs[0])
			}
		}
	})
	t.Run("between trials", func(t *testing.T) {
		sb, c := lostServer(t, 20)
		opts := Options{Concurrency: 20, Limit: 5, Trials: 3, Strategies: []string{Incr, Script}}
		opts.Progress = func(done, _ int) {
			if done == 1 {
				if err := sb.Stop(); err != nil {
					t.Errorf("stop: %v", err)
				}
			}
		}
		_, err := Run(context.Background(), c, opts)
		t.Logf("Run: %v", err)
		if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), sb.Addrs[0]) {
			t.Fatalf("Run = %v (exit %d), want exit 3 naming %s", err, exitcode.Code(err), sb.Addrs[0])
		}
	})
	t.Run("during a trial", func(t *testing.T) {
		const n = 40
		sb, c := lostServer(t, n)
		node := c.(*redis.Client)
		// One command first, as Run does (checkMaxClients): the client's
		// first handshake settles its options before the concurrent dials.
		if err := node.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		// The first goroutine through the barrier stops the server before
		// its own call; the others race on and lose their connections.
		s := &stopper{strategy: &getSet{limit: 5}, stop: func() { _ = sb.Stop() }}
		opts := Options{Concurrency: n, Limit: 5, Trials: 1, WarmParallel: 8}
		key := Key(NewRunID(), Naive, 1)
		tr, err := runTrial(context.Background(), node, s, key, opts)
		if err != nil {
			t.Fatalf("runTrial: %v", err)
		}
		err = callsError(s, tr, 1, node.Options().Addr, "race:{x}:*")
		t.Logf("callsError: %v", err)
		checkLost(t, err, sb.Addrs[0], "did not answer while racing naive GET+SET in trial 1")
		failed := 0
		for _, o := range tr.outcomes {
			if o.err != nil {
				failed++
			}
		}
		if failed == 0 {
			t.Errorf("no call failed after the server stopped")
		}
	})
}

// stopper wraps a strategy: the first call runs stop before its own.
type stopper struct {
	strategy
	once sync.Once
	stop func()
}

func (s *stopper) call(ctx context.Context, c *redis.Conn, key string, i int) outcome {
	s.once.Do(s.stop)
	return s.strategy.call(ctx, c, key, i)
}

// TestTokenBucketTTL: the script strategy's key expires within KeyTTL, like
// every other key of a run, and the bucket admits exactly its capacity
// (nothing refills, whatever the limit).
func TestTokenBucketTTL(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Embedded(t)} {
		for _, limit := range []int64{1, 10, 1_000_000_000} {
			t.Run(fmt.Sprintf("%s/limit %d", tg.Name, limit), func(t *testing.T) {
				ctx := context.Background()
				node := tg.Client.(*redis.Client)
				key := redistest.Key(t, "tb")
				redistest.Cleanup(t, node, key)
				s := &tokenBucket{limit: limit}
				if err := s.prepare(ctx, node); err != nil {
					t.Fatalf("prepare: %v", err)
				}
				conn := node.Conn()
				defer conn.Close()
				calls := min(limit, 12) + 3
				admitted := int64(0)
				for i := range calls {
					o := s.call(ctx, conn, key, int(i))
					if o.err != nil {
						t.Fatalf("call %d: %v", i+1, o.err)
					}
					if o.admitted {
						admitted++
					}
					ttl, err := node.PTTL(ctx, key).Result()
					if err != nil {
						t.Fatalf("PTTL %s: %v", key, err)
					}
					if ttl <= 0 || ttl > KeyTTL {
						t.Fatalf("after call %d the key's TTL is %v, want within %v", i+1, ttl, KeyTTL)
					}
				}
				if want := min(limit, calls); admitted != want {
					t.Errorf("admitted %d of %d calls with limit %d, want %d", admitted, calls, limit, want)
				}
			})
		}
	}
}
