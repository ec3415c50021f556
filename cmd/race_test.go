package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/race"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

func TestRaceFlags(t *testing.T) {
	tests := []struct {
		args []string
		want raceOptions
	}{
		{nil, raceOptions{Concurrency: 200, Limit: 10, Trials: 3, WatchAttempts: 10}},
		{
			[]string{"--concurrency", "10000", "--limit", "100", "--trials", "1", "--strategies", "naive,script", "--watch-attempts", "3", "--out", "r.json"},
			raceOptions{Concurrency: 10000, Limit: 100, Trials: 1, Strategies: []string{"naive", "script"}, WatchAttempts: 3, Out: "r.json"},
		},
		{
			[]string{"--strategies", "none", "--script", "x.lua", "--args", "{limit} {uuid}"},
			raceOptions{Concurrency: 200, Limit: 10, Trials: 3, Strategies: []string{}, ScriptFile: "x.lua", ScriptArgs: "{limit} {uuid}", ArgsSet: true, WatchAttempts: 10},
		},
	}
	for _, tt := range tests {
		tf := newTestFactory(t)
		var got *raceOptions
		c := newRaceCmd(tf.Factory, func(o *raceOptions) error { got = o; return nil })
		c.SetArgs(tt.args)
		if err := c.Execute(); err != nil {
			t.Fatalf("race %v: %v", tt.args, err)
		}
		got.f, got.ctx = nil, nil
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("race %v options = %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}

func TestRaceBadInput(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "ok.lua")
	if err := os.WriteFile(script, []byte("return {1}"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.lua")
	blank := filepath.Join(dir, "blank.lua")
	big := filepath.Join(dir, "big.lua")
	fifo := filepath.Join(dir, "fifo.lua")
	for name, content := range map[string]string{empty: "", blank: " \n\t\n", big: "return {1}\n" + strings.Repeat("-- padding\n", 1<<17)} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// An unreachable --redis proves the input is checked before connecting:
	// connecting first would exit 3.
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency", "0"}, "--concurrency"},
		{[]string{"--concurrency", "-5"}, "--concurrency"},
		{[]string{"--limit", "0"}, "--limit"},
		{[]string{"--limit", "-1"}, "--limit"},
		{[]string{"--trials", "0"}, "--trials"},
		{[]string{"--strategies", "naive,lockfree"}, `unknown strategy "lockfree"`},
		{[]string{"--strategies", "none"}, "no strategy"},
		{[]string{"--strategies", " "}, "no strategy to race; pass --strategies with one or more of naive, multi, watch, incr, script, or --script FILE"},
		{[]string{"--strategies", ","}, "no strategy"},
		{[]string{"--strategies", " , "}, "no strategy"},
		{[]string{"--script", filepath.Join(dir, "missing.lua")}, "missing.lua: no such file"},
		{[]string{"--script", empty}, "empty.lua is empty"},
		{[]string{"--script", blank}, "blank.lua is empty"},
		{[]string{"--script", "/dev/zero"}, "/dev/zero is a character device, not a regular file"},
		{[]string{"--script", fifo}, "fifo.lua is a FIFO, not a regular file"},
		{[]string{"--script", dir}, "is a directory"},
		{[]string{"--script", big}, "more than the 1 MiB ceiling"},
		{[]string{"--args", "{limit}"}, "--args needs --script"},
		{[]string{"--script", script, "--args", "{limt}"}, "unknown placeholder {limt}"},
		{[]string{"--watch-attempts", "0"}, "--watch-attempts"},
		{[]string{"--concurrency", "abc"}, "invalid argument"},
		{[]string{"-o", "yaml"}, "--output"},
	}
	for _, tt := range tests {
		tf := newTestFactory(t)
		args := append([]string{"race", "--redis", "redis://127.0.0.1:1"}, tt.args...)
		if code := tf.execute(t, args...); code != exitcode.Usage {
			t.Errorf("ratelimit %v exit = %d, want 2 (stderr %q)", args, code, tf.ErrOut.String())
		}
		if !strings.Contains(tf.ErrOut.String(), tt.want) || strings.Count(tf.ErrOut.String(), "\n") != 1 {
			t.Errorf("ratelimit %v stderr = %q, want one line with %q", args, tf.ErrOut.String(), tt.want)
		}
	}
}

// leftKeys returns the keys of run id on every primary of target.
func leftKeys(t *testing.T, tg redistest.Target, runID string) []string {
	t.Helper()
	return redistest.ScanKeys(t, tg.Client, fmt.Sprintf("race:{%s}*", runID))
}

// TestRaceOnRealServers runs the command at its defaults on a real
// standalone server and a real 3-primary cluster.
func TestRaceOnRealServers(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			tf := newTestFactory(t)
			out := filepath.Join(t.TempDir(), "race.json")
			if code := tf.execute(t, "race", "--redis", tg.URL, "-o", "json", "--out", out); code != exitcode.OK {
				t.Fatalf("exit %d, stderr %q", code, tf.ErrOut.String())
			}
			if tf.ErrOut.Len() != 0 {
				t.Errorf("stderr is not empty without a terminal: %q", tf.ErrOut.String())
			}
			var res race.Result
			if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
				t.Fatalf("decode -o json: %v\n%s", err, tf.Out.String())
			}
			saved, err := os.ReadFile(out)
			if err != nil || string(saved) != tf.Out.String() {
				t.Errorf("--out file differs from -o json output (read error %v)", err)
			}
			if res.Kind != "race" || res.Version != 2 || res.Verdict != "pass" || res.Concurrency != 200 || res.Limit != 10 || res.Trials != 3 {
				t.Errorf("document kind %q version %d verdict %q concurrency %d limit %d trials %d", res.Kind, res.Version, res.Verdict, res.Concurrency, res.Limit, res.Trials)
			}
			if res.Server.Mode != map[string]string{"standalone": "standalone", "cluster": "cluster"}[tg.Name] {
				t.Errorf("server mode %q on %s", res.Server.Mode, tg.Name)
			}
			for _, s := range res.Strategies {
				for i, a := range s.Allowed {
					switch s.Name {
					case race.Naive:
						if a < 50 {
							t.Errorf("naive admitted %d in trial %d, want at least 50", a, i+1)
						}
					case race.Watch, race.Incr, race.Script:
						if a != 10 {
							t.Errorf("%s admitted %d in trial %d, want exactly 10", s.Name, a, i+1)
						}
					}
				}
			}
			if left := leftKeys(t, tg, res.RunID); len(left) > 0 {
				t.Errorf("keys left after the run: %v", left)
			}
		})
	}
}

