package fault

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ClusterNode is one line of CLUSTER NODES.
type ClusterNode struct {
	ID   string
	Addr string // host:port clients use
	// Flags as the server lists them: myself, master, slave, fail?, fail, ...
	Flags []string
	// PrimaryID is the primary a replica follows; "" for a primary.
	PrimaryID string
	// Epoch is the node's configuration epoch: of two primaries claiming
	// a slot, the one with the higher epoch is the newer.
	Epoch int64
	// Connected is the link state the answering node sees.
	Connected bool
	// Slots are the slot ranges a primary serves, inclusive.
	Slots [][2]int
}

func (n ClusterNode) has(flag string) bool {
	for _, f := range n.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Primary reports whether the node is a primary (flag master).
func (n ClusterNode) Primary() bool { return n.has("master") }

// Myself reports whether the node is the one that answered.
func (n ClusterNode) Myself() bool { return n.has("myself") }

// Healthy reports whether the answering node sees n as up: connected, not
// failing, with an address and done with its handshake.
func (n ClusterNode) Healthy() bool {
	return n.Connected && n.Addr != "" && !n.has("fail") && !n.has("fail?") && !n.has("noaddr") && !n.has("handshake")
}

// Serves reports whether the node serves slot.
func (n ClusterNode) Serves(slot int) bool {
	for _, r := range n.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// ParseNodes reads the reply of CLUSTER NODES. Lines it cannot read are
// an error; slots being imported or migrated ([...]) are left out.
func ParseNodes(text string) ([]ClusterNode, error) {
	var out []ClusterNode
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %.80q has %d fields, want at least 8", line, len(f))
		}
		n := ClusterNode{ID: f[0], Flags: strings.Split(f[2], ","), Connected: f[7] == "connected"}
		if f[3] != "-" {
			n.PrimaryID = f[3]
		}
		epoch, err := strconv.ParseInt(f[6], 10, 64)
		if err != nil || epoch < 0 {
			return nil, fmt.Errorf("CLUSTER NODES line %.80q: bad config epoch %q", line, f[6])
		}
		n.Epoch = epoch
		// ip:port@cport[,hostname]; an IPv6 address is not bracketed
		hp, _, _ := strings.Cut(f[1], "@")
		hp, _, _ = strings.Cut(hp, ",")
		if i := strings.LastIndexByte(hp, ':'); i > 0 {
			if p, err := strconv.Atoi(hp[i+1:]); err == nil && p > 0 && p <= 65535 {
				n.Addr = net.JoinHostPort(hp[:i], hp[i+1:])
			}
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || a < 0 || b < a || b > 16383 {
				return nil, fmt.Errorf("CLUSTER NODES line %.80q: bad slot range %q", line, s)
			}
			n.Slots = append(n.Slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("CLUSTER NODES listed no node")
	}
	return out, nil
}

// Nodes asks c for CLUSTER NODES.
func Nodes(ctx context.Context, c redis.Cmdable) ([]ClusterNode, error) {
	text, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	return ParseNodes(text)
}

// Shard is the primary serving a slot and its replicas, as one node sees them.
type Shard struct {
	Slot     int
	Primary  ClusterNode
	Replicas []ClusterNode // sorted by address
}

// ShardOf finds the primary serving slot among nodes, and its replicas.
// Of two primaries claiming the slot (for a moment after a failover) the
// one with the higher configuration epoch serves it.
func ShardOf(nodes []ClusterNode, slot int) (Shard, bool) {
	s := Shard{Slot: slot}
	found := false
	for _, n := range nodes {
		if n.Primary() && n.Serves(slot) && (!found || n.Epoch > s.Primary.Epoch) {
			s.Primary, found = n, true
		}
	}
	if !found {
		return s, false
	}
	for _, n := range nodes {
		if !n.Primary() && n.PrimaryID == s.Primary.ID {
			s.Replicas = append(s.Replicas, n)
		}
	}
	sort.Slice(s.Replicas, func(i, j int) bool { return s.Replicas[i].Addr < s.Replicas[j].Addr })
	return s, true
}

// FindShard asks c which primary serves key's slot (CLUSTER KEYSLOT, then
// CLUSTER NODES) and which replicas follow it.
func FindShard(ctx context.Context, c redis.Cmdable, key string) (Shard, error) {
	slot, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return Shard{}, fmt.Errorf("CLUSTER KEYSLOT: %w", err)
	}
	nodes, err := Nodes(ctx, c)
	if err != nil {
		return Shard{}, err
	}
	s, ok := ShardOf(nodes, int(slot))
	if !ok {
		return s, fmt.Errorf("no primary serves slot %d (of key %q)", slot, key)
	}
	return s, nil
}

// ClusterOK reports whether c sees cluster_state:ok and every slot served
// (cluster_slots_ok:16384), with the CLUSTER INFO lines that say so.
func ClusterOK(ctx context.Context, c redis.Cmdable) (bool, string, error) {
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return false, "", fmt.Errorf("CLUSTER INFO: %w", err)
	}
	var state, slots string
	for _, l := range strings.Split(info, "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "cluster_state:"); ok {
			state = v
		}
		if v, ok := strings.CutPrefix(l, "cluster_slots_ok:"); ok {
			slots = v
		}
	}
	return state == "ok" && slots == "16384", "cluster_state:" + state + " cluster_slots_ok:" + slots, nil
}

