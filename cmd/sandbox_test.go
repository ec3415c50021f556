package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestSandboxClusterForDuration(t *testing.T) {
	t.Parallel()
	redistest.Require(t)
	tf := newTestFactory(t)
	out := &redistest.Buffer{}
	tf.IO.Out = out
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), tf.Factory, []string{"sandbox", "--topology", "cluster", "--for", "3s", "-o", "json"})
	}()
	var doc sandboxDoc
	deadline := time.Now().Add(20 * time.Second)
	for json.Unmarshal([]byte(out.String()), &doc) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("no sandbox document within 20s; stdout %q", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if doc.Kind != "sandbox" || !doc.Cluster || len(doc.Addrs) != 3 || !strings.HasPrefix(doc.URL, "redis://127.0.0.1:") {
		t.Fatalf("sandbox document = %+v, want a 3-node loopback cluster", doc)
	}
	opt, err := redis.ParseURL(doc.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	info, err := c.ClusterInfo(context.Background()).Result()
	c.Close()
	if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_size:3") {
		t.Fatalf("CLUSTER INFO on %s = %q, %v", doc.URL, info, err)
	}
	select {
	case code := <-done:
		if code != exitcode.OK {
			t.Fatalf("sandbox exit = %d, stderr %q", code, tf.ErrOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sandbox --for 3s did not return")
	}
	if _, err := os.Stat(doc.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s still exists (%v)", doc.Dir, err)
	}
	for _, a := range doc.Addrs {
		if conn, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
			conn.Close()
			t.Errorf("a server still listens on %s after sandbox returned", a)
		}
	}
}

// sandboxLeft lists the sandbox directories in the test's TMPDIR.
func sandboxLeft(t *testing.T) []string {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(os.TempDir(), "ratelimit-sandbox-*"))
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// oneErrorLine checks that stderr is exactly one "error: " line holding want.
func oneErrorLine(t *testing.T, args []string, stderr string, want string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "error: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("ratelimit %s: stderr %q, want one error line containing %q", strings.Join(args, " "), stderr, want)
	}
}

// TestSandboxRefusesServerArgs: arguments that would break the sandbox
// are refused with exit 2 before any server runs (before the fix
// --daemonize yes left a daemon behind and blamed "another server").
func TestSandboxRefusesServerArgs(t *testing.T) {
	redistest.Require(t)
	t.Setenv("TMPDIR", t.TempDir())
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--server-arg=--daemonize", "--server-arg=yes"}, `"--daemonize"`},
		{[]string{"--server-arg=--daemonize yes"}, `"--daemonize yes"`},
		{[]string{"--server-arg=daemonize", "--server-arg=yes"}, `"daemonize"`},
		{[]string{"--server-arg=--DaemonIze", "--server-arg=YES"}, `"--DaemonIze"`},
		{[]string{"--server-arg=--", "--server-arg=daemonize", "--server-arg=yes"}, `"--"`},
		{[]string{"--server-arg=--port", "--server-arg=6379"}, "--port-base"},
		{[]string{"--server-arg=--bind", "--server-arg=0.0.0.0"}, `"--bind"`},
		{[]string{"--topology", "cluster", "--server-arg=--cluster-config-file", "--server-arg=/tmp/x.conf"}, `"--cluster-config-file"`},
		{[]string{"--server-arg=--replicaof", "--server-arg=10.0.0.1", "--server-arg=6379"}, `"--replicaof"`},
		{[]string{"--server-arg=--include", "--server-arg=/etc/redis/redis.conf"}, `"--include"`},
		{[]string{"--server-arg=--save", "--server-arg=60 1"}, "persistence"},
		{[]string{"--server-arg=--appendonly", "--server-arg=yes"}, "persistence"},
		{[]string{"--server-arg=--protected-mode", "--server-arg=no"}, `"--protected-mode"`},
		{[]string{"--server-arg=--maxclients 1\ndaemonize yes"}, "line break"},
	} {
		tf := newTestFactory(t)
		args := append([]string{"sandbox", "--for", "1ms"}, tt.args...)
		if code := tf.execute(t, args...); code != exitcode.Usage {
			t.Errorf("ratelimit %q = exit %d, want %d; stderr %q", args, code, exitcode.Usage, tf.ErrOut.String())
			continue
		}
		oneErrorLine(t, args, tf.ErrOut.String(), tt.want)
		if tf.Out.Len() > 0 {
			t.Errorf("ratelimit %q printed %q, want nothing on stdout", args, tf.Out.String())
		}
	}
	if left := sandboxLeft(t); len(left) > 0 {
		t.Errorf("refused sandboxes left %v", left)
	}
}

