package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/cluster/live"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestKeyslotFlags(t *testing.T) {
	tf := newTestFactory(t)
	var got *keyslotOptions
	c := newKeyslotCmd(tf.Factory, func(o *keyslotOptions) error { got = o; return nil })
	c.SetArgs([]string{"-f", "keys.txt", "--verify", "--same-slot", "--groups", "g.txt", "--script", "a.lua",
		"--template", "t:%d", "--range", "1-5", "--split", "", "--into", "4", "--rate", "100/s", "b.lua"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.File != "keys.txt" || !got.Verify || !got.SameSlot || got.Groups != "g.txt" ||
		!slices.Equal(got.Scripts, []string{"a.lua"}) || !slices.Equal(got.Args, []string{"b.lua"}) ||
		got.Template != "t:%d" || got.Range != "1-5" || !got.SplitSet || got.Split != "" || got.Into != 4 ||
		got.Rate.String() != "100/s" {
		t.Errorf("options = %+v", got)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func decodeKeyslot(t *testing.T, out string) cluster.Result {
	t.Helper()
	var res cluster.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not a keyslot document: %v\n%s", err, out)
	}
	if res.Kind != "keyslot" || res.Version != 2 {
		t.Fatalf("document kind %q version %d", res.Kind, res.Version)
	}
	return res
}

func TestKeyslotOffline(t *testing.T) {
	groups := writeFile(t, "groups.txt", "rl:{u:1}:a rl:{u:1}:b\n\"rl:user 2:a\" rl:user:2:b\n")
	keys := writeFile(t, "keys.txt", "rl:{user:42}:tb\r\nfoo{hash_tag}\n")
	empty := writeFile(t, "empty.txt", "\n")
	bad := writeFile(t, "bad.lua", "local k = ARGV[1]\nreturn redis.call('INCR', 'rl:global')\n")
	evalScripts, _ := filepath.Glob("../limiter/*.lua")
	if len(evalScripts) == 0 {
		t.Fatal("no ../limiter/*.lua scripts")
	}
	tests := []struct {
		name    string
		args    []string
		stdin   string
		code    int
		out     []string // substrings of stdout
		errOut  string   // substring of stderr
		verdict string   // with -o json
	}{
		{name: "vectors json", args: []string{"-o", "json", "user:42", "{{}}", ""}, code: 0, verdict: "pass",
			out: []string{`"slot": 15880`, `"slot": 4092`, `"tag": "{"`, `"slot": 0`}},
		{name: "crossslot pair", args: []string{"--same-slot", "rl:user:42:minute", "rl:global:minute"}, code: 1,
			out: []string{"FAIL CROSSSLOT", "put the same text in {} in each key"}, errOut: "CROSSSLOT"},
		{name: "same slot pair", args: []string{"--same-slot", "rl:{user:42}:minute", "rl:{user:42}:day"}, code: 0,
			out: []string{"rl:{user:42}:minute rl:{user:42}:day", "15880", "verdict: PASS"}},
		{name: "groups file", args: []string{"--groups", groups, "-o", "json"}, code: 1, verdict: "fail",
			out: []string{`"crossslot": true`, `"crossslot": false`, `"line": 2`}},
		{name: "keys file crlf", args: []string{"-f", keys, "-o", "json"}, code: 0,
			out: []string{`"key": "rl:{user:42}:tb"`, `"slot": 2515`}},
		{name: "stdin", args: []string{"-f", "-", "extra"}, stdin: "a b\n{x}y\n", code: 0,
			out: []string{`"a b"`, "tag x", "extra"}},
		{name: "project scripts pass", args: append([]string{"--script"}, evalScripts...), code: 0,
			out: []string{"../limiter/token_bucket.lua", "0 findings", "verdict: PASS"}},
		{name: "bad script github", args: []string{"--script", bad, "-o", "github"}, code: 1,
			out: []string{"::error file=" + bad + ",line=2,", "'rl:global' is a string literal"}},
		{name: "junit", args: []string{"--script", bad, "--groups", groups, "-o", "junit"}, code: 1,
			out: []string{`<testsuite name="ratelimit keyslot" tests="3" failures="2" errors="0"`}},
		{name: "template", args: []string{"--template", "rl:{tenant}:%d", "--range", "1-50"}, code: 0,
			out: []string{"50 keys on 1 of 16384 slots", "warning: every key has the hash tag {tenant}"}},
		{name: "split", args: []string{"--split", "rl:{t:7}:tb", "--into", "3", "--rate", "30/s", "-o", "json"}, code: 0,
			out: []string{`"rate": "10/s"`, `"share": "1/3"`}},
		{name: "missing file", args: []string{"-f", "/nonexistent/keys.txt"}, code: 2, errOut: "keys file: open /nonexistent/keys.txt: no such file"},
		{name: "missing groups", args: []string{"--groups", "/nonexistent/g"}, code: 2, errOut: "no such file"},
		{name: "missing script", args: []string{"--script", "/nonexistent/x.lua"}, code: 2, errOut: "read script"},
		{name: "empty key list", args: []string{"-f", empty}, code: 2, errOut: "no keys in"},
		{name: "empty stdin", args: []string{"-f", "-"}, code: 2, errOut: "no keys in -"},
		{name: "nothing", args: nil, code: 2, errOut: "nothing to check"},
		{name: "malformed range", args: []string{"--template", "a:%d", "--range", "1-x"}, code: 2, errOut: "range \"1-x\""},
		{name: "backwards range", args: []string{"--template", "a:%d", "--range", "9-1"}, code: 2, errOut: "backwards"},
		{name: "range at int64 max", args: []string{"--template", "a:%d", "--range", "9223372036854775806-9223372036854775807"}, code: 0,
			out: []string{"2 keys on 2 of 16384 slots"}},
		{name: "one number at int64 max", args: []string{"--template", "a:%d", "--range", "9223372036854775807", "-o", "json"}, code: 0,
			out: []string{`"from": 9223372036854775807`, `"key_count": 1,`}},
		{name: "range too large", args: []string{"--template", "a:%d", "--range", "0-9223372036854775807"}, code: 2,
			errOut: "more than the limit of 10000000; use a sample of at most 10000000, e.g. 0-9999999"},
		{name: "range one over the limit", args: []string{"--template", "a:%d", "--range", "1-10000001"}, code: 2, errOut: "limit of 10000000"},
		{name: "template without verb", args: []string{"--template", "a", "--range", "1-2"}, code: 2, errOut: "no %d"},
		{name: "range alone", args: []string{"--range", "1-2", "k"}, code: 2, errOut: "go together"},
		{name: "into alone", args: []string{"--into", "3"}, code: 2, errOut: "go together"},
		{name: "into too small", args: []string{"--split", "k", "--into", "1"}, code: 2, errOut: "from 2 to 1024"},
		{name: "same slot one key", args: []string{"--same-slot", "k"}, code: 2, errOut: "at least two keys"},
		{name: "bad quoting", args: []string{"--groups", writeFile(t, "q.txt", "\"open\n")}, code: 2, errOut: "q.txt:1: unbalanced quotes"},
		{name: "unsupported output", args: []string{"-o", "yaml", "k"}, code: 2, errOut: "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf := newTestFactory(t)
			tf.IO.In = strings.NewReader(tt.stdin)
			code := tf.execute(t, append([]string{"keyslot"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit = %d, want %d; stderr %q; stdout:\n%s", code, tt.code, tf.ErrOut.String(), tf.Out.String())
			}
			for _, s := range tt.out {
				if !strings.Contains(tf.Out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, tf.Out.String())
				}
			}
			if !strings.Contains(tf.ErrOut.String(), tt.errOut) {
				t.Errorf("stderr = %q, want it to contain %q", tf.ErrOut.String(), tt.errOut)
			}
			if n := strings.Count(strings.TrimSpace(tf.ErrOut.String()), "\n"); tt.code != 0 && n != 0 {
				t.Errorf("stderr has %d lines, want one: %q", n+1, tf.ErrOut.String())
			}
			if tt.verdict != "" {
				if res := decodeKeyslot(t, tf.Out.String()); res.Verdict != tt.verdict {
					t.Errorf("verdict = %q, want %q", res.Verdict, tt.verdict)
				}
			}
		})
	}
}

// TestKeyslotLiveCluster runs the command against the real 3-primary
// cluster: the pinned vectors are verified with CLUSTER KEYSLOT, and each
// key's node answers a GET for it without MOVED.
func TestKeyslotLiveCluster(t *testing.T) {
	c := redistest.Cluster(t)
	keys := []string{"123456789", "somekey", "foo{hash_tag}", "user:42", "rl:{user:42}:tb", "rl:user:42:tb",
		"{}foo", "foo{}{bar}", "foo{{bar}}zap", "{{}}", "{", ""}
	want := []int{12739, 11058, 2515, 15880, 15880, 11836, 9500, 8363, 4015, 4092, 4092, 0}
	tf := newTestFactory(t)
	code := tf.execute(t, append([]string{"keyslot", "--redis", c.URL, "--verify", "-o", "json"}, keys...)...)
	if code != exitcode.OK {
		t.Fatalf("exit = %d, stderr %q", code, tf.ErrOut.String())
	}
	res := decodeKeyslot(t, tf.Out.String())
	if res.Server == nil || res.Server.Mode != "cluster" || res.Topology == nil || len(res.Topology.Shards) != 3 {
		t.Fatalf("server %+v topology %+v", res.Server, res.Topology)
	}
	if res.Verify == nil || res.Verify.Checked != len(keys) || res.Verify.Mismatches != 0 {
		t.Fatalf("verify = %+v", res.Verify)
	}
	ctx := t.Context()
	for i, k := range res.Keys {
		if k.Slot != want[i] || k.ServerSlot == nil || *k.ServerSlot != want[i] {
			t.Errorf("key %q: slot %d, server %v, pinned %d", k.Key, k.Slot, k.ServerSlot, want[i])
		}
		node := redis.NewClient(&redis.Options{Addr: k.Node, MaxRetries: -1})
		err := node.Get(ctx, k.Key).Err()
		_ = node.Close()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Errorf("GET %q on the node shown (%s): %v", k.Key, k.Node, err)
		}
	}
	t.Logf("pinned vectors: %d keys agree with the cluster's CLUSTER KEYSLOT and are served by the node shown", len(keys))
}

// TestKeyslotSameSlotAgreesWithCluster checks the --same-slot verdict of
// both acceptance pairs against what the cluster answers to an EVAL that
// writes both keys.
func TestKeyslotSameSlotAgreesWithCluster(t *testing.T) {
	c := redistest.Cluster(t)
	ctx := t.Context()
	for _, pair := range [][]string{{"rl:user:42:minute", "rl:global:minute"}, {"rl:{user:42}:minute", "rl:{user:42}:day"}} {
		tf := newTestFactory(t)
		code := tf.execute(t, "keyslot", "--redis", c.URL, "--same-slot", pair[0], pair[1])
		redistest.Cleanup(t, c.Client, pair...)
		err := c.Client.Eval(ctx, "redis.call('SET', KEYS[1], 1, 'PX', 60000) redis.call('SET', KEYS[2], 1, 'PX', 60000) return 1", pair).Err()
		cross := err != nil && strings.Contains(err.Error(), "CROSSSLOT")
		if err != nil && !cross {
			t.Fatalf("EVAL %v: %v", pair, err)
		}
		if wantCode := map[bool]int{true: 1, false: 0}[cross]; code != wantCode {
			t.Errorf("keyslot --same-slot %v exit %d, cluster EVAL answered %v", pair, code, err)
		}
		if cross && !strings.Contains(tf.ErrOut.String(), "CROSSSLOT") {
			t.Errorf("stderr %q does not name CROSSSLOT", tf.ErrOut.String())
		}
	}
}

func TestKeyslotNotCluster(t *testing.T) {
	s := redistest.Standalone(t)
	tf := newTestFactory(t)
	if code := tf.execute(t, "keyslot", "--redis", s.URL, "a"); code != 0 {
		t.Fatalf("exit = %d, stderr %q", code, tf.ErrOut.String())
	}
	if !strings.Contains(tf.Out.String(), "is not a Redis Cluster (standalone)") {
		t.Errorf("stdout does not say the server is not a cluster:\n%s", tf.Out.String())
	}
	tf = newTestFactory(t)
	if code := tf.execute(t, "keyslot", "--redis", s.URL, "--verify", "a"); code != 2 {
		t.Fatalf("--verify on standalone: exit %d, want 2", code)
	}
	if msg := strings.TrimSpace(tf.ErrOut.String()); strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "--verify needs a Redis Cluster") {
		t.Errorf("stderr = %q, want one line saying --verify needs a cluster", msg)
	}
	tf = newTestFactory(t)
	tf.Env["REDIS_URL"] = "embedded"
	start := time.Now()
	if code := tf.execute(t, "keyslot", "-o", "json", "a"); code != 0 {
		t.Fatalf("embedded: exit %d, stderr %q", code, tf.ErrOut.String())
	}
	if res := decodeKeyslot(t, tf.Out.String()); res.Notice == "" || res.Keys[0].Node != "" {
		t.Errorf("embedded: notice %q node %q (after %v)", res.Notice, res.Keys[0].Node, time.Since(start))
	}
}

