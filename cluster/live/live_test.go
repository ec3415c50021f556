package live

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNotCluster(t *testing.T) {
	s := redistest.Standalone(t)
	ctx := testCtx(t)
	if _, err := LoadTopology(ctx, s.Client, false); !errors.Is(err, ErrNotCluster) {
		t.Errorf("LoadTopology on a standalone server: %v, want ErrNotCluster", err)
	}
	if _, err := ServerSlots(ctx, s.Client, []string{"a"}); !errors.Is(err, ErrNotCluster) {
		t.Errorf("ServerSlots on a standalone server: %v, want ErrNotCluster", err)
	}
}

// TestLoadTopologyACL: an ACL user that may run CLUSTER SLOTS but not
// CLUSTER SHARDS still gets the topology (from CLUSTER SLOTS), on the real
// cluster; one that may run neither gets the NOPERM error.
func TestLoadTopologyACL(t *testing.T) {
	c := redistest.Cluster(t)
	ctx := testCtx(t)
	open := func(rules ...string) redis.UniversalClient {
		url := redistest.ACLUser(t, c, rules...)
		opts, err := redis.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		cl := redis.NewClient(opts)
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	top, err := LoadTopology(ctx, open("+cluster|slots"), false)
	if err != nil || top.Source != "CLUSTER SLOTS" || len(top.Shards) != 3 || top.Uncovered() != 0 {
		t.Fatalf("LoadTopology without +cluster|shards = %+v, %v; want the map from CLUSTER SLOTS", top, err)
	}
	if _, err := LoadTopology(ctx, open("+ping"), false); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("LoadTopology with neither = %v, want NOPERM", err)
	}
}

func TestRunOnServers(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			srv := tg.Server
			keys := []string{"rl:{user:42}:tb", "somekey", ""}
			res, err := Run(t.Context(), Options{Options: cluster.Options{Keys: keys}, Client: tg.Client, Server: &srv})
			if err != nil {
				t.Fatal(err)
			}
			_, verr := Run(t.Context(), Options{Options: cluster.Options{Keys: keys}, Client: tg.Client, Server: &srv, Verify: true})
			if tg.Name != "cluster" {
				if res.Notice == "" || res.Keys[0].Node != "" || !strings.Contains(res.Notice, "not a Redis Cluster") {
					t.Errorf("on %s: notice %q node %q", tg.Name, res.Notice, res.Keys[0].Node)
				}
				if !errors.Is(verr, ErrNotCluster) {
					t.Errorf("verify on %s: %v, want ErrNotCluster", tg.Name, verr)
				}
				return
			}
			if verr != nil {
				t.Fatalf("verify: %v", verr)
			}
			if res.Notice != "" || res.Topology == nil {
				t.Fatalf("on cluster: notice %q topology %v", res.Notice, res.Topology)
			}
			for _, k := range res.Keys {
				if k.Node == "" || k.Node != res.Topology.Owner(k.Slot).Primary {
					t.Errorf("key %q slot %d shown on %q", k.Key, k.Slot, k.Node)
				}
			}
		})
	}
}

func TestRunVerifyWithoutClient(t *testing.T) {
	if _, err := Run(t.Context(), Options{Options: cluster.Options{Keys: []string{"a"}}, Verify: true}); !errors.Is(err, ErrNotCluster) {
		t.Errorf("Verify without a client: %v, want ErrNotCluster", err)
	}
}
