// Package redisconn turns what the user said about Redis (--redis, REDIS_URL,
// TLS flags, nothing at all) into a connected client: a single-node client,
// a cluster client when the server reports cluster_enabled:1, or an
// in-process miniredis when nothing was named and nothing listens on
// localhost:6379. It also identifies the server for every report.
package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// EmbeddedURL is the special --redis value that selects the in-process server.
const EmbeddedURL = "embedded"

// DefaultURL is tried when no URL is given.
const DefaultURL = "redis://localhost:6379/0"

// Options say how to connect.
type Options struct {
	// URL is --redis or REDIS_URL: redis://, rediss://, unix://, or "embedded".
	// Empty means: try DefaultURL briefly, else start the embedded server.
	URL string
	// TLS settings for rediss:// URLs.
	TLSCA, TLSCert, TLSKey string
	TLSSkipVerify          bool
	// Cluster forces the client kind when non-nil; nil detects it from INFO.
	Cluster *bool
	// Timeout applies to dialling and to each command; 0 means 2s.
	Timeout time.Duration
	// Notice receives one-line notices (the embedded fallback); nil discards them.
	Notice io.Writer

	// DefaultURL replaces the package's DefaultURL as the address tried
	// when URL is empty (tests point it at a closed port so they never
	// reach a server on localhost:6379).
	DefaultURL string

	// probeTimeout replaces the 300 ms probe in tests.
	probeTimeout time.Duration
}

// Server identifies what a command ran against. It opens every report.
type Server struct {
	Product   string `json:"product"` // redis, valkey or miniredis
	Version   string `json:"version"`
	Mode      string `json:"mode"` // standalone, cluster or embedded
	Primaries int    `json:"primaries,omitempty"`
	Addr      string `json:"addr"` // URL with any password redacted
	Embedded  bool   `json:"embedded"`
}

// String reads like "redis 7.0.15, cluster with 3 primaries, redis://127.0.0.1:7101".
func (s Server) String() string {
	if s.Embedded {
		return fmt.Sprintf("embedded miniredis %s (in-process; results show the scripts' logic, not a real server's behaviour)", s.Version)
	}
	mode := s.Mode
	if s.Mode == "cluster" {
		mode = fmt.Sprintf("cluster with %d primaries", s.Primaries)
	}
	return fmt.Sprintf("%s %s, %s, %s", s.Product, s.Version, mode, s.Addr)
}

// Conn is a connected client and what it is connected to.
type Conn struct {
	Client redis.UniversalClient
	Server Server

	single  *redis.Options // how to reach the seed node
	cluster bool
	mini    *miniredis.Miniredis
}

// Open resolves opts, connects, identifies the server and returns the
// client to use. Errors are exit-coded: bad input 2, unreachable 3.
func Open(ctx context.Context, opts Options) (*Conn, error) {
	Quiet()
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	raw := strings.TrimSpace(opts.URL)
	if raw == EmbeddedURL {
		if err := noTLSFlags(opts, "embedded"); err != nil {
			return nil, err
		}
		return openEmbedded(opts, "--redis embedded")
	}
	if raw == "" {
		def := opts.DefaultURL
		if def == "" {
			def = DefaultURL
		}
		probe := opts.probeTimeout
		if probe == 0 {
			probe = 300 * time.Millisecond
		}
		ro, err := redis.ParseURL(def)
		if err != nil {
			return nil, fmt.Errorf("default url: %w", err)
		}
		if !answers(ro, probe) {
			if err := noTLSFlags(opts, "the embedded server"); err != nil {
				return nil, err
			}
			return openEmbedded(opts, "no --redis or REDIS_URL and nothing on "+ro.Addr)
		}
		raw = def
	}
	ro, err := parse(raw, opts)
	if err != nil {
		return nil, err
	}
	return openServer(ctx, raw, ro, opts)
}

var quietOnce sync.Once

// Quiet stops go-redis from logging to stderr: its pool messages would
// interleave with reports, and every error reaches the user through the
// returned error instead.
func Quiet() {
	quietOnce.Do(func() { redis.SetLogger(&logging.VoidLogger{}) })
}