// TestKeyslotInterrupted: Ctrl-C (the command's context ends) stops a long
// --template/--range spread: exit 130, "interrupted", no report.
func TestKeyslotInterrupted(t *testing.T) {
	tf := newTestFactory(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	code := run(ctx, tf.Factory, []string{"keyslot", "--template", "rl:{tenant:%d}:tb", "--range", "1-10000000"})
	if code != exitcode.Interrupted || !strings.Contains(tf.ErrOut.String(), "interrupted") || tf.Out.Len() != 0 {
		t.Errorf("exit %d, stderr %q, stdout %q; want 130, interrupted and no report", code, tf.ErrOut.String(), tf.Out.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("an interrupted spread took %v", d)
	}
}

// TestKeyslotHelpNamesRangeLimit keeps the help in step with cluster.MaxRange.
func TestKeyslotHelpNamesRangeLimit(t *testing.T) {
	c := newKeyslotCmd(newTestFactory(t).Factory, nil)
	limit := strconv.Itoa(cluster.MaxRange)
	if !strings.Contains(c.Long, "at most "+limit+" numbers") || !strings.Contains(c.Flags().Lookup("range").Usage, "at most "+limit) {
		t.Errorf("keyslot help does not name the --range limit %s", limit)
	}
}

// TestKeyslotFiles: files that never end or block (/dev/zero, a FIFO, a
// directory) are refused before reading, a single line longer than 1 MiB
// (100 MiB of NUL bytes in a sparse file, or on stdin) is refused naming
// its line, and blank and # lines of a key file are skipped.
func TestKeyslotFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.txt")
	if err := os.WriteFile(huge, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 100<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	commented := writeFile(t, "keys.txt", "# keys of the tenant scheme\n\nrl:{user:42}:tb\n   \n  # indented comment\r\nfoo{hash_tag}\r\n")
	tests := []struct {
		name   string
		args   []string
		stdin  io.Reader
		code   int
		errOut string
		out    []string
	}{
		{name: "keys from /dev/zero", args: []string{"-f", "/dev/zero"}, code: 2, errOut: "/dev/zero is a character device, not a regular file"},
		{name: "keys from a fifo", args: []string{"-f", fifo}, code: 2, errOut: "is a FIFO, not a regular file"},
		{name: "keys from a directory", args: []string{"-f", dir}, code: 2, errOut: "is a directory"},
		{name: "groups from /dev/zero", args: []string{"--groups", "/dev/zero"}, code: 2, errOut: "is a character device"},
		{name: "groups from a fifo", args: []string{"--groups", fifo}, code: 2, errOut: "is a FIFO"},
		{name: "script /dev/zero", args: []string{"--script", "/dev/zero"}, code: 2, errOut: "is a character device"},
		{name: "script fifo", args: []string{"--script", fifo}, code: 2, errOut: "is a FIFO"},
		{name: "script argument fifo", args: []string{"--script", writeFile(t, "ok.lua", "return 1"), fifo}, code: 2, errOut: "is a FIFO"},
		{name: "script over 1 MiB", args: []string{"--script", huge}, code: 2, errOut: "more than the 1 MiB ceiling"},
		{name: "100 MiB line in a key file", args: []string{"-f", huge}, code: 2, errOut: huge + ":2: line longer than 1 MiB"},
		{name: "100 MiB line in a groups file", args: []string{"--groups", huge}, code: 2, errOut: huge + ":2: line longer than 1 MiB"},
		{name: "100 MiB line on stdin", args: []string{"-f", "-"}, stdin: io.LimitReader(zeroReader{}, 100<<20), code: 2, errOut: "stdin:1: line longer than 1 MiB"},
		{name: "endless stdin", args: []string{"--groups", "-"}, stdin: zeroReader{}, code: 2, errOut: "stdin:1: line longer than 1 MiB"},
		{name: "comments and blank lines skipped", args: []string{"-f", commented, "-o", "json"}, code: 0,
			out: []string{`"key": "rl:{user:42}:tb"`, `"key": "foo{hash_tag}"`}},
		{name: "only comments", args: []string{"-f", writeFile(t, "c.txt", "# nothing\n\n")}, code: 2, errOut: "no keys in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf := newTestFactory(t)
			tf.IO.In = tt.stdin
			if tt.stdin == nil {
				tf.IO.In = strings.NewReader("")
			}
			code := tf.execute(t, append([]string{"keyslot"}, tt.args...)...)
			stderr := tf.ErrOut.String()
			if code != tt.code || !strings.Contains(stderr, tt.errOut) || tt.code != 0 && strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want exit %d and one line with %q", code, stderr, tt.code, tt.errOut)
			}
			for _, s := range tt.out {
				if !strings.Contains(tf.Out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, tf.Out.String())
				}
			}
			if tt.code == 0 {
				if res := decodeKeyslot(t, tf.Out.String()); len(res.Keys) != 2 {
					t.Errorf("%d keys, want 2 (comments and blank lines are no keys): %+v", len(res.Keys), res.Keys)
				}
			}
		})
	}
}

