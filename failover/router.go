package failover

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ratelimit-dev/ratelimit/redisconn"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/fault"
)

// router sends one key's commands to the primary of its slot, as a
// cluster client would, but on node clients of its own, so a script call
// and the WAIT after it share one connection and every redirect is seen.
// It follows MOVED at once and, after any other error, asks the nodes it
// knows which primary serves the slot (the highest configuration epoch
// wins: an old primary may still believe in itself for a moment).
type router struct {
	base  redis.Options // credentials, TLS, timeouts; Addr is set per node
	key   string
	check func(addr string) error // may the run talk to addr?

	mu      sync.Mutex
	owner   string
	clients map[string]*redis.Client
	seeds   []string
}

func newRouter(base redis.Options, key string, seeds []string, check func(string) error) *router {
	return &router{base: base, key: key, check: check, clients: map[string]*redis.Client{}, seeds: append([]string(nil), seeds...)}
}

// nodeOptions turns a cluster client's options into a node client's.
func nodeOptions(co *redis.ClusterOptions, pool int, extraRead time.Duration) redis.Options {
	o := redis.Options{
		Dialer: co.Dialer, OnConnect: co.OnConnect, Protocol: co.Protocol,
		Username: co.Username, Password: co.Password, CredentialsProvider: co.CredentialsProvider,
		CredentialsProviderContext: co.CredentialsProviderContext,
		DialTimeout:                co.DialTimeout, ReadTimeout: co.ReadTimeout, WriteTimeout: co.WriteTimeout,
		ContextTimeoutEnabled: co.ContextTimeoutEnabled, TLSConfig: co.TLSConfig,
		PoolSize: pool, MaxRetries: -1, DialerRetries: 1,
		MaintNotificationsConfig: redisconn.NoMaintNotifications(),
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 2 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 3 * time.Second
	}
	o.ReadTimeout += extraRead
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 3 * time.Second
	}
	return o
}

// client returns the router's connection pool to addr.
func (r *router) client(addr string) *redis.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[addr]; ok {
		return c
	}
	o := r.base
	o.Addr = addr
	if o.TLSConfig != nil && o.TLSConfig.ServerName == "" {
		o.TLSConfig = o.TLSConfig.Clone()
		o.TLSConfig.ServerName, _, _ = net.SplitHostPort(addr)
	}
	c := redis.NewClient(&o)
	r.clients[addr] = c
	return c
}

// cmdable is client for fault.Disagreeing, for nodes the run may use.
func (r *router) cmdable(addr string) (redis.Cmdable, error) {
	if err := r.check(addr); err != nil {
		return nil, err
	}
	return r.client(addr), nil
}

// current is the primary the router sends to; "" before the first refresh.
func (r *router) current() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owner
}

// moveTo follows a redirect to addr, if the run may talk to it.
func (r *router) moveTo(addr string) bool {
	if addr == "" || r.check(addr) != nil {
		return false
	}
	r.mu.Lock()
	r.owner = addr
	r.mu.Unlock()
	return true
}

// known lists the nodes to ask about the slot: the seeds and every node
// the router has talked to.
func (r *router) known() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, a := range append(append([]string(nil), r.seeds...), keys(r.clients)...) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

func keys(m map[string]*redis.Client) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// refresh asks every known node which primary serves the key's slot and
// follows the answer with the highest configuration epoch. It returns
// that primary's shard as that node sees it.
func (r *router) refresh(ctx context.Context) (fault.Shard, error) {
	var best fault.Shard
	found := false
	var errs []string
	for _, addr := range r.known() {
		if err := r.check(addr); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		s, err := fault.FindShard(ctx, r.client(addr), r.key)
		if err != nil {
			errs = append(errs, addr+": "+err.Error())
			continue
		}
		if !found || s.Primary.Epoch > best.Primary.Epoch {
			best, found = s, true
		}
	}
	if !found {
		return best, fmt.Errorf("no node says which primary serves %s: %s", r.key, strings.Join(errs, "; "))
	}
	if err := r.check(best.Primary.Addr); err != nil {
		return best, err
	}
	r.mu.Lock()
	r.owner = best.Primary.Addr
	r.mu.Unlock()
	return best, nil
}

// del deletes the key on its primary, following redirects, and checks it
// is gone there.
func (r *router) del(ctx context.Context) error {
	var last error
	for attempt := 0; attempt < 20; attempt++ {
		addr := r.current()
		if addr == "" {
			if _, err := r.refresh(ctx); err != nil {
				return err
			}
			continue
		}
		c := r.client(addr)
		last = c.Del(ctx, r.key).Err()
		if last == nil {
			n, err := c.Exists(ctx, r.key).Result()
			if err == nil && n == 0 {
				return nil
			}
			last = err
			if err == nil {
				last = fmt.Errorf("still exists after DEL")
			}
		}
		if to, ok := movedTo(last, addr); ok && r.moveTo(to) {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		_, _ = r.refresh(ctx)
	}
	return fmt.Errorf("delete %s: %w", r.key, last)
}

// exists reports whether the key exists on its primary.
func (r *router) exists(ctx context.Context) (bool, error) {
	if _, err := r.refresh(ctx); err != nil {
		return false, err
	}
	n, err := r.client(r.current()).Exists(ctx, r.key).Result()
	return n > 0, err
}

func (r *router) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clients {
		_ = c.Close()
	}
	r.clients = map[string]*redis.Client{}
}

// movedTo reads the address of a MOVED or ASK reply ("MOVED 866
// 127.0.0.1:7004"); an empty host means the host of from.
func movedTo(err error, from string) (string, bool) {
	if err == nil {
		return "", false
	}
	f := strings.Fields(err.Error())
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return "", false
	}
	host, port, perr := net.SplitHostPort(f[2])
	if perr != nil || port == "" {
		return "", false
	}
	if host == "" {
		host, _, _ = net.SplitHostPort(from)
	}
	return net.JoinHostPort(host, port), true
}