// replication reads INFO replication into its fields.
func replication(ctx context.Context, c redis.Cmdable) (map[string]string, error) {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO replication: %w", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// InSync reports whether c is a replica whose link to its primary is up
// and not in the middle of a full synchronisation.
func InSync(ctx context.Context, c redis.Cmdable) (bool, error) {
	m, err := replication(ctx, c)
	if err != nil {
		return false, err
	}
	return m["role"] == "slave" && m["master_link_status"] == "up" && m["master_sync_in_progress"] == "0", nil
}

// Promoted reports whether, in the view nodes gives (a node's own CLUSTER
// NODES), that node serves slot with a configuration epoch above every
// other primary's: an election it won, not one it merely claims. A
// replica is listed with its primary's epoch, so replicas are not
// compared: the old primary, once it follows the new one, shows the new
// one's epoch (comparing it too saw the promotion only until the old
// primary was reconfigured, and missed it on a busy machine).
func Promoted(nodes []ClusterNode, slot int) bool {
	s, ok := ShardOf(nodes, slot)
	if !ok || !s.Primary.Myself() {
		return false
	}
	for _, n := range nodes {
		if !n.Myself() && n.PrimaryID == "" && n.Epoch >= s.Primary.Epoch {
			return false
		}
	}
	return true
}

// Disagreeing returns the address of a primary serving slots (among
// nodes, one node's view) that does not yet see r as a replica of
// shard's primary, or "" when all do; client connects to a primary (an
// error counts as disagreeing). Just after a failover the nodes learn the
// new roles one by one: a primary that still takes r for a primary
// refuses it its vote, and the key's primary ignores a graceful failover
// r asks for.
func Disagreeing(ctx context.Context, nodes []ClusterNode, shard Shard, r ClusterNode, client func(addr string) (redis.Cmdable, error)) string {
	for _, n := range nodes {
		if !n.Primary() || len(n.Slots) == 0 || !n.Healthy() {
			continue
		}
		c, err := client(n.Addr)
		if err != nil {
			return n.Addr
		}
		view, err := Nodes(ctx, c)
		if err != nil {
			return n.Addr
		}
		ok := false
		for _, v := range view {
			if v.ID == r.ID {
				ok = !v.Primary() && v.PrimaryID == shard.Primary.ID
			}
		}
		if !ok {
			return n.Addr
		}
	}
	return ""
}