// zeroReader is an endless stream of NUL bytes, as /dev/zero is.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestKeyslotFlagBounds: every numeric flag is checked, over the whole
// range it promises and not beyond.
func TestKeyslotFlagBounds(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		errOut string
		out    string
	}{
		{"range at the top of uint64", []string{"--template", "a:%d", "--range", "18446744073709551610-18446744073709551615", "-o", "json"}, 0, "", `"to": 18446744073709551615`},
		{"one number at the top of uint64", []string{"--template", "a:%d", "--range", "18446744073709551615"}, 0, "", "1 key on 1 of 16384 slots"},
		{"range past uint64", []string{"--template", "a:%d", "--range", "18446744073709551615-18446744073709551616"}, 2, "at most 18446744073709551615", ""},
		{"whole uint64 range", []string{"--template", "a:%d", "--range", "0-18446744073709551615"}, 2, "18446744073709551616 numbers, more than the limit", ""},
		{"reversed range", []string{"--template", "a:%d", "--range", "18446744073709551615-0"}, 2, "backwards", ""},
		{"negative range", []string{"--template", "a:%d", "--range", "-5-3"}, 2, "non-negative", ""},
		{"template too long", []string{"--template", strings.Repeat("k", 1025) + "%d", "--range", "1-2"}, 2, "longer than the limit of 1024", ""},
		{"rate overflowing to Inf", []string{"--split", "k", "--into", "4", "--rate", "1e308/ns"}, 2, "--rate of +Inf requests per second is out of bounds", ""},
		{"rate over the ceiling", []string{"--split", "k", "--into", "4", "--rate", "2e9/s"}, 2, "from 1e-09/s to 1e+09/s", ""},
		{"rate under the floor", []string{"--split", "k", "--into", "4", "--rate", "1e-12/s"}, 2, "from 1e-09/s to 1e+09/s", ""},
		{"rate at the ceiling", []string{"--split", "k", "--into", "4", "--rate", "1e9/s", "-o", "json"}, 0, "", `"rate": "2.5e+08/s"`},
		{"rate zero", []string{"--split", "k", "--into", "4", "--rate", "0/s"}, 2, "greater than 0", ""},
		{"rate without split", []string{"--rate", "10/s", "k"}, 2, "--rate is the total rate", ""},
		{"into 0", []string{"--split", "k", "--into", "0"}, 2, "--into 0: --into must be from 2 to 1024", ""},
		{"into negative", []string{"--split", "k", "--into", "-4"}, 2, "from 2 to 1024", ""},
		{"into 1025", []string{"--split", "k", "--into", "1025"}, 2, "from 2 to 1024", ""},
		{"into huge", []string{"--split", "k", "--into", "99999999999999999999"}, 2, "invalid argument", ""},
		{"into without split", []string{"--into", "0", "k"}, 2, "go together", ""},
		{"split empty key", []string{"--split", "", "--into", "2"}, 2, "--split needs the hot KEY", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf := newTestFactory(t)
			code := tf.execute(t, append([]string{"keyslot"}, tt.args...)...)
			stderr := tf.ErrOut.String()
			if code != tt.code || !strings.Contains(stderr, tt.errOut) || tt.code != 0 && strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want exit %d and one line with %q", code, stderr, tt.code, tt.errOut)
			}
			if !strings.Contains(tf.Out.String(), tt.out) {
				t.Errorf("stdout lacks %q:\n%s", tt.out, tf.Out.String())
			}
		})
	}
}