func TestRaceTextReport(t *testing.T) {
	tg := redistest.Standalone(t)
	tf := newTestFactory(t)
	if code := tf.execute(t, "race", "--redis", tg.URL, "--trials", "1", "--strategies", "naive,script"); code != exitcode.OK {
		t.Fatalf("exit %d, stderr %q", code, tf.ErrOut.String())
	}
	lines := strings.Split(tf.Out.String(), "\n")
	if !regexp.MustCompile(`^naive GET\+SET admitted \d+ of 200; Lua script admitted 10 of 200$`).MatchString(lines[0]) {
		t.Errorf("first line = %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "server: redis ") || !strings.Contains(lines[1], "standalone") {
		t.Errorf("second line = %q, want the server line", lines[1])
	}
	if !strings.Contains(tf.Out.String(), "verdict: PASS") {
		t.Errorf("no PASS verdict:\n%s", tf.Out.String())
	}
}

func TestRaceUserScriptOverAdmits(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "always.lua")
			if err := os.WriteFile(script, []byte("return {1}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tf := newTestFactory(t)
			code := tf.execute(t, "race", "--redis", tg.URL, "--script", script, "--strategies", "incr", "--trials", "2", "-o", "json")
			if code != exitcode.Failed {
				t.Fatalf("exit %d, want 1 (stderr %q)", code, tf.ErrOut.String())
			}
			stderr := tf.ErrOut.String()
			if !strings.Contains(stderr, "over-admission: always.lua admitted 200 of 200 with limit 10") || strings.Contains(stderr, "INCR") {
				t.Errorf("stderr %q does not name always.lua alone", stderr)
			}
			var res race.Result
			if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if res.Verdict != "fail" || len(res.Failures()) != 1 || strings.Count(res.Failures()[0], "over-admission") != 2 {
				t.Errorf("verdict %q failures %q, want fail with one check naming both trials", res.Verdict, res.Failures())
			}
			if left := leftKeys(t, tg, res.RunID); len(left) > 0 {
				t.Errorf("keys left after the run: %v", left)
			}
		})
	}
}

