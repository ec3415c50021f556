package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/serve"
)

type serveOptions struct {
	f   *Factory
	ctx context.Context

	Addr           string
	Algo           string
	Capacity       int64
	Rate           rate.Rate
	Limit          int64
	Window         time.Duration
	Burst          int64
	Cost           int64
	IdentityHeader string
	TrustProxy     int
	Fail           string
	LimiterTimeout time.Duration
	Delay          time.Duration
	KeyPrefix      string
	Break          string

	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	MaxBody           int64
	MaxConns          int

	// Changed holds the names of the flags given on the command line.
	Changed map[string]bool
}

func newServeCmd(f *Factory, run func(*serveOptions) error) *cobra.Command {
	opts := &serveOptions{f: f, Rate: rate.Rate{Count: 5, Per: time.Second}}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run a reference rate-limited HTTP target backed by the limiter scripts",
		Long: `Serve GET /hello behind a Redis-backed rate limiter, as a known-good target for
'ratelimit load' and a reference for your own service.

Each request costs one EVALSHA of the chosen script against the bucket of its
identity: the API key in --identity-header (hashed with SHA-256; never stored
or logged in clear), else the client IP. X-Forwarded-For is ignored unless
--trust-proxy N says how many proxies in front append to it; then its Nth
entry from the right is the client.

Responses carry RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers).
A refused request gets 429 with Retry-After, Cache-Control: no-store and
{"error":"rate_limited","retry_after_ms":N}. When Redis does not answer within
--limiter-timeout, --fail open serves the request and --fail closed answers 503;
--limiter-timeout 0 waits for Redis as long as it takes (a service that stalls
with its Redis, as 'load --fault' calls stalled).
GET /metrics (Prometheus text: allowed, limited, fail_open, fail_closed) is the
only path exempt from limiting. Ctrl-C shuts down gracefully.

Before it listens, serve runs two probe decisions (EVAL, then EVALSHA) on a
bucket of its own, PREFIX:{probe:<uuid>}:ALGO, and deletes it: an ACL user
that may not run the script or touch keys under --key-prefix stops serve with
exit 3 naming the ACL rule to add. A NOPERM or a script refusing a bucket
(foreign data under its key) later is logged once and answered per --fail;
serve never overwrites a key it did not write.

Hostile clients: headers must arrive within --read-header-timeout and the whole
request within --read-timeout; bodies over --max-body get 413 and headers over
--max-header-bytes 431; at most --max-conns connections are served at once
(more wait in the accept queue); idle keep-alive connections close after
--idle-timeout. Log lines escape control bytes.

--break DEFECT makes the server wrong on purpose in one way, so you can watch
'ratelimit probe' and 'ratelimit load' catch it: retry-after-zero (429 with
Retry-After: 0), no-retry-after, cacheable-429 (Cache-Control: public,
max-age=60 and an ETag), constant-reset (RateLimit t is always the window),
status-503 (refuses with 503 instead of 429), trust-xff (keys clients by
a client-sent X-Forwarded-For from any peer) and over-admit (enforces twice
the policy it advertises). It says so on its startup line.

Output (-o): text only. serve is a server, not a report: it writes log lines
and produces no result document, so -o json, markdown and junit are refused
(use 'ratelimit load -o json' against it for a machine-readable result).`,
		Example: `  # a bucket of 10 refilling at 5/s on the embedded Redis, on a free port;
  # the startup line prints the address (listening on http://127.0.0.1:PORT)
  ratelimit serve --redis embedded --addr 127.0.0.1:0 --algo token-bucket --capacity 10 --rate 5/s
  curl -i -H 'X-API-Key: alice' http://127.0.0.1:PORT/hello

  # 100 requests per minute in a sliding window, refusing when Redis is down
  ratelimit serve --algo sliding-window --limit 100 --window 1m --fail closed

  # a limiter that claims 10 per 2s but admits twice that (load catches it)
  ratelimit serve --capacity 10 --rate 5/s --break over-admit

  # a slow target behind one proxy, for load tests, on the URL 'ratelimit
  # sandbox' printed
  ratelimit serve --addr 127.0.0.1:0 --delay 500ms --trust-proxy 1 --redis redis://127.0.0.1:PORT`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.ctx = c.Context()
			opts.Changed = map[string]bool{}
			c.Flags().Visit(func(fl *pflag.Flag) { opts.Changed[fl.Name] = true })
			if run != nil {
				return run(opts)
			}
			return runServe(opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Addr, "addr", "127.0.0.1:8011", "listen address host:port (port 0 picks a free one)")
	fl.StringVar(&opts.Algo, "algo", string(limiter.TokenBucket), "limiter: token-bucket, sliding-window, fixed-window or gcra")
	fl.Int64Var(&opts.Capacity, "capacity", 10, "token-bucket: bucket size in tokens")
	fl.Var(&opts.Rate, "rate", "the limiter's own rate, not an arrival rate: token-bucket refill, gcra emission rate (e.g. 5/s, 300/m)")
	fl.Int64Var(&opts.Limit, "limit", 100, "sliding-window, fixed-window: requests per window")
	fl.DurationVar(&opts.Window, "window", time.Minute, "sliding-window, fixed-window: window length")
	fl.Int64Var(&opts.Burst, "burst", 10, "gcra: burst size")
	fl.Int64Var(&opts.Cost, "cost", 1, "units each request costs")
	fl.StringVar(&opts.IdentityHeader, "identity-header", serve.DefaultIdentityHeader, "header carrying the API key; requests without it are counted by client IP")
	fl.IntVar(&opts.TrustProxy, "trust-proxy", 0, "number of proxies in front whose X-Forwarded-For entries to trust (0: ignore the header)")
	fl.StringVar(&opts.Fail, "fail", string(serve.FailOpen), "when Redis fails or is late: open (serve the request) or closed (503)")
	fl.DurationVar(&opts.LimiterTimeout, "limiter-timeout", serve.DefaultRedisTimeout, "deadline per request for the limiter's Redis round trip, then --fail applies (the global --redis-timeout stays the client's own limit for dialling and commands)")
	fl.DurationVar(&opts.Delay, "delay", 0, "make /hello take this long (a slow target for load tests)")
	fl.StringVar(&opts.Break, "break", "", "make the server wrong on purpose in one way: retry-after-zero, no-retry-after, cacheable-429, constant-reset, status-503, trust-xff, over-admit (see above)")
	fl.StringVar(&opts.KeyPrefix, "key-prefix", serve.DefaultKeyPrefix, "prefix of the bucket keys: PREFIX:{key:<sha256>}:ALGO, PREFIX:{ip:ADDR}:ALGO")
	fl.DurationVar(&opts.ReadHeaderTimeout, "read-header-timeout", serve.DefaultReadHeaderTimeout, "time a client has to send the request line and headers; then the connection is closed")
	fl.DurationVar(&opts.ReadTimeout, "read-timeout", serve.DefaultReadTimeout, "time a client has to send a whole request, body included; then the connection is closed")
	fl.DurationVar(&opts.WriteTimeout, "write-timeout", serve.DefaultWriteTimeout, "time to answer a request, counted from the end of its headers, on top of --delay")
	fl.DurationVar(&opts.IdleTimeout, "idle-timeout", serve.DefaultIdleTimeout, "time a keep-alive connection may wait for its next request")
	fl.IntVar(&opts.MaxHeaderBytes, "max-header-bytes", serve.DefaultMaxHeaderBytes, "largest request line plus headers in bytes (431 past it)")
	fl.Int64Var(&opts.MaxBody, "max-body", serve.DefaultMaxBody, "largest request body in bytes (413 past it; no endpoint takes a body)")
	fl.IntVar(&opts.MaxConns, "max-conns", serve.DefaultMaxConns, "connections served at once; further ones wait in the accept queue until one closes")
	return c
}

