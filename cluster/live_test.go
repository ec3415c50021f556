package cluster_test

// These tests hold cluster's offline answers (Slot, Tag, CheckGroup,
// Owner, ProposeSplit, SpreadOf) against a real cluster, read through
// package live.

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/cluster/live"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestVectorsOnCluster confirms the pinned vectors with the server.
func TestVectorsOnCluster(t *testing.T) {
	c := redistest.Cluster(t)
	ctx := testCtx(t)
	keys, slots := cluster.SlotVectors()
	got, err := live.ServerSlots(ctx, c.Client, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range keys {
		if got[i] != slots[i] {
			t.Errorf("CLUSTER KEYSLOT %q = %d, pinned vector says %d", key, got[i], slots[i])
		}
		if cluster.Slot(key) != got[i] {
			t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", key, cluster.Slot(key), got[i])
		}
	}
}

// randomKey builds a key of random bytes with '{' and '}' sprinkled at
// random positions, so tags open and close anywhere, or not at all.
func randomKey(r *rand.Rand) string {
	n := r.IntN(24)
	b := make([]byte, n)
	for i := range b {
		switch x := r.IntN(10); {
		case x < 2:
			b[i] = '{'
		case x < 4:
			b[i] = '}'
		case x < 5:
			b[i] = byte(r.IntN(256))
		default:
			b[i] = "abcxyz:0123456789 "[r.IntN(18)]
		}
	}
	return string(b)
}

func TestRandomKeysOnCluster(t *testing.T) {
	c := redistest.Cluster(t)
	ctx := testCtx(t)
	r := rand.New(rand.NewPCG(5, uint64(time.Now().UnixNano())))
	keys := make([]string, 10000)
	positions := map[int]bool{}
	tagged := 0
	for i := range keys {
		keys[i] = randomKey(r)
		if j := strings.IndexByte(keys[i], '{'); j >= 0 {
			positions[j] = true
		}
		if _, ok := cluster.Tag(keys[i]); ok {
			tagged++
		}
	}
	got, err := live.ServerSlots(ctx, c.Client, keys)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, k := range keys {
		if want := got[i]; cluster.Slot(k) != want {
			bad++
			if bad <= 10 {
				t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", k, cluster.Slot(k), want)
			}
		}
	}
	if len(positions) < 20 || tagged < 1000 {
		t.Errorf("random keys cover too little: '{' at %d positions, %d tagged keys", len(positions), tagged)
	}
	t.Logf("%d random keys, %d with a tag, first '{' at %d different positions: %d mismatches",
		len(keys), tagged, len(positions), bad)
}

// TestSameSlotAgreesWithEval runs an EVAL that writes both keys of a group
// on the node that owns the first key, and checks that the server refuses
// with CROSSSLOT exactly when CheckGroup says the group spans slots.
func TestSameSlotAgreesWithEval(t *testing.T) {
	c := redistest.Cluster(t)
	ctx := testCtx(t)
	top, err := live.LoadTopology(ctx, c.Client, false)
	if err != nil {
		t.Fatal(err)
	}
	pairs := [][]string{
		{"rl:user:42:minute", "rl:global:minute"},
		{"rl:{user:42}:minute", "rl:{user:42}:day"},
		{redistest.Key(t, "a"), redistest.Key(t, "b")},
		redistest.KeysOneSlot(t, 2),
	}
	const script = `redis.call('SET', KEYS[1], '1', 'PX', 60000)
redis.call('SET', KEYS[2], '1', 'PX', 60000)
return 1`
	for _, keys := range pairs {
		t.Run(strings.Join(keys, " "), func(t *testing.T) {
			g := cluster.CheckGroup(keys)
			node := redis.NewClient(&redis.Options{Addr: top.Owner(cluster.Slot(keys[0])).Primary})
			t.Cleanup(func() { _ = node.Close() })
			redistest.Cleanup(t, c.Client, keys...)
			err := node.Eval(ctx, script, keys).Err()
			cross := err != nil && strings.HasPrefix(err.Error(), "CROSSSLOT")
			if err != nil && !cross {
				t.Fatalf("EVAL on %v: %v", keys, err)
			}
			if cross != g.Crossslot {
				t.Errorf("CheckGroup(%q).Crossslot = %v, the cluster's EVAL answered %v", keys, g.Crossslot, err)
			}
			if cross && !errors.Is(err, redis.ErrCrossSlot) {
				t.Logf("server error %q is not redis.ErrCrossSlot", err)
			}
		})
	}
}

// TestTopologyServesKeys checks that the node shown for a key serves it: a
// GET through a single-node client to that node answers without MOVED.
func TestTopologyServesKeys(t *testing.T) {
	c := redistest.Cluster(t)
	sb := redistest.ClusterSandbox(t)
	ctx := testCtx(t)
	top, err := live.LoadTopology(ctx, c.Client, false)
	if err != nil {
		t.Fatal(err)
	}
	if top.Source != "CLUSTER SHARDS" || len(top.Shards) != 3 || top.Uncovered() != 0 {
		t.Fatalf("topology from %s: %d shards, %d slots uncovered; want CLUSTER SHARDS, 3, 0",
			top.Source, len(top.Shards), top.Uncovered())
	}
	for _, sh := range top.Shards {
		if !slices.Contains(sb.Addrs, sh.Primary) {
			t.Errorf("primary %s is not one of the sandbox's nodes %v", sh.Primary, sb.Addrs)
		}
	}
	slots, err := c.Client.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	old := live.FromSlots(slots)
	for s := range cluster.Slots {
		if a, b := top.Owner(s), old.Owner(s); a == nil || b == nil || a.Primary != b.Primary {
			t.Fatalf("slot %d: CLUSTER SHARDS says %v, CLUSTER SLOTS says %v", s, a, b)
		}
	}
	clients := map[string]*redis.Client{}
	for _, sh := range top.Shards {
		cl := redis.NewClient(&redis.Options{Addr: sh.Primary, MaxRetries: -1})
		t.Cleanup(func() { _ = cl.Close() })
		clients[sh.Primary] = cl
	}
	r := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	seen := map[string]int{}
	for range 300 {
		key := randomKey(r)
		node := top.Owner(cluster.Slot(key)).Primary
		seen[node]++
		err := clients[node].Get(ctx, key).Err()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Errorf("GET %q on %s (shown for slot %d): %v", key, node, cluster.Slot(key), err)
		}
		// The same GET on another primary must be redirected: the check can fail.
		for addr, cl := range clients {
			if addr == node {
				continue
			}
			if err := cl.Get(ctx, key).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
				t.Errorf("GET %q on %s (not the owner) = %v, want MOVED", key, addr, err)
			}
			break
		}
	}
	if len(seen) != 3 {
		t.Errorf("random keys reached %d primaries, want 3", len(seen))
	}
}