// answers reports whether something accepts a TCP (or unix) connection at
// the address within d.
func answers(ro *redis.Options, d time.Duration) bool {
	c, err := net.DialTimeout(ro.Network, ro.Addr, d)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func noTLSFlags(opts Options, what string) error {
	if opts.TLSCA != "" || opts.TLSCert != "" || opts.TLSKey != "" || opts.TLSSkipVerify {
		return exitcode.Usagef("TLS flags need a rediss:// URL, not %s", what)
	}
	return nil
}

// parse reads a redis://, rediss:// or unix:// URL and applies the TLS flags.
// Error messages never contain the password.
func parse(raw string, opts Options) (*redis.Options, error) {
	shown := Redact(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return nil, exitcode.Usagef("invalid Redis URL %s; want redis://[user:password@]host:port/db, rediss://..., unix:///path or embedded", shown)
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	default:
		return nil, exitcode.Usagef("unsupported Redis URL scheme %q in %s; want redis://, rediss://, unix:// or embedded", u.Scheme, shown)
	}
	ro, err := redis.ParseURL(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, exitcode.Usagef("invalid Redis URL %s: %s", shown, scrub(err.Error(), u))
	}
	ro.DialTimeout = opts.Timeout
	ro.DialerRetries = 2
	// Honour context deadlines on every command, so a caller with a
	// tighter budget than --redis-timeout (serve's per-request limit) is
	// not held up.
	ro.ContextTimeoutEnabled = true
	ro.ReadTimeout = opts.Timeout
	ro.WriteTimeout = opts.Timeout
	if u.Scheme != "rediss" {
		if err := noTLSFlags(opts, shown); err != nil {
			return nil, err
		}
		return ro, nil
	}
	tc := ro.TLSConfig
	if tc == nil {
		tc = &tls.Config{ServerName: u.Hostname()}
	}
	tc.MinVersion = tls.VersionTLS12
	if opts.TLSCA != "" {
		pem, err := os.ReadFile(opts.TLSCA)
		if err != nil {
			return nil, exitcode.Usagef("read --tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, exitcode.Usagef("--tls-ca %s holds no PEM certificate", opts.TLSCA)
		}
		tc.RootCAs = pool
	}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return nil, exitcode.Usagef("--tls-cert and --tls-key go together")
	}
	if opts.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return nil, exitcode.Usagef("load --tls-cert/--tls-key: %v", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	tc.InsecureSkipVerify = opts.TLSSkipVerify
	ro.TLSConfig = tc
	return ro, nil
}

// Redact returns the URL with any password replaced by "xxxxx". Text that
// does not parse as a URL is shown only by its scheme, since it may hold a
// password in a place url.Parse cannot find.
func Redact(raw string) string {
	if raw == EmbeddedURL || raw == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.Index(raw, "://"); i > 0 && !strings.ContainsAny(raw[:i], "@:/") {
			return raw[:i] + "://(unparseable)"
		}
		return "(unparseable URL)"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if isSecretParam(k) {
				q[k] = []string{"xxxxx"}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// isSecretParam reports whether a URL query parameter carries a secret
// (go-redis reads password= and sentinel_password= from the query).
func isSecretParam(k string) bool {
	return strings.Contains(strings.ToLower(k), "pass")
}

// scrub removes the URL's password from a message, should a library have
// echoed it.
func scrub(msg string, u *url.URL) string {
	if u == nil {
		return msg
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	}
	for k, vs := range u.Query() {
		if isSecretParam(k) {
			for _, v := range vs {
				if v != "" {
					msg = strings.ReplaceAll(msg, v, "xxxxx")
				}
			}
		}
	}
	return msg
}

func openServer(ctx context.Context, raw string, ro *redis.Options, opts Options) (*Conn, error) {
	shown := Redact(raw)
	probe := redis.NewClient(ro)
	pctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := probe.Ping(pctx).Err(); err != nil {
		_ = probe.Close()
		return nil, connectError(shown, ro.Addr, err, raw)
	}
	srv := Server{Addr: shown, Mode: "standalone", Product: "redis"}
	if info, err := probe.Info(pctx, "server").Result(); err == nil {
		fields := infoFields(info)
		srv.Version = fields["redis_version"]
		if v, ok := fields["valkey_version"]; ok || fields["server_name"] == "valkey" {
			srv.Product = "valkey"
			if v != "" {
				srv.Version = v
			}
		}
	}
	clusterOn := false
	if info, err := probe.Info(pctx, "cluster").Result(); err == nil {
		clusterOn = infoFields(info)["cluster_enabled"] == "1"
	}
	useCluster := clusterOn
	if opts.Cluster != nil {
		useCluster = *opts.Cluster
		if useCluster && !clusterOn {
			_ = probe.Close()
			return nil, exitcode.Usagef("--cluster=true but %s is not a cluster node (cluster_enabled is not 1)", shown)
		}
	}
	c := &Conn{Server: srv, single: ro}
	if !useCluster {
		c.Client = probe
		return c, nil
	}
	if ro.DB != 0 {
		_ = probe.Close()
		return nil, exitcode.Usagef("Redis Cluster has only database 0; drop /%d from %s", ro.DB, shown)
	}
	slots, err := probe.ClusterSlots(pctx).Result()
	_ = probe.Close()
	if err != nil {
		return nil, connectError(shown, ro.Addr, err, raw)
	}
	primaries := map[string]bool{}
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			primaries[s.Nodes[0].ID+s.Nodes[0].Addr] = true
		}
	}
	c.cluster = true
	c.Server.Mode = "cluster"
	c.Server.Primaries = len(primaries)
	c.Client = c.NewClient(0)
	return c, nil
}

func connectError(shown, addr string, err error, raw string) error {
	u, _ := url.Parse(raw)
	msg := scrub(err.Error(), u)
	return exitcode.Unreachablef("connect redis %s: %s; check --redis or run 'ratelimit sandbox' for a disposable server", addrOrURL(shown, addr), msg)
}

func addrOrURL(shown, addr string) string {
	if addr != "" {
		return addr
	}
	return shown
}

// NewClient returns a fresh client to the same target with the given pool
// size (0 keeps go-redis's default). The caller closes it.
func (c *Conn) NewClient(poolSize int) redis.UniversalClient {
	ro := *c.single
	if poolSize > 0 {
		ro.PoolSize = poolSize
		ro.MinIdleConns = 0
	}
	if !c.cluster {
		return redis.NewClient(&ro)
	}
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        []string{ro.Addr},
		Username:     ro.Username,
		Password:     ro.Password,
		TLSConfig:    ro.TLSConfig,
		DialTimeout:  ro.DialTimeout,
		ReadTimeout:  ro.ReadTimeout,
		WriteTimeout: ro.WriteTimeout,
		PoolSize:     ro.PoolSize,
		Protocol:     ro.Protocol,

		DialerRetries:         ro.DialerRetries,
		ContextTimeoutEnabled: ro.ContextTimeoutEnabled,
	})
}

