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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pattern := fmt.Sprintf("race:{%s}*", runID)
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, node *redis.Client) error {
		it := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	switch cc := c.(type) {
	case *redis.ClusterClient:
		err = cc.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, cc)
	default:
		t.Fatalf("unexpected client %T", c)
	}
	if err != nil {
		t.Fatalf("SCAN MATCH %s: %v", pattern, err)
	}
	return keys
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
			if res.Verdict != "pass" || len(res.Failures) != 0 {
				t.Errorf("verdict %q, failures %v, want pass", res.Verdict, res.Failures)
			}
			if got := len(res.Strategies); got != 5 {
				t.Fatalf("%d strategies, want 5", got)
			}
			naive := strategyByName(t, res, Naive)
			for i, a := range naive.Admitted {
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
				for i, a := range s.Admitted {
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
		{"lua false refuses", writeScript(t, "return false"), true, false, 0},
		{"boolean reply", writeScript(t, "return {redis.call('INCR', KEYS[1]) <= tonumber(ARGV[1])}", "{limit}"), true, false, limit},
		{"bad reply", writeScript(t, "return {'maybe'}"), false, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), c, Options{Concurrency: 100, Limit: limit, Trials: 2, Strategies: []string{}, User: tt.script})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Pass() != tt.wantPass {
				t.Errorf("verdict %q (failures %v), want pass=%v", res.Verdict, res.Failures, tt.wantPass)
			}
			s := strategyByName(t, res, User)
			if s.Label != tt.script.Label() || s.Script != tt.script.Path {
				t.Errorf("label %q script %q, want %q %q", s.Label, s.Script, tt.script.Label(), tt.script.Path)
			}
			for i, a := range s.Admitted {
				if tt.admitted >= 0 && a != tt.admitted {
					t.Errorf("trial %d admitted %d, want %d (errors %d: %s)", i+1, a, tt.admitted, s.Errors[i], s.ErrorSample)
				}
				if (s.Errors[i] > 0) != tt.wantErrors {
					t.Errorf("trial %d: %d errors (%s), want errors=%v", i+1, s.Errors[i], s.ErrorSample, tt.wantErrors)
				}
			}
			if !tt.wantPass && !strings.Contains(strings.Join(res.Failures, "; "), tt.script.Label()) {
				t.Errorf("failures %v do not name %s", res.Failures, tt.script.Label())
			}
			if left := runKeys(t, c, res.RunID); len(left) > 0 {
				t.Errorf("keys left: %v", left)
			}
		})
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
	}{
		{"config readable", []string{"--maxclients", "40"}},
		{"config disabled", []string{"--maxclients", "40", "--rename-command", "CONFIG", ""}},
		// No early check possible: the warm-up fails and the server is asked
		// with a bare connection, which it refuses with its error line.
		{"config and info disabled", []string{"--maxclients", "40", "--rename-command", "CONFIG", "", "--rename-command", "INFO", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb, err := sandbox.Start(context.Background(), sandbox.Config{Args: tt.args})
			if err != nil {
				t.Fatalf("start server: %v", err)
			}
			t.Cleanup(func() { _ = sb.Stop() })
			c := raceClient(t, sb.URL, 100)
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
