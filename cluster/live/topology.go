package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// ErrNotCluster means the server answered but has cluster support disabled.
var ErrNotCluster = errors.New("not a cluster node")

// LoadTopology reads which node serves each slot, from CLUSTER SHARDS
// (Redis 7+), falling back to CLUSTER SLOTS on servers that do not know it.
// With tls, node addresses use the TLS port when a node has one.
func LoadTopology(ctx context.Context, c redis.UniversalClient, tls bool) (*cluster.Topology, error) {
	shards, err := c.ClusterShards(ctx).Result()
	if err == nil {
		return FromShards(shards, tls), nil
	}
	if isClusterDisabled(err) {
		return nil, ErrNotCluster
	}
	// CLUSTER SLOTS is enough (and what a cluster client needs anyway):
	// fall back to it on servers that do not know SHARDS and for ACL users
	// that may not run it.
	if !isUnknownCommand(err) && redisconn.Classify(err) != redisconn.NoPerm {
		return nil, fmt.Errorf("cluster shards: %w", err)
	}
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		if isClusterDisabled(err) {
			return nil, ErrNotCluster
		}
		return nil, fmt.Errorf("cluster slots: %w", err)
	}
	return FromSlots(slots), nil
}

func isClusterDisabled(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "cluster support disabled")
}

func isUnknownCommand(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown subcommand") || strings.Contains(msg, "unknown command")
}

// FromShards builds the map from a CLUSTER SHARDS reply.
func FromShards(shards []redis.ClusterShard, tls bool) *cluster.Topology {
	var out []cluster.Shard
	for _, s := range shards {
		var sh cluster.Shard
		for _, n := range s.Nodes {
			addr := nodeAddr(n, tls)
			if n.Role == "master" && sh.Primary == "" {
				sh.Primary = addr
			} else {
				sh.Replicas = append(sh.Replicas, addr)
			}
		}
		if sh.Primary == "" {
			continue
		}
		for _, r := range s.Slots {
			sh.Ranges = append(sh.Ranges, [2]int{int(r.Start), int(r.End)})
		}
		out = append(out, sh)
	}
	return cluster.NewTopology("CLUSTER SHARDS", out)
}

// nodeAddr is the host:port a client connects to: the node's announced
// endpoint (its IP unless cluster-preferred-endpoint-type says otherwise)
// and its port, or its TLS port when the connection uses TLS or the node
// has no plain port.
func nodeAddr(n redis.Node, tls bool) string {
	host := n.Endpoint
	if host == "" || host == "?" {
		host = n.IP
	}
	port := n.Port
	if (tls && n.TLSPort > 0) || port == 0 {
		port = n.TLSPort
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10))
}

// FromSlots builds the map from a CLUSTER SLOTS reply: the first node of
// each range is its primary, the rest are replicas.
func FromSlots(slots []redis.ClusterSlot) *cluster.Topology {
	var out []cluster.Shard
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		sh := cluster.Shard{Primary: s.Nodes[0].Addr, Ranges: [][2]int{{s.Start, s.End}}}
		for _, n := range s.Nodes[1:] {
			sh.Replicas = append(sh.Replicas, n.Addr)
		}
		out = append(out, sh)
	}
	return cluster.NewTopology("CLUSTER SLOTS", out)
}

// ServerSlots asks the server's CLUSTER KEYSLOT for every key, pipelined in
// batches, and returns the answers in the order of keys.
func ServerSlots(ctx context.Context, c redis.UniversalClient, keys []string) ([]int, error) {
	const batch = 1000
	out := make([]int, len(keys))
	cmds := make([]*redis.IntCmd, 0, batch)
	for start := 0; start < len(keys); start += batch {
		end := min(start+batch, len(keys))
		pipe := c.Pipeline()
		cmds = cmds[:0]
		for _, k := range keys[start:end] {
			cmds = append(cmds, pipe.ClusterKeySlot(ctx, k))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			if isClusterDisabled(err) {
				return nil, ErrNotCluster
			}
			return nil, fmt.Errorf("cluster keyslot: %w", err)
		}
		for i, cmd := range cmds {
			out[start+i] = int(cmd.Val())
		}
	}
	return out, nil
}
