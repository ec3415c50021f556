package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func pingWithin(addr string, d time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: d, ReadTimeout: d, ContextTimeoutEnabled: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Ping(ctx).Err()
}

func TestSuspendResume(t *testing.T) {
	needServer(t)
	sb, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop()
	n := sb.Nodes[0]
	if sb.Node(n.Addr) != n || sb.Node("127.0.0.1:1") != nil {
		t.Fatalf("Node(%s) does not find the sandbox's node, or Node finds one on port 1", n.Addr)
	}
	if err := n.Suspend(); err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	if err := pingWithin(n.Addr, 300*time.Millisecond); err == nil {
		t.Fatal("a suspended server answered PING")
	}
	if err := n.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := pingWithin(n.Addr, time.Second); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
	if err := sb.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := n.Suspend(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Suspend after Stop = %v, want ErrNotRunning", err)
	}
}

// TestRestartClusterNode: a restarted node is a new process on the same
// port with the same cluster identity, the cluster is whole again, and
// Stop leaves neither process behind.
func TestRestartClusterNode(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	sb, err := Start(ctx, Config{Primaries: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop()
	n := sb.Nodes[1]
	c := redis.NewClient(&redis.Options{Addr: n.Addr})
	defer c.Close()
	id, err := c.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	oldPID := n.PID()
	// a suspended node is killed and restarted too
	if err := n.Suspend(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Restart(ctx, n); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if n.PID() == oldPID || !n.Running() {
		t.Fatalf("after Restart pid %d (was %d), running %v; want a new running process", n.PID(), oldPID, n.Running())
	}
	if err := syscall.Kill(oldPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("old pid %d still exists: %v", oldPID, err)
	}
	if pid, ok := readPID(filepath.Join(n.dir, serverFile)); !ok || pid != n.PID() {
		t.Errorf("server.pid = %d, %v; want %d", pid, ok, n.PID())
	}
	again, err := c.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil || again != id {
		t.Errorf("CLUSTER MYID after restart = %q, %v; want %q", again, err, id)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := waitClusterOK(wctx, c, len(sb.Nodes)); err != nil {
		t.Errorf("after restart: %v", err)
	}
	newPID := n.PID()
	if err := sb.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(newPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("restarted pid %d still exists after Stop: %v", newPID, err)
	}
	other := &Node{Addr: "127.0.0.1:1"}
	if err := sb.Restart(ctx, other); !errors.Is(err, ErrConfig) {
		t.Errorf("Restart(a node of no sandbox) = %v, want ErrConfig", err)
	}
}

func TestOwns(t *testing.T) {
	sb := &Sandbox{Dir: "/tmp/ratelimit-sandbox-1"}
	for path, want := range map[string]bool{
		"/tmp/ratelimit-sandbox-1/node-0/redis.sock": true,
		"/tmp/ratelimit-sandbox-1/x":                 true,
		"/tmp/ratelimit-sandbox-1":                   false,
		"/tmp/ratelimit-sandbox-1/../x.sock":         false,
		"/tmp/ratelimit-sandbox-10/redis.sock":       false,
		"ratelimit-sandbox-1/redis.sock":             false,
	} {
		if got := sb.Owns(path); got != want {
			t.Errorf("Owns(%q) = %v, want %v", path, got, want)
		}
	}
	if (&Sandbox{}).Owns("/x") {
		t.Error("a sandbox without a directory owns /x")
	}
}
