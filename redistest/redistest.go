// Package redistest gives tests real servers: a standalone redis-server and
// a 3-primary cluster started through package sandbox on free loopback
// ports, shared by all tests of a package run and stopped by Main, plus a
// fresh embedded miniredis per test. When redis-server is missing, tests
// fail if the CI environment variable is set and skip otherwise.
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// Target is one server a test runs against.
type Target struct {
	Name   string // "standalone", "cluster" or "embedded"
	URL    string
	Client redis.UniversalClient
	Server redisconn.Server
	// Mini is the embedded server of an "embedded" target, else nil.
	Mini *miniredis.Miniredis
}

type shared struct {
	once sync.Once
	sb   *sandbox.Sandbox
	err  error
}

var (
	standalone shared
	cluster    shared
)

// Main runs the package's tests and then stops the shared servers. Call it
// from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	for _, s := range []*shared{&standalone, &cluster} {
		if s.sb != nil {
			_ = s.sb.Stop()
		}
	}
	os.Exit(code)
}

// Require fails (under CI) or skips the test when no server binary exists.
func Require(t testing.TB) {
	t.Helper()
	if _, err := sandbox.FindBinary(""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is required when CI is set: %v (scripts/test installs it)", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

func (s *shared) get(t testing.TB, cfg sandbox.Config) *sandbox.Sandbox {
	t.Helper()
	Require(t)
	s.once.Do(func() {
		s.sb, s.err = sandbox.Start(context.Background(), cfg)
	})
	if s.err != nil {
		t.Fatalf("start test server: %v", s.err)
	}
	return s.sb
}

// StandaloneSandbox returns the shared standalone server.
func StandaloneSandbox(t testing.TB) *sandbox.Sandbox {
	t.Helper()
	return standalone.get(t, sandbox.Config{})
}

// ClusterSandbox returns the shared 3-primary cluster.
func ClusterSandbox(t testing.TB) *sandbox.Sandbox {
	t.Helper()
	return cluster.get(t, sandbox.Config{Primaries: 3})
}

// Standalone returns a client to the shared standalone server.
func Standalone(t testing.TB) Target {
	t.Helper()
	return open(t, "standalone", StandaloneSandbox(t).URL)
}

// Cluster returns a cluster client to the shared 3-primary cluster.
func Cluster(t testing.TB) Target {
	t.Helper()
	return open(t, "cluster", ClusterSandbox(t).URL)
}

// Embedded returns a client to a fresh miniredis, stopped at cleanup.
func Embedded(t testing.TB) Target {
	t.Helper()
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatalf("start miniredis: %v", err)
	}
	t.Cleanup(m.Close)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaintNotificationsConfig: redisconn.NoMaintNotifications()})
	t.Cleanup(func() { _ = c.Close() })
	return Target{
		Name:   "embedded",
		URL:    "redis://" + m.Addr(),
		Client: c,
		Server: redisconn.Server{Product: "miniredis", Mode: "embedded", Addr: "embedded", Embedded: true},
		Mini:   m,
	}
}

// All returns the standalone, cluster and embedded targets, in that order.
func All(t testing.TB) []Target {
	t.Helper()
	return []Target{Standalone(t), Cluster(t), Embedded(t)}
}

func open(t testing.TB, name, url string) Target {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := redisconn.Open(ctx, redisconn.Options{URL: url})
	if err != nil {
		t.Fatalf("connect to test %s server %s: %v", name, url, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return Target{Name: name, URL: url, Client: conn.Client, Server: conn.Server}
}

// Key returns a key unique to this test, "test:{<uuid>}:<suffix>". Keys
// from one call share a hash tag only with themselves; use KeysOneSlot for
// several keys that must share a slot.
func Key(t testing.TB, suffix string) string {
	t.Helper()
	return fmt.Sprintf("test:{%s}:%s", uuid.NewString(), suffix)
}

// KeysOneSlot returns n keys "test:{<uuid>}:<i>" sharing one hash tag.
func KeysOneSlot(t testing.TB, n int) []string {
	t.Helper()
	tag := uuid.NewString()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("test:{%s}:%d", tag, i)
	}
	return keys
}

// Cleanup deletes keys on c when the test ends (one DEL per key, so keys of
// different slots work on a cluster too).
func Cleanup(t testing.TB, c redis.UniversalClient, keys ...string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, k := range keys {
			_ = c.Del(ctx, k).Err()
		}
	})
}

// ScanKeys returns every key matching pattern, scanning each primary of a
// cluster client or the one server of a single-node client. Tests use it
// to prove that a run left nothing behind.
func ScanKeys(t testing.TB, c redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
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
		t.Fatalf("ScanKeys: unexpected client %T", c)
	}
	if err != nil {
		t.Fatalf("SCAN MATCH %s: %v", pattern, err)
	}
	return keys
}

// Buffer is a bytes.Buffer safe for a writer goroutine and a reading test.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ACLUser creates an ACL user with a random name and password and the
// given rules (e.g. "+evalsha", "~rl:*") on every node of tg (each primary
// of a cluster), deletes it at cleanup, and returns tg's URL logged in as
// that user. "on", ">password" and "resetkeys"/"-@all" are added; pass
// only what the user may do. The embedded target has no ACL: the test is
// skipped there.
func ACLUser(t testing.TB, tg Target, rules ...string) string {
	t.Helper()
	if tg.Mini != nil {
		t.Skip("miniredis has no ACL")
	}
	name := "rltest-" + uuid.NewString()[:8]
	pass := uuid.NewString()
	args := []any{"ACL", "SETUSER", name, "reset", "on", ">" + pass}
	for _, r := range rules {
		args = append(args, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	each := func(ctx context.Context, fn func(ctx context.Context, c *redis.Client) error) error {
		switch c := tg.Client.(type) {
		case *redis.ClusterClient:
			return c.ForEachShard(ctx, fn)
		case *redis.Client:
			return fn(ctx, c)
		}
		return fmt.Errorf("ACLUser: unexpected client %T", tg.Client)
	}
	if err := each(ctx, func(ctx context.Context, c *redis.Client) error { return c.Do(ctx, args...).Err() }); err != nil {
		t.Fatalf("ACL SETUSER %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = each(ctx, func(ctx context.Context, c *redis.Client) error { return c.Do(ctx, "ACL", "DELUSER", name).Err() })
	})
	u := tg.URL
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		t.Fatalf("ACLUser: target URL %q has no scheme", u)
	}
	return scheme + "://" + name + ":" + pass + "@" + rest
}
