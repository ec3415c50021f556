package sandbox

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func needServer(t *testing.T) {
	t.Helper()
	if _, err := FindBinary(""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is required in CI: %v", err)
		}
		t.Skip(err)
	}
}

func TestStandaloneStartStop(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	sb, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sb.URL, "redis://127.0.0.1:") {
		t.Errorf("URL = %q, want a loopback redis:// URL", sb.URL)
	}
	c := redis.NewClient(&redis.Options{Addr: sb.Addrs[0]})
	defer c.Close()
	if err := c.Set(ctx, "sandbox:probe", "1", time.Minute).Err(); err != nil {
		t.Fatalf("SET on sandbox: %v", err)
	}
	cfg, err := c.ConfigGet(ctx, "save").Result()
	if err != nil || cfg["save"] != "" {
		t.Errorf("CONFIG GET save = %v, %v; want persistence off", cfg, err)
	}
	node := sb.Nodes[0]
	if err := sb.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if node.Running() {
		t.Error("server still running after Stop")
	}
	if _, err := os.Stat(sb.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sandbox dir %s still exists after Stop (stat err %v)", sb.Dir, err)
	}
	if err := sb.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestClusterWithReplicas(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	sb, err := Start(ctx, Config{Primaries: 3, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop()
	if len(sb.Nodes) != 6 {
		t.Fatalf("nodes = %d, want 6", len(sb.Nodes))
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{sb.Addrs[0]}})
	defer c.Close()
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_size:3") {
		t.Fatalf("CLUSTER INFO = %q, %v; want cluster_state:ok and cluster_size:3", info, err)
	}
	for i := range 30 {
		key := "{sandbox}" + string(rune('a'+i))
		if err := c.Set(ctx, key, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET %s through the cluster: %v", key, err)
		}
		c.Del(ctx, key)
	}
}

func TestConfigErrors(t *testing.T) {
	needServer(t)
	for _, cfg := range []Config{{Primaries: 2}, {Primaries: -1}, {Replicas: 1}, {PortBase: 65530, Primaries: 3}} {
		if _, err := Start(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("Start(%+v) = %v, want a configuration error", cfg, err)
		}
	}
	if _, err := FindBinary("no-such-redis-binary"); !errors.Is(err, ErrConfig) {
		t.Error("FindBinary of a missing binary gave no error")
	}
}

func TestPortBaseTakenByAnotherServer(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	first, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop()
	_, err = Start(ctx, Config{PortBase: first.Nodes[0].Port})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "already used by another server") {
		t.Fatalf("Start on a port another server holds = %v, want a configuration error naming it", err)
	}
	if !first.Nodes[0].Running() {
		t.Fatal("the first server was stopped by the second sandbox")
	}
	c := redis.NewClient(&redis.Options{Addr: first.Addrs[0]})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("first server no longer answers: %v", err)
	}
}

func TestBadServerArgIsConfigError(t *testing.T) {
	needServer(t)
	_, err := Start(context.Background(), Config{Args: []string{"--no-such-option", "1"}})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("Start with an unknown server option = %v, want ErrConfig", err)
	}
}