func TestRaceEmbedded(t *testing.T) {
	tf := newTestFactory(t)
	// The in-process server runs 200 concurrent Lua calls one at a time,
	// slowly under -race on a busy machine: a generous command timeout.
	if code := tf.execute(t, "race", "--redis", "embedded", "--redis-timeout", "30s"); code != exitcode.OK {
		t.Fatalf("exit %d, stderr %q", code, tf.ErrOut.String())
	}
	out := tf.Out.String()
	if !strings.Contains(out, "server: embedded miniredis") {
		t.Errorf("report does not say it ran on the embedded server:\n%s", out)
	}
	for _, want := range []string{"WATCH/MULTI admitted 10 of 200", "INCR admitted 10 of 200", "Lua script admitted 10 of 200", "verdict: PASS"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasPrefix(tf.ErrOut.String(), "notice: ") {
		t.Errorf("stderr %q, want the embedded notice only", tf.ErrOut.String())
	}
}

// TestRaceServerLost: a dedicated server stops after the command connected
// and before it races: exit 3 with one line naming the server, not a
// failed verdict.
func TestRaceServerLost(t *testing.T) {
	redistest.Require(t)
	for _, strategies := range []string{"naive", "incr,script"} {
		t.Run(strategies, func(t *testing.T) {
			sb, err := sandbox.Start(context.Background(), sandbox.Config{})
			if err != nil {
				t.Fatalf("start server: %v", err)
			}
			t.Cleanup(func() { _ = sb.Stop() })
			tf := newTestFactory(t)
			open := tf.Redis
			tf.Redis = func(ctx context.Context) (*redisconn.Conn, error) {
				conn, err := open(ctx)
				if serr := sb.Stop(); serr != nil {
					t.Errorf("stop: %v", serr)
				}
				return conn, err
			}
			code := tf.execute(t, "race", "--redis", sb.URL, "--strategies", strategies, "--concurrency", "20", "-o", "json")
			stderr := tf.ErrOut.String()
			if code != exitcode.Unreachable || !strings.Contains(stderr, "redis at "+sb.Addrs[0]+" did not answer") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 3 and one line naming %s", code, stderr, sb.Addrs[0])
			}
			if tf.Out.Len() != 0 {
				t.Errorf("a report was written for a run that could not race:\n%s", tf.Out.String())
			}
		})
	}
}

// TestRaceScriptUnderAdmission: on a real standalone server and a real
// cluster, a --script that admits nothing is a failed check (exit 1) that
// names the script and the count, not a PASS.
func TestRaceScriptUnderAdmission(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			for name, src := range map[string]string{"nil.lua": "return nil\n", "refuse.lua": "return {0, 0}\n"} {
				script := filepath.Join(t.TempDir(), name)
				if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				tf := newTestFactory(t)
				code := tf.execute(t, "race", "--redis", tg.URL, "--script", script, "--strategies", "none", "--trials", "1")
				stderr := tf.ErrOut.String()
				if code != exitcode.Failed || !strings.Contains(stderr, "under-admission: "+name+" admitted 0 of 200 with limit 10") || strings.Count(stderr, "\n") != 1 {
					t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line naming the under-admission", name, code, stderr)
				}
				if !strings.Contains(tf.Out.String(), "FAIL") {
					t.Errorf("%s: report does not fail:\n%s", name, tf.Out.String())
				}
			}
		})
	}
}

// TestRaceHelpExamples runs every 'ratelimit race' line of the command's
// --help examples on a real standalone server and a real cluster, with
// the scripts they name exported by 'ratelimit scripts --export': each
// must pass, and a --script must admit exactly the limit in every trial
// (the old example's "{limit} 1" for the fixed-window script admitted 1).
func TestRaceHelpExamples(t *testing.T) {
	dir := t.TempDir()
	if code := newTestFactory(t).execute(t, "scripts", "--export", dir); code != exitcode.OK {
		t.Fatalf("scripts --export: exit %d", code)
	}
	var examples [][]string
	for _, line := range strings.Split(newRaceCmd(newTestFactory(t).Factory, nil).Example, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "ratelimit race") {
			continue
		}
		args, err := cluster.SplitArgs(line)
		if err != nil {
			t.Fatalf("example %q: %v", line, err)
		}
		examples = append(examples, args[2:])
	}
	if len(examples) < 4 {
		t.Fatalf("%d race examples in --help, want at least 4", len(examples))
	}
	scripts := 0
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		for _, ex := range examples {
			t.Run(tg.Name+"/"+strings.Join(ex, " "), func(t *testing.T) {
				args := append([]string{}, ex...)
				hasRedis, limit := false, int64(race.DefaultLimit)
				for i := 0; i < len(args); i++ {
					switch {
					case args[i] == "--redis":
						args[i+1], hasRedis = tg.URL, true
					case args[i] == "--concurrency":
						// thousands of connections do not fit a shared test machine
						if n, _ := strconv.Atoi(args[i+1]); n > 1000 {
							t.Skipf("--concurrency %d is more than this test opens", n)
						}
					case args[i] == "--limit":
						limit, _ = strconv.ParseInt(args[i+1], 10, 64)
					case args[i] == "--out":
						args[i+1] = filepath.Join(t.TempDir(), args[i+1])
					case args[i] == "--script":
						p := filepath.Join(dir, args[i+1])
						if _, err := os.Stat(p); err != nil {
							t.Fatalf("example names --script %s, which 'ratelimit scripts --export' does not write", args[i+1])
						}
						args[i+1] = p
						scripts++
					case args[i] == "-o" && args[i+1] != "json":
						t.Fatalf("example sets -o %s; this test reads -o json", args[i+1])
					}
				}
				if !hasRedis {
					args = append(args, "--redis", tg.URL)
				}
				if !slices.Contains(args, "-o") {
					args = append(args, "-o", "json")
				}
				tf := newTestFactory(t)
				code := tf.execute(t, append([]string{"race"}, args...)...)
				if code != exitcode.OK {
					t.Fatalf("exit %d, stderr %q", code, tf.ErrOut.String())
				}
				var res race.Result
				if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
					t.Fatalf("decode: %v", err)
				}
				if !res.Pass() {
					t.Errorf("example failed: %v", res.Failures())
				}
				for _, s := range res.Strategies {
					for i, a := range s.Allowed {
						// a script judged by its model (--expect) may refill during a trial
						if race.ExactExpected(s.Name) && len(s.Expected) == 0 && int64(a) != min(limit, int64(res.Concurrency)) {
							t.Errorf("%s admitted %d in trial %d, want exactly %d", s.Label, a, i+1, limit)
						}
					}
				}
				if left := leftKeys(t, tg, res.RunID); len(left) > 0 {
					t.Errorf("keys left after the run: %v", left)
				}
			})
		}
	}
	if scripts == 0 {
		t.Errorf("no example with --script was run")
	}
}

