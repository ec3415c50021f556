package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// helperEnv makes the test binary act as a process that starts a sandbox,
// prints its directory and server pid, and waits to be killed.
const helperEnv = "RATELIMIT_SANDBOX_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "start" {
		sb, err := Start(context.Background(), Config{})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(sb.Dir, sb.Nodes[0].PID())
		time.Sleep(time.Hour)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// quietBase returns a base port for n nodes whose ports (base to
// base+n-1) and cluster bus ports (+10000) all lie below the kernel's
// ephemeral range (net.ipv4.ip_local_port_range), at random: no outgoing
// connection and no listener on port 0 ever takes a port there. In the
// ephemeral range every connection a test closed holds its port in
// TIME_WAIT for a minute, and a listener cannot bind it (the dialer set
// no SO_REUSEADDR): with 13,000 of them on a machine running the suites,
// a free ephemeral port with its neighbours and bus ports free was found
// at one try in three, and 20 tries could all fail. When
// the range leaves no room below it, a free ephemeral port with room
// above it for the bus ports.
func quietBase(t *testing.T, n int) int {
	t.Helper()
	low := 32768 // Linux's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	const from = 2048 // above the well-known ports and the usual services below
	if hi := low - 10000 - n; hi > from {
		return from + rand.IntN(hi-from)
	}
	for range 100 {
		if p := freePort(t); p+n+10000 <= 65535 {
			return p
		}
	}
	t.Fatal("no free port with room for its cluster bus ports")
	return 0
}

// shutdownOrphan stops a server the test itself left answering on addr
// (only the code before the fix did that) and reports whether there was one.
func shutdownOrphan(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	quiet()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	if c.Ping(context.Background()).Err() != nil {
		return false
	}
	_ = c.Do(context.Background(), "SHUTDOWN", "NOSAVE").Err()
	return true
}

// TestRefusedServerArgsStartNothing: a refused --server-arg fails before
// any server runs. Before the fix "--daemonize yes" left a daemon on the
// port (and the others started a server that broke a promise).
func TestRefusedServerArgsStartNothing(t *testing.T) {
	needServer(t)
	t.Setenv("TMPDIR", t.TempDir())
	for _, args := range [][]string{
		{"--daemonize", "yes"},
		{"--DAEMONIZE", "yes"},
		{"--daemonize yes"},
		{"daemonize", "yes"},
		{"--", "daemonize", "yes"},
		{"--bind", "0.0.0.0"},
		{"--protected-mode", "no"},
		{"--save", "1 1"},
		{"--appendonly", "yes"},
		{"--pidfile", filepath.Join(t.TempDir(), "x.pid")},
		{"--dir", t.TempDir()},
		{"--replicaof", "127.0.0.1", "1"},
	} {
		port := freePort(t)
		var log strings.Builder
		sb, err := Start(context.Background(), Config{PortBase: port, Args: args, Log: &log})
		if sb != nil {
			_ = sb.Stop()
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Start with %q = %v, want a one-line refusal", args, err)
		}
		if log.Len() > 0 {
			t.Errorf("Start with %q ran a server; it wrote %q", args, log.String())
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		for range 10 {
			if shutdownOrphan(addr) {
				t.Errorf("Start with %q left a server answering on %s", args, addr)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*")); len(left) > 0 {
		t.Errorf("refused starts left %v", left)
	}
}

// TestServerExitShowsItsReason: a server that exits at start is reported
// with its own last log line, not a generic message.
func TestServerExitShowsItsReason(t *testing.T) {
	needServer(t)
	_, err := Start(context.Background(), Config{Args: []string{"--maxmemory-policy", "nonsense"}})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("Start with a bad maxmemory-policy = %v, want ErrConfig", err)
	}
	msg := err.Error()
	for _, want := range []string{"redis-server exited at start: ", "maxmemory-policy", "nonsense", "must be one of"} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("Start with a bad maxmemory-policy = %q, want one line with %q", msg, want)
		}
	}

	// a port held by something that is not a server
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = Start(context.Background(), Config{PortBase: port})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Address already in use") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("Start on a taken port = %v, want the server's own bind error", err)
	}
}

func TestValidateCeilingsAndPorts(t *testing.T) {
	bad := []Config{
		{Primaries: MaxPrimaries + 1},
		{Primaries: 1000},
		{Primaries: 3, Replicas: MaxReplicas + 1},
		{Primaries: 3, Replicas: 100},
		{Primaries: 13, Replicas: 4}, // 65 nodes
		{Primaries: -1},
		{Primaries: 2},
		{Replicas: 1},
		{PortBase: -1},
		{PortBase: 1023},
		{PortBase: 65536},
		{Primaries: 3, PortBase: 65535 - 10000 - 1}, // node 2's bus port is 65536
		{StartTimeout: -time.Second},
		{Args: []string{"--daemonize", "yes"}},
	}
	for _, cfg := range bad {
		// a missing binary would be reported only after the checks: the
		// ceilings hold before anything is looked up or started
		cfg.Bin = "no-such-redis-binary"
		err := cfg.Validate()
		if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "no-such-redis-binary") {
			t.Errorf("Validate(%+v) = %v, want a configuration error", cfg, err)
		}
		if _, err := Start(context.Background(), cfg); !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "no-such-redis-binary") {
			t.Errorf("Start(%+v) = %v, want the configuration error before looking for the binary", cfg, err)
		}
	}
	good := []Config{
		{},
		{PortBase: 1024},
		{PortBase: 65535},
		{Primaries: 3, PortBase: 65535 - 10000 - 2},
		{Primaries: MaxPrimaries, Replicas: 3}, // 64 nodes
		{Primaries: 3, Replicas: MaxReplicas},
	}
	for _, cfg := range good {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", cfg, err)
		}
	}
}