// IsCluster reports whether the client is a cluster client.
func (c *Conn) IsCluster() bool { return c.cluster }

// Close closes the client and stops the embedded server, if any.
func (c *Conn) Close() error {
	var err error
	if c.Client != nil {
		err = c.Client.Close()
	}
	if c.mini != nil {
		c.mini.Close()
	}
	return err
}

func openEmbedded(opts Options, why string) (*Conn, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("start embedded server: %w", err)
	}
	if opts.Notice != nil {
		fmt.Fprintf(opts.Notice, "notice: %s; using an embedded in-process miniredis: results show the scripts' logic, not a real server's behaviour; pass --redis URL (or run 'ratelimit sandbox') to test a real one\n", why)
	}
	ro := &redis.Options{Addr: m.Addr(), DialTimeout: opts.Timeout, ReadTimeout: opts.Timeout, WriteTimeout: opts.Timeout, ContextTimeoutEnabled: true}
	c := &Conn{
		Client: redis.NewClient(ro),
		Server: Server{Product: "miniredis", Version: miniredisVersion(), Mode: "embedded", Addr: "embedded", Embedded: true},
		single: ro,
		mini:   m,
	}
	return c, nil
}

func miniredisVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/alicebob/miniredis/v2" {
				return d.Version
			}
		}
	}
	return "v2"
}

func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}