// TestRaceACL: as an ACL user allowed only race.ACL (and, on a cluster,
// race.ClusterACL), race passes on a real standalone server and a real
// cluster; without +incr it exits 3 with one line naming the rule to add.
// The help lists every rule.
func TestRaceACL(t *testing.T) {
	help := newRaceCmd(newTestFactory(t).Factory, nil).Long
	for _, r := range append(race.ACL(), race.ClusterACL...) {
		if !strings.Contains(help, " "+r) {
			t.Errorf("race --help does not list the ACL rule %s", r)
		}
	}
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			rules := race.ACL()
			if tg.Name == "cluster" {
				rules = append(rules, race.ClusterACL...)
			}
			tf := newTestFactory(t)
			url := redistest.ACLUser(t, tg, rules...)
			if code := tf.execute(t, "race", "--redis", url, "--trials", "1", "-o", "json"); code != exitcode.OK {
				t.Fatalf("minimal ACL: exit %d, stderr %q", code, tf.ErrOut.String())
			}
			var res race.Result
			if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil || res.Verdict != "pass" {
				t.Fatalf("minimal ACL: verdict %q (%v)", res.Verdict, err)
			}
			tf = newTestFactory(t)
			url = redistest.ACLUser(t, tg, slices.DeleteFunc(slices.Clone(rules), func(r string) bool { return r == "+incr" })...)
			code := tf.execute(t, "race", "--redis", url, "--trials", "1", "--strategies", "incr")
			stderr := tf.ErrOut.String()
			if code != exitcode.Unreachable || !strings.Contains(stderr, "NOPERM") || !strings.Contains(stderr, "add +incr to its rules") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("without +incr: exit %d, stderr %q; want exit 3 and one line naming +incr", code, stderr)
			}
			if strings.Contains(stderr, url) || strings.Contains(stderr, "@") {
				t.Errorf("stderr %q shows the URL with its password", stderr)
			}
			t.Logf("without +incr: %s", strings.TrimSpace(stderr))
		})
	}
}

// TestRaceSingularCounts: one goroutine and one trial read "1 goroutine",
// "1 trial" in text and Markdown, not "1 goroutines", "1 trials".
func TestRaceSingularCounts(t *testing.T) {
	for _, o := range []string{"text", "markdown"} {
		tf := newTestFactory(t)
		code := tf.execute(t, "race", "--redis", "embedded", "--redis-timeout", "30s", "--concurrency", "1", "--limit", "1", "--trials", "1", "-o", o)
		// naive does not over-admit with one goroutine: a note, not a failure
		if code != exitcode.OK {
			t.Fatalf("-o %s: exit %d, stderr %q", o, code, tf.ErrOut.String())
		}
		out := tf.Out.String()
		if !strings.Contains(out, "1 goroutine at one barrier, limit 1, 1 trial, keys ") || strings.Contains(out, "1 goroutines") || strings.Contains(out, "1 trials") {
			t.Errorf("-o %s: report lacks '1 goroutine ... 1 trial':\n%s", o, out)
		}
	}
}
