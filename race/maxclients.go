package race

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// serverFull reports whether the server refuses one more connection
// because it reached maxclients: it then writes that error at once, before
// any command. It dials a plain connection (not for TLS) and reads briefly.
func serverFull(ctx context.Context, node *redis.Client) bool {
	o := node.Options()
	if o.TLSConfig != nil {
		return false
	}
	network := o.Network
	if network == "" {
		network = "tcp"
	}
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(context.WithoutCancel(ctx), network, o.Addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	buf := make([]byte, 128)
	n, _ := io.ReadAtLeast(conn, buf, len("-ERR max number of clients reached"))
	return IsMaxClients(errors.New(string(buf[:n])))
}

// maxClients returns the server's maxclients and how many connections
// other than this client's pool count against it; ok is false when the server does
// not say (CONFIG disabled, as on many managed services).
func maxClients(ctx context.Context, node *redis.Client) (limit, others int, ok bool) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	info, err := node.Info(cctx, "clients").Result()
	if err != nil {
		return 0, 0, false
	}
	// Cluster bus links count against maxclients too (cluster_connections).
	connected, bus := -1, 0
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "connected_clients":
			connected, _ = strconv.Atoi(v)
		case "cluster_connections":
			bus, _ = strconv.Atoi(v)
		case "maxclients": // Redis 7 and later
			limit, _ = strconv.Atoi(v)
		}
	}
	if limit <= 0 {
		m, err := node.ConfigGet(cctx, "maxclients").Result()
		if err != nil {
			return 0, 0, false
		}
		limit, _ = strconv.Atoi(m["maxclients"])
	}
	if connected < 0 || limit <= 0 {
		return 0, 0, false
	}
	return limit, max(0, connected-int(node.PoolStats().TotalConns)) + bus, true
}

// checkMaxClients fails early, before opening n connections, when the
// server's maxclients cannot take them.
func checkMaxClients(ctx context.Context, node *redis.Client, n int) error {
	limit, others, ok := maxClients(ctx, node)
	if !ok || others+n <= limit {
		return nil
	}
	return maxClientsError(node.Options().Addr, n, limit, others)
}

func maxClientsError(addr string, n, limit, others int) error {
	return exitcode.Usagef("redis at %s accepts at most %d clients (maxclients) and already has %d other %s, so %d more do not fit; lower --concurrency to %d or raise maxclients (CONFIG SET maxclients %d, with an open-file limit to match)",
		addr, limit, others, plural(others, "connection", "connections"), n, max(1, limit-others), others+n+100)
}

// warmError turns the first failed warm-up into an error that says what to
// do: the server's maxclients, the process's open-file limit, or an
// unreachable server.
func warmError(ctx context.Context, node *redis.Client, errs []error, full bool) error {
	failed, first := 0, error(nil)
	for _, e := range errs {
		if e != nil {
			failed++
			if first == nil {
				first = e
			}
		}
	}
	if first == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	n, addr := len(errs), node.Options().Addr
	// A server over its maxclients answers "max number of clients reached"
	// and closes the connection, which the client may see only as a broken
	// pipe or a reset: ask the server when the error is not explicit.
	if limit, others, ok := maxClients(ctx, node); full || IsMaxClients(first) || (ok && others+n > limit) {
		if ok {
			return maxClientsError(addr, n, limit, others)
		}
		return exitcode.Usagef("redis at %s refused %d of %d connections: max number of clients reached; lower --concurrency or raise the server's maxclients (CONFIG SET maxclients %d, with an open-file limit to match)", addr, failed, n, n+100)
	}
	switch {
	case strings.Contains(first.Error(), "too many open files"):
		return exitcode.Usagef("opening %s to %s: too many open files; raise the limit with 'ulimit -n %d' or lower --concurrency", count(n, "connection", "connections"), addr, 2*n+100)
	}
	if failed == n && IsUnreachable(first) {
		return lostError(addr, "opening "+count(n, "connection", "connections"), "", first)
	}
	if redisconn.Classify(first) == redisconn.NoPerm {
		return aclError(fmt.Sprintf("open %s to %s: %d failed", count(n, "connection", "connections"), addr, failed), first)
	}
	hint := ""
	if failed < n {
		hint = "; if the server limits its clients (maxclients), lower --concurrency"
	}
	return exitcode.UnreachableError(fmt.Errorf("open %s to %s: %d failed: %w%s", count(n, "connection", "connections"), addr, failed, first, hint))
}

// IsMaxClients reports whether err is the server refusing a connection
// because of its maxclients setting.
func IsMaxClients(err error) bool {
	return err != nil && strings.Contains(err.Error(), "max number of clients reached")
}