// TestKeyslotShowsUTF8: keys in valid UTF-8 are shown as they are; control
// bytes (an ANSI escape, a C1 control) and invalid bytes are escaped.
func TestKeyslotShowsUTF8(t *testing.T) {
	tf := newTestFactory(t)
	if code := tf.execute(t, "keyslot", "rl:{über}:tb", "日本", "\x1b[31mred", "nel\u0085", "bad\xff"); code != exitcode.OK {
		t.Fatalf("exit %d, stderr %q", code, tf.ErrOut.String())
	}
	out := tf.Out.String()
	for _, want := range []string{"rl:{über}:tb", "日本", `"\x1b[31mred"`, `"nel\xc2\x85"`, `"bad\xff"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	for _, bad := range []string{`\xc3\xbc`, "\x1b", "\u0085", "\xff"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q:\n%s", bad, out)
		}
	}
}

// TestKeyslotACL: with --redis on a real cluster, an ACL user allowed
// only +ping +info +cluster|slots +cluster|keyslot gets the topology and
// --verify; without +cluster|keyslot, --verify exits 3 naming the rule.
// On a real standalone server +ping +info are enough for the notice.
func TestKeyslotACL(t *testing.T) {
	c := redistest.Cluster(t)
	rules := []string{"+ping", "+info", "+cluster|slots", "+cluster|keyslot"}
	tf := newTestFactory(t)
	url := redistest.ACLUser(t, c, rules...)
	if code := tf.execute(t, "keyslot", "--redis", url, "--verify", "-o", "json", "rl:{user:42}:tb", "a"); code != exitcode.OK {
		t.Fatalf("minimal ACL: exit %d, stderr %q", code, tf.ErrOut.String())
	}
	res := decodeKeyslot(t, tf.Out.String())
	if res.Topology == nil || len(res.Topology.Shards) != 3 || res.Verify == nil || res.Verify.Mismatches != 0 || res.Keys[0].Node == "" {
		t.Errorf("minimal ACL: topology %+v verify %+v keys %+v", res.Topology, res.Verify, res.Keys)
	}
	tf = newTestFactory(t)
	url = redistest.ACLUser(t, c, rules[:3]...)
	code := tf.execute(t, "keyslot", "--redis", url, "--verify", "a")
	stderr := tf.ErrOut.String()
	if code != exitcode.Unreachable || !strings.Contains(stderr, "add +cluster|keyslot") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("without +cluster|keyslot: exit %d, stderr %q; want exit 3 naming +cluster|keyslot", code, stderr)
	}
	t.Logf("without +cluster|keyslot: %s", strings.TrimSpace(stderr))

	s := redistest.Standalone(t)
	tf = newTestFactory(t)
	url = redistest.ACLUser(t, s, "+ping", "+info")
	if code := tf.execute(t, "keyslot", "--redis", url, "a"); code != exitcode.OK || !strings.Contains(tf.Out.String(), "is not a Redis Cluster") {
		t.Errorf("standalone, +ping +info: exit %d, stderr %q, stdout %q", code, tf.ErrOut.String(), tf.Out.String())
	}
}

// TestKeyslotSplitOffline: one proposal per input (the same output twice),
// spread over distinct ranges of the default 3-primary layout, saying that
// placement is unknown, with a note naming the numbers proposed.
func TestKeyslotSplitOffline(t *testing.T) {
	runSplit := func(format string, into int) string {
		tf := newTestFactory(t)
		if code := tf.execute(t, "keyslot", "--split", "rl:{tenant:7}:tb", "--into", strconv.Itoa(into), "-o", format); code != 0 {
			t.Fatalf("exit = %d, stderr %q", code, tf.ErrOut.String())
		}
		return tf.Out.String()
	}
	first, second := runSplit("text", 4), runSplit("text", 4)
	if first != second {
		t.Fatalf("two runs of the same split differ:\n%s\n%s", first, second)
	}
	for _, want := range []string{"sub-key             hashed           slot  default range", "rl:{tenant:7:0}:tb", "rl:{tenant:7:3}:tb",
		"number 0 to 3 (rand(4), or round robin)", "placement unknown (offline)", "4 sub-keys over 3 ranges: 5461-10922 holds 2"} {
		if !strings.Contains(first, want) {
			t.Errorf("split output lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "+rand(") || strings.Contains(first, "SUB-KEY") {
		t.Errorf("split output names numbers it did not propose, or upper-case headers:\n%s", first)
	}
	res := decodeKeyslot(t, runSplit("json", 3))
	sp := res.Split
	ranges := map[string]bool{}
	for _, s := range sp.SubKeys {
		ranges[s.Range] = true
		if s.Node != "" {
			t.Errorf("offline sub-key %+v names a node", s)
		}
	}
	if sp.Placement != "assumed" || len(ranges) != 3 || ranges[""] || sp.MostPerPrimary != 1 {
		t.Errorf("offline 3-way split: placement %q, ranges %v, most per range %d; want 3 distinct default ranges",
			sp.Placement, ranges, sp.MostPerPrimary)
	}
}

// TestKeyslotSplitLiveCluster: on the real 3-primary cluster a 3-way split
// lands on 3 distinct primaries (by the cluster's own CLUSTER KEYSLOT and
// topology), and a 4-way split says one primary holds two and why.
func TestKeyslotSplitLiveCluster(t *testing.T) {
	c := redistest.Cluster(t)
	ctx := t.Context()
	top, err := live.LoadTopology(ctx, c.Client, false)
	if err != nil {
		t.Fatal(err)
	}
	split := func(into int) *cluster.Split {
		tf := newTestFactory(t)
		code := tf.execute(t, "keyslot", "--redis", c.URL, "--split", "rl:{tenant:7}:tb", "--into", strconv.Itoa(into), "-o", "json")
		if code != 0 {
			t.Fatalf("exit = %d, stderr %q", code, tf.ErrOut.String())
		}
		return decodeKeyslot(t, tf.Out.String()).Split
	}
	three := split(3)
	primaries := map[string]bool{}
	for _, s := range three.SubKeys {
		slot, err := c.Client.ClusterKeySlot(ctx, s.Key).Result()
		if err != nil {
			t.Fatal(err)
		}
		owner := top.Owner(int(slot)).Primary
		if int(slot) != s.Slot || owner != s.Node {
			t.Errorf("sub-key %q: shown in slot %d on %s, the cluster says slot %d on %s", s.Key, s.Slot, s.Node, slot, owner)
		}
		primaries[owner] = true
	}
	if len(primaries) != 3 || three.Placement != "cluster" || !strings.Contains(three.Note, "each sub-key is on its own primary") {
		t.Errorf("3-way split on the cluster: primaries %v, placement %q, note %q", primaries, three.Placement, three.Note)
	}
	four := split(4)
	perNode := map[string]int{}
	for _, s := range four.SubKeys {
		perNode[s.Node]++
	}
	if len(perNode) != 3 || four.MostPerPrimary != 2 ||
		!strings.Contains(four.Note, "4 sub-keys over 3 primaries cannot each have their own") || !strings.Contains(four.Note, "holds 2") {
		t.Errorf("4-way split on the cluster: per primary %v, note %q; want one primary holding two, and why", perNode, four.Note)
	}
}

// TestKeyslotSameSlotSharedSegment: keys that share a segment, one of them
// tagged, get a proposal that the cluster accepts in one EVAL.
func TestKeyslotSameSlotSharedSegment(t *testing.T) {
	c := redistest.Cluster(t)
	keys := []string{"rl:{acme}:a", "rl:acme:b"}
	tf := newTestFactory(t)
	if code := tf.execute(t, "keyslot", "--same-slot", keys[0], keys[1], "-o", "json"); code != exitcode.Failed {
		t.Fatalf("exit = %d, want %d; stderr %q", code, exitcode.Failed, tf.ErrOut.String())
	}
	res := decodeKeyslot(t, tf.Out.String())
	const prefix = "put the shared part in {} so the keys hash together: "
	fix := res.Groups[0].Fix
	if !strings.HasPrefix(fix, prefix) {
		t.Fatalf("fix = %q, want a proposal", fix)
	}
	fixed, err := cluster.SplitArgs(strings.TrimPrefix(fix, prefix))
	if err != nil || !slices.Equal(fixed, []string{"rl:{acme}:a", "rl:{acme}:b"}) {
		t.Fatalf("proposal %q (%v), want rl:{acme}:a rl:{acme}:b", fixed, err)
	}
	redistest.Cleanup(t, c.Client, fixed...)
	script := "redis.call('SET', KEYS[1], 1, 'PX', 60000) redis.call('SET', KEYS[2], 1, 'PX', 60000) return 1"
	if err := c.Client.Eval(t.Context(), script, keys).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("EVAL with the keys as given = %v, want CROSSSLOT (the negative control)", err)
	}
	redistest.Cleanup(t, c.Client, keys...)
	if err := c.Client.Eval(t.Context(), script, fixed).Err(); err != nil {
		t.Errorf("EVAL with the proposed keys %q: %v", fixed, err)
	}
}

// TestKeyslotTableAlignment: headers are lower case like every other
// command's; only numbers are right-aligned, text columns start where
// their header does.
func TestKeyslotTableAlignment(t *testing.T) {
	c := redistest.Cluster(t)
	tf := newTestFactory(t)
	if code := tf.execute(t, "keyslot", "--redis", c.URL, "somekey", "rl:{user:42}:tb"); code != 0 {
		t.Fatalf("exit = %d, stderr %q", code, tf.ErrOut.String())
	}
	lines := strings.Split(tf.Out.String(), "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "key ") })
	if at < 0 || at+2 >= len(lines) {
		t.Fatalf("no table with a lower-case header:\n%s", tf.Out.String())
	}
	header := lines[at]
	for _, h := range []string{"hashed", "slot", "node", "replicas"} {
		if !strings.Contains(header, h) {
			t.Errorf("header %q lacks %q", header, h)
		}
	}
	if strings.Contains(header, "KEY ") || strings.Contains(header, "REPLICAS") {
		t.Errorf("header %q is upper case", header)
	}
	for _, row := range lines[at+1 : at+3] {
		// node and replicas are text: each starts in its header's column.
		for _, h := range []string{"node", "replicas"} {
			col := strings.Index(header, h)
			if col <= 0 || col >= len(row) || row[col-1] != ' ' || row[col] == ' ' {
				t.Errorf("column %q starts at %d in %q but not in row %q", h, col, header, row)
			}
		}
		// slot is a number: it ends where its header ends.
		end := strings.Index(header, "slot") + len("slot")
		if row[end-1] == ' ' || row[end] != ' ' {
			t.Errorf("slot column ends at %d in %q but not in row %q", end, header, row)
		}
	}
}