// TestSandboxUsageErrors: bad counts, ports, formats and flags sandbox
// does not use are refused up front with exit 2.
func TestSandboxUsageErrors(t *testing.T) {
	redistest.Require(t)
	t.Setenv("TMPDIR", t.TempDir())
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--primaries", "5"}, "--primaries needs --topology cluster"},
		{[]string{"--replicas", "1"}, "--replicas needs --topology cluster"},
		{[]string{"--topology", "cluster", "--primaries", "1000"}, "at most 16"},
		{[]string{"--topology", "cluster", "--replicas", "100"}, "at most 5"},
		{[]string{"--topology", "cluster", "--primaries", "16", "--replicas", "4"}, "at most 64"},
		{[]string{"--topology", "cluster", "--primaries", "2"}, "at least 3"},
		{[]string{"--port-base", "-1"}, "--port-base"},
		{[]string{"--port-base", "80"}, "--port-base"},
		{[]string{"--port-base", "65536"}, "--port-base"},
		{[]string{"--topology", "cluster", "--port-base", "55534"}, "between 1024 and 55533"},
		{[]string{"--start-timeout", "0s"}, "--start-timeout"},
		{[]string{"--for", "-1s"}, "--duration must not be negative"}, // --for is an alias
		{[]string{"--duration", "-1s"}, "--duration must not be negative"},
		{[]string{"--redis", "redis://127.0.0.1:1"}, "drop --redis"},
		{[]string{"--tls-skip-verify"}, "drop --tls-skip-verify"},
		{[]string{"--redis-timeout", "5s"}, "drop --redis-timeout"},
		{[]string{"-o", "markdown"}, "text, json"},
		{[]string{"-o", "junit"}, "text, json"},
	} {
		tf := newTestFactory(t)
		args := append([]string{"sandbox", "--for", "1ms"}, tt.args...)
		if code := tf.execute(t, args...); code != exitcode.Usage {
			t.Errorf("ratelimit %q = exit %d, want %d; stderr %q", args, code, exitcode.Usage, tf.ErrOut.String())
			continue
		}
		oneErrorLine(t, args, tf.ErrOut.String(), tt.want)
	}
	if left := sandboxLeft(t); len(left) > 0 {
		t.Errorf("refused sandboxes left %v", left)
	}
}

// TestSandboxServerExitReason: a server that exits at start is reported
// in its own words, on one line, with exit 2.
func TestSandboxServerExitReason(t *testing.T) {
	redistest.Require(t)
	t.Setenv("TMPDIR", t.TempDir())
	for _, extra := range [][]string{nil, {"--topology", "cluster"}} {
		tf := newTestFactory(t)
		args := append([]string{"sandbox", "--for", "1ms", "--server-arg=--maxmemory-policy", "--server-arg=nonsense"}, extra...)
		if code := tf.execute(t, args...); code != exitcode.Usage {
			t.Fatalf("ratelimit %q = exit %d, want %d; stderr %q", args, code, exitcode.Usage, tf.ErrOut.String())
		}
		oneErrorLine(t, args, tf.ErrOut.String(), `redis-server exited at start: maxmemory-policy "nonsense": argument(s) must be one of`)
	}
	if left := sandboxLeft(t); len(left) > 0 {
		t.Errorf("failed sandboxes left %v", left)
	}
}