// config turns the options into the server's configuration, rejecting bad
// input with exit 2 before anything connects.
func (opts *serveOptions) config() (serve.Config, error) {
	algo, err := limiter.ParseAlgo(opts.Algo)
	if err != nil {
		return serve.Config{}, err
	}
	if err := checkAlgoFlags(algo, opts.Changed); err != nil {
		return serve.Config{}, err
	}
	fail, err := serve.ParseFailMode(opts.Fail)
	if err != nil {
		return serve.Config{}, err
	}
	brk, err := serve.ParseBreak(opts.Break)
	if err != nil {
		return serve.Config{}, err
	}
	if opts.LimiterTimeout < 0 {
		return serve.Config{}, exitcode.Usagef("--limiter-timeout must be positive (or 0: wait for Redis for ever), got %s", opts.LimiterTimeout)
	}
	if opts.IdentityHeader == "" {
		return serve.Config{}, exitcode.Usagef("--identity-header must not be empty (requests without the header are counted by IP anyway)")
	}
	if opts.Cost <= 0 {
		return serve.Config{}, exitcode.Usagef("--cost must be at least 1, got %d", opts.Cost)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--read-header-timeout", opts.ReadHeaderTimeout}, {"--read-timeout", opts.ReadTimeout}, {"--write-timeout", opts.WriteTimeout}, {"--idle-timeout", opts.IdleTimeout}} {
		if d.v <= 0 {
			return serve.Config{}, exitcode.Usagef("%s must be positive, got %s (a server open to the network needs every timeout)", d.flag, d.v)
		}
	}
	for _, n := range []struct {
		flag string
		v    int64
	}{{"--max-header-bytes", int64(opts.MaxHeaderBytes)}, {"--max-body", opts.MaxBody}, {"--max-conns", int64(opts.MaxConns)}} {
		if n.v <= 0 {
			return serve.Config{}, exitcode.Usagef("%s must be at least 1, got %d", n.flag, n.v)
		}
	}
	if !opts.Changed["read-header-timeout"] {
		opts.ReadHeaderTimeout = min(opts.ReadHeaderTimeout, opts.ReadTimeout)
	}
	cfg := serve.Config{
		Params: limiter.Params{
			Algo: algo, Capacity: opts.Capacity, Rate: opts.Rate, Cost: opts.Cost,
			Limit: opts.Limit, Window: opts.Window, Burst: opts.Burst,
		},
		IdentityHeader: opts.IdentityHeader,
		TrustProxy:     opts.TrustProxy,
		RedisTimeout:   limiterTimeout(opts.LimiterTimeout),
		Fail:           fail,
		KeyPrefix:      opts.KeyPrefix,
		Break:          brk,
		Delay:          opts.Delay,

		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    opts.MaxHeaderBytes,
		MaxBody:           opts.MaxBody,
		MaxConns:          opts.MaxConns,
	}
	if opts.KeyPrefix == "" {
		return serve.Config{}, exitcode.Usagef("--key-prefix must not be empty")
	}
	if err := cfg.Validate(); err != nil {
		return serve.Config{}, flagNamed(err)
	}
	return cfg, nil
}

func runServe(opts *serveOptions) error {
	f := opts.f
	if _, err := f.Format(); err != nil {
		return err
	}
	cfg, err := opts.config()
	if err != nil {
		return err
	}
	conn, err := f.Redis(opts.ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "serve: limiter state on %s\n", conn.Server)
	if cfg.Break != "" {
		fmt.Fprintf(f.IO.ErrOut, "serve: BROKEN ON PURPOSE (--break %s): this server is a wrong limiter, for testing that probe and load catch it\n", cfg.Break)
	}
	cfg.Store = redislimit.NewStore(conn.Client)
	if cfg.RedisTimeout == serve.WaitForever {
		fmt.Fprintln(f.IO.ErrOut, "serve: --limiter-timeout 0: requests wait for Redis as long as it takes (no deadline, no --fail)")
		waiting := conn.NewWaitingClient(0)
		defer func() { _ = waiting.Close() }()
		cfg.Store = redislimit.NewStore(waiting)
	}
	cfg.Log = f.IO.ErrOut
	return serve.Run(opts.ctx, cfg, opts.Addr, f.IO.ErrOut)
}

// limiterTimeout maps --limiter-timeout to the middleware's deadline: 0
// waits for ever.
func limiterTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return serve.WaitForever
	}
	return d
}