// TestSplitAndSpreadOnCluster proposes a 3-way split on the real cluster:
// the sub-keys must land on three different primaries, each of which serves
// its sub-key; the spread of a tenant scheme must count every key once.
func TestSplitAndSpreadOnCluster(t *testing.T) {
	c := redistest.Cluster(t)
	ctx := testCtx(t)
	top, err := live.LoadTopology(ctx, c.Client, false)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := cluster.ProposeSplit("rl:{tenant:7}:tb", 3, top)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, s := range sp.SubKeys {
		nodes[s.Node] = true
		cl := redis.NewClient(&redis.Options{Addr: s.Node, MaxRetries: -1})
		err := cl.Get(ctx, s.Key).Err()
		_ = cl.Close()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Errorf("GET %q on %s: %v", s.Key, s.Node, err)
		}
	}
	if len(nodes) != 3 {
		t.Errorf("3-way split uses primaries %v, want 3 different ones", nodes)
	}
	// The server agrees on the slots, and the topology on their primaries.
	keys := make([]string, len(sp.SubKeys))
	for i, s := range sp.SubKeys {
		keys[i] = s.Key
	}
	got, err := live.ServerSlots(ctx, c.Client, keys)
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]bool{}
	for i, s := range sp.SubKeys {
		if got[i] != s.Slot {
			t.Errorf("CLUSTER KEYSLOT %q = %d, split says %d", s.Key, got[i], s.Slot)
		}
		owners[top.Owner(got[i]).Primary] = true
	}
	if len(owners) != 3 || sp.Placement != "cluster" || !strings.Contains(sp.Note, "each sub-key is on its own primary (3 of 3 primaries)") {
		t.Errorf("3-way split: slots %v on primaries %v, placement %q, note %q", got, owners, sp.Placement, sp.Note)
	}
	four, err := cluster.ProposeSplit("rl:{tenant:7}:tb", 4, top)
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, s := range four.SubKeys {
		perNode[s.Node]++
	}
	if len(perNode) != 3 || four.MostPerPrimary != 2 ||
		!strings.Contains(four.Note, "4 sub-keys over 3 primaries cannot each have their own") ||
		!strings.Contains(four.Note, "holds 2") || !strings.Contains(four.Note, "split into at most 3") {
		t.Errorf("4-way split over 3 primaries: per primary %v, note %q; want one holding two, and why", perNode, four.Note)
	}
	tpl, _ := cluster.ParseTemplate("rl:{tenant:%d}:tb")
	spread := cluster.SpreadOf(tpl, 1, 30000, top)
	var sum int64
	for _, p := range spread.Primaries {
		sum += p.Keys
	}
	if sum != 30000 || len(spread.Primaries) != 3 || spread.BusiestShare > 0.36 {
		t.Errorf("spread over the cluster: %+v", spread.Primaries)
	}
}