// TestSandboxStartTimeout: the start timeout covers the whole start of a
// cluster with replicas; past it sandbox exits 3 and leaves nothing.
func TestSandboxStartTimeout(t *testing.T) {
	redistest.Require(t)
	t.Setenv("TMPDIR", t.TempDir())
	tf := newTestFactory(t)
	args := []string{"sandbox", "--topology", "cluster", "--replicas", "1", "--start-timeout", "1ns", "-o", "json"}
	if code := tf.execute(t, args...); code != exitcode.Unreachable {
		t.Fatalf("ratelimit %q = exit %d, want %d; stderr %q", args, code, exitcode.Unreachable, tf.ErrOut.String())
	}
	oneErrorLine(t, args, tf.ErrOut.String(), "sandbox of 6 nodes did not start within 1ns")
	if tf.Out.Len() > 0 {
		t.Errorf("a sandbox that did not start printed %q", tf.Out.String())
	}
	if left := sandboxLeft(t); len(left) > 0 {
		t.Errorf("a timed-out sandbox left %v", left)
	}
}

// TestSandboxHelpListsItsFormats: sandbox's -o offers only text and json,
// and its help states the ceilings and what --server-arg refuses.
func TestSandboxHelpListsItsFormats(t *testing.T) {
	tf := newTestFactory(t)
	if code := tf.execute(t, "sandbox", "--help"); code != exitcode.OK {
		t.Fatalf("sandbox --help = exit %d", code)
	}
	help := tf.Out.String()
	var oLine string
	for l := range strings.Lines(help) {
		if strings.Contains(l, "-o, --output") {
			oLine = l
		}
	}
	if !strings.Contains(oLine, "text") || !strings.Contains(oLine, "json") || strings.Contains(oLine, "markdown") || strings.Contains(oLine, "junit") {
		t.Errorf("sandbox --help -o line = %q, want only text and json", oLine)
	}
	for _, want := range []string{"at most 16 primaries, 5 replicas per primary and 64 nodes", "daemonize", "protected-mode", "--start-timeout"} {
		if !strings.Contains(help, want) {
			t.Errorf("sandbox --help lacks %q", want)
		}
	}
}

// TestSandboxStartLine: the start line says how long the sandbox runs,
// "for 1s (or until Ctrl-C)", not "running until 1s".
func TestSandboxStartLine(t *testing.T) {
	redistest.Require(t)
	tf := newTestFactory(t)
	if code := tf.execute(t, "sandbox", "--for", "1s"); code != exitcode.OK {
		t.Fatalf("sandbox --for 1s exit %d, stderr %q", code, tf.ErrOut.String())
	}
	if errOut := tf.ErrOut.String(); !strings.Contains(errOut, "; running for 1s (or until Ctrl-C)\n") || strings.Contains(errOut, "until 1s") {
		t.Errorf("sandbox start line = %q, want it to say 'running for 1s (or until Ctrl-C)'", errOut)
	}
	if !strings.HasPrefix(tf.Out.String(), "redis://127.0.0.1:") {
		t.Errorf("stdout = %q, want the URL", tf.Out.String())
	}
}

func TestRunningFor(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "until Ctrl-C"},
		{20 * time.Second, "for 20s (or until Ctrl-C)"},
		{time.Minute, "for 1m (or until Ctrl-C)"},
		{90 * time.Second, "for 1m30s (or until Ctrl-C)"},
		{time.Hour, "for 1h (or until Ctrl-C)"},
		{time.Hour + 30*time.Minute, "for 1h30m (or until Ctrl-C)"},
		{time.Hour + 30*time.Second, "for 1h0m30s (or until Ctrl-C)"},
		{500 * time.Millisecond, "for 500ms (or until Ctrl-C)"},
		{10 * time.Minute, "for 10m (or until Ctrl-C)"},
	} {
		if got := runningFor(tt.d); got != tt.want {
			t.Errorf("runningFor(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