// TestStartPastDeadlineStartsNothing: the start timeout is checked before
// every node; before the fix a start whose deadline had passed still
// started every node of the cluster.
func TestStartPastDeadlineStartsNothing(t *testing.T) {
	needServer(t)
	t.Setenv("TMPDIR", t.TempDir())
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	sb, err := launch(ctx, Config{Primaries: 3, Replicas: 1})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start past its deadline = %v, want ErrTimeout", err)
	}
	if sb != nil && len(sb.Nodes) > 0 {
		t.Errorf("Start past its deadline started %d nodes, want none", len(sb.Nodes))
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*")); len(left) > 0 {
		t.Errorf("Start past its deadline left %v", left)
	}
}

// TestFailedStartKillsAtOnce: when a start fails, the servers already
// running are killed, not asked to shut down one after the other with a
// 5 s grace each (which let a large failed start run minutes past its
// timeout), and nothing is left.
func TestFailedStartKillsAtOnce(t *testing.T) {
	needServer(t)
	t.Setenv("TMPDIR", t.TempDir())
	// node 1 of 3 cannot bind: its port is held; the other nodes' ports
	// and cluster bus ports (+10000) are free when the test starts them
	// (one taken by another package's server made node 2 exit 1 by
	// itself instead of being killed)
	var l net.Listener
	var base int
	free := func(port int) bool {
		c, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	}
	for range 100 {
		base = quietBase(t, 3)
		if !free(base) || !free(base+2) || !free(base+10000) || !free(base+10002) {
			continue
		}
		var err error
		if l, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+1))); err == nil {
			break
		}
		l = nil
	}
	if l == nil {
		t.Fatal("no free port pair found")
	}
	defer l.Close()
	sb, err := launch(context.Background(), Config{Primaries: 3, PortBase: base})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "exited at start") {
		t.Fatalf("Start with node 1's port held = %v, want it to exit at start", err)
	}
	if sb == nil || len(sb.Nodes) != 3 {
		t.Fatalf("failed start returned %+v, want its 3 nodes", sb)
	}
	for i, n := range sb.Nodes {
		if n.Running() {
			t.Errorf("node %d still runs after the failed start", i)
			continue
		}
		if i == 1 {
			continue // the one that exited by itself
		}
		var ee *exec.ExitError
		if !errors.As(n.waitErr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("node %d ended with %v, want killed by SIGKILL", i, n.waitErr)
		}
	}
	if _, err := os.Stat(sb.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed start left %s (%v)", sb.Dir, err)
	}
}

// TestStaleDirsRemoved: a start removes the directories that killed runs
// left behind, and nothing else.
func TestStaleDirsRemoved(t *testing.T) {
	needServer(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	// a real sandbox in a process killed with SIGKILL
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe, "-test.run=^$")
	child.Env = append(os.Environ(), helperEnv+"=start")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	_ = child.Process.Kill()
	_ = child.Wait()
	var killedDir string
	var killedServer int
	if _, err2 := fmt.Sscan(line, &killedDir, &killedServer); err != nil || err2 != nil {
		t.Fatalf("helper sandbox printed %q (%v, %v)", line, err, err2)
	}
	// its server dies with it (parent-death signal on Linux); wait for that
	for i := 0; alive(killedServer); i++ {
		if i == 200 {
			_ = syscall.Kill(killedServer, syscall.SIGKILL)
			t.Fatalf("server %d outlived its killed sandbox", killedServer)
		}
		time.Sleep(50 * time.Millisecond)
	}

	deadPID := exitedPID(t)
	live := exec.Command("sleep", "600")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })

	mk := func(name string, owner, server int) string {
		t.Helper()
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "node-0"), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner > 0 {
			if err := writePID(filepath.Join(dir, ownerFile), owner); err != nil {
				t.Fatal(err)
			}
		}
		if server > 0 {
			if err := writePID(filepath.Join(dir, "node-0", serverFile), server); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	fakeStale := mk(dirPrefix+"fake", deadPID, 0)
	liveOwner := mk(dirPrefix+"live", live.Process.Pid, 0)
	liveServer := mk(dirPrefix+"server", deadPID, live.Process.Pid)
	noOwner := mk(dirPrefix+"noowner", 0, 0)
	otherName := mk("other-sandbox-x", deadPID, 0)
	target := mk("target", deadPID, 0)
	link := filepath.Join(tmp, dirPrefix+"link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, dirPrefix+"file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	running, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer running.Stop()

	// the start being tested
	sb, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop()
	for _, gone := range []string{killedDir, fakeStale} {
		if _, err := os.Lstat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale %s still exists after a start (%v)", gone, err)
		}
	}
	for _, kept := range []string{liveOwner, liveServer, noOwner, otherName, target, link, file, running.Dir, sb.Dir} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s was removed, want it kept: %v", kept, err)
		}
	}
	if pid, ok := readPID(filepath.Join(sb.Dir, ownerFile)); !ok || pid != os.Getpid() {
		t.Errorf("owner.pid of a new sandbox = %d, %v; want %d", pid, ok, os.Getpid())
	}
	if pid, ok := readPID(filepath.Join(sb.Dir, "node-0", serverFile)); !ok || pid != sb.Nodes[0].PID() {
		t.Errorf("server.pid of a new sandbox = %d, %v; want %d", pid, ok, sb.Nodes[0].PID())
	}
	if !running.Nodes[0].Running() {
		t.Error("the running sandbox's server was stopped by another start")
	}
}

// exitedPID returns the pid of a process that has exited and been reaped.
func exitedPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}
