// Package live asks a Redis server what package cluster computes offline:
// which node serves each slot (CLUSTER SHARDS, falling back to CLUSTER
// SLOTS) and the server's own slot of each key (CLUSTER KEYSLOT). Run
// builds the keyslot document with what the server said; cluster, which
// imports no Redis client, defines the document and computes the rest.
package live

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// Options are cluster's options and what to ask the server.
type Options struct {
	cluster.Options
	// Verify asks the server's CLUSTER KEYSLOT for every key (needs Client).
	Verify bool
	// Client, when set, is a connection to a cluster node; Server says
	// what it is and TLS whether node addresses should use TLS ports.
	Client redis.UniversalClient
	Server *redisconn.Server
	TLS    bool
}

// Run computes everything opts asks for. Offline parts need no client;
// with a client to a cluster it adds nodes, and verifies when asked. A
// client to a server that is not a cluster gives a Notice, or
// ErrNotCluster with Verify.
func Run(ctx context.Context, opts Options) (cluster.Result, error) {
	notice := ""
	if opts.Client != nil {
		var t *cluster.Topology
		err := ErrNotCluster // miniredis answers CLUSTER SHARDS but is no cluster
		if opts.Server == nil || !opts.Server.Embedded {
			t, err = LoadTopology(ctx, opts.Client, opts.TLS)
			// An ACL user may not ask a server that said it is no
			// cluster (INFO) for its slots: it has none to tell.
			if opts.Server != nil && opts.Server.Mode == "standalone" && redisconn.Classify(err) == redisconn.NoPerm {
				err = ErrNotCluster
			}
		}
		switch {
		case errors.Is(err, ErrNotCluster):
			if opts.Verify {
				return cluster.Result{}, ErrNotCluster
			}
			notice = notClusterNotice(opts.Server)
		case err != nil:
			return cluster.Result{}, err
		default:
			opts.Topology = t
		}
	} else if opts.Verify {
		return cluster.Result{}, ErrNotCluster
	}
	if opts.Verify && len(opts.Keys) > 0 {
		got, err := ServerSlots(ctx, opts.Client, opts.Keys)
		if err != nil {
			return cluster.Result{}, err
		}
		opts.ServerSlots = got
	}
	res, err := cluster.Run(ctx, opts.Options)
	if err != nil {
		return cluster.Result{}, err
	}
	res.Server, res.Notice = opts.Server, notice
	return res, nil
}

func notClusterNotice(s *redisconn.Server) string {
	if s == nil {
		return "the server is not a Redis Cluster: slots are computed offline, without nodes"
	}
	return fmt.Sprintf("%s is not a Redis Cluster (%s): slots are computed offline, without nodes", s.Addr, s.Mode)
}
