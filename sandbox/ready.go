package sandbox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/redis/go-redis/v9/maintnotifications"
)

var quietOnce sync.Once

// quiet stops go-redis from logging pool errors to stderr while the
// sandbox polls servers that are still starting.
func quiet() {
	quietOnce.Do(func() { redis.SetLogger(&logging.VoidLogger{}) })
}

// client returns a single-node client for n, speaking TLS when the sandbox does.
func client(n *Node, cfg Config) (*redis.Client, error) {
	opt := &redis.Options{
		Addr:         n.Addr,
		Password:     cfg.Password,
		DialTimeout:  time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
		PoolSize:     2,
		MaxRetries:   -1,
		// no maintenance notifications: nothing here uses them, and the
		// handshake's fallback races in go-redis v9.23
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		// the start's deadline bounds every command, not only the dial
		ContextTimeoutEnabled: true,
	}
	if cfg.TLS != nil {
		pem, err := os.ReadFile(cfg.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read CA %s: %w", cfg.TLS.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate in %s", cfg.TLS.CAFile)
		}
		opt.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, ServerName: "127.0.0.1"}
	}
	return redis.NewClient(opt), nil
}

func waitReady(ctx context.Context, n *Node, cfg Config) error {
	c, err := client(n, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	var last error
	for {
		if !n.Running() {
			return n.exitedErr(cfg.Password)
		}
		if last = c.Ping(ctx).Err(); last == nil {
			return checkOwn(ctx, c, n)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server on %s did not answer: %v", n.Addr, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkOwn makes sure the server answering on n's port is the process the
// sandbox started, not another server that already held the port (with
// --port-base the new one then exits, but the old one answers PING first).
func checkOwn(ctx context.Context, c *redis.Client, n *Node) error {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("server on %s: INFO server: %w", n.Addr, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			if v == strconv.Itoa(n.PID()) {
				return nil
			}
			return &markedError{
				msg:   fmt.Sprintf("port %d is already used by another server (pid %s); the sandbox never touches a server it did not start", n.Port, v),
				marks: []error{ErrConfig, errPortTaken},
			}
		}
	}
	return fmt.Errorf("server on %s reports no process_id in INFO server", n.Addr)
}

// formCluster assigns the 16384 slots evenly to the primaries, introduces
// every node to the first with CLUSTER MEET, attaches replicas, and waits
// until every node reports cluster_state:ok and agrees on the slot map.
func formCluster(ctx context.Context, sb *Sandbox, cfg Config) error {
	clients := make([]*redis.Client, len(sb.Nodes))
	for i, n := range sb.Nodes {
		c, err := client(n, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		clients[i] = c
	}
	const slots = 16384
	p := cfg.Primaries
	for i := 0; i < p; i++ {
		lo := i * slots / p
		hi := (i+1)*slots/p - 1
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("cluster addslotsrange on %s: %w", sb.Nodes[i].Addr, err)
		}
	}
	first := sb.Nodes[0]
	for i := 1; i < len(sb.Nodes); i++ {
		if err := clients[i].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", first.Port, first.BusPort).Err(); err != nil {
			return fmt.Errorf("cluster meet from %s: %w", sb.Nodes[i].Addr, err)
		}
	}
	if cfg.Replicas > 0 {
		ids := make([]string, p)
		for i := 0; i < p; i++ {
			id, err := clients[i].Do(ctx, "CLUSTER", "MYID").Text()
			if err != nil {
				return fmt.Errorf("cluster myid on %s: %w", sb.Nodes[i].Addr, err)
			}
			ids[i] = id
		}
		for i := p; i < len(sb.Nodes); i++ {
			primary := (i - p) % p
			if err := waitKnows(ctx, clients[i], ids[primary]); err != nil {
				return fmt.Errorf("replica %s: %w", sb.Nodes[i].Addr, err)
			}
			if err := clients[i].Do(ctx, "CLUSTER", "REPLICATE", ids[primary]).Err(); err != nil {
				return fmt.Errorf("cluster replicate on %s: %w", sb.Nodes[i].Addr, err)
			}
		}
	}
	for _, c := range clients {
		if err := waitClusterOK(ctx, c, len(sb.Nodes)); err != nil {
			return err
		}
	}
	return nil
}

func waitKnows(ctx context.Context, c *redis.Client, id string) error {
	for {
		nodes, err := c.ClusterNodes(ctx).Result()
		if err == nil && strings.Contains(nodes, id) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("never learned of node %s", id)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func waitClusterOK(ctx context.Context, c *redis.Client, nodes int) error {
	var info string
	for {
		var err error
		info, err = c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") &&
			strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(nodes)+"\r\n") &&
			strings.Contains(info, "cluster_slots_ok:16384") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster on %s not ready: %s", c.Options().Addr, strings.ReplaceAll(strings.TrimSpace(info), "\r\n", " "))
		case <-time.After(25 * time.Millisecond):
		}
	}
}
