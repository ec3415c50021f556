// Package serve is a reference rate-limited HTTP target: a net/http
// middleware around the eval package's limiter scripts, and the small
// server behind `ratelimit serve`. It knows nothing of cobra.
//
// # Behaviour
//
// Every request costs one Redis round trip (EVALSHA, EVAL once after
// NOSCRIPT) against the bucket of its identity: the API key in the identity
// header (default X-API-Key), else the client IP. Keys look like
// "rl:{key:<first 16 bytes of SHA-256, hex>}:<algo>" or
// "rl:{ip:<addr>}:<algo>"; an API key is hashed before anything else sees it
// and is never stored or logged in clear. The client IP is the peer address;
// X-Forwarded-For is read only with Config.TrustProxy = N > 0, and then only
// its Nth entry from the right (see ClientIP).
//
// Responses carry RateLimit-Policy (`"default";q=10;w=2` for a bucket of 10
// refilling at 5/s) and RateLimit (`"default";r=<remaining>;t=<seconds until
// the full quota is back>`), written with package header. A refused request
// gets 429, Retry-After in whole seconds rounded up (at least 1),
// Cache-Control: no-store and {"error":"rate_limited","retry_after_ms":N}.
// When Redis fails or misses the per-request deadline (default 50 ms),
// Config.Fail decides: open serves the request without RateLimit, closed
// answers 503 with Retry-After: 1 and {"error":"limiter_unavailable",...}.
//
// New's handler serves GET /hello ({"ok":true}, after Config.Delay) and
// GET /metrics (the counters in the Prometheus text format). The path
// /metrics, and nothing else, is exempt from limiting: a scraper must not
// spend a client's quota and a flood must not blind monitoring. Every other
// request, including one for an unknown path (404) or with the wrong method
// (405), goes through the limiter first, so probing costs quota too.
//
// # Go API
//
// For tests and embedding, without the CLI:
//
//	h, err := serve.New(serve.Config{Client: rdb, Params: eval.Params{
//		Algo: eval.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}},
//		KeyPrefix: "test-" + uuid.NewString()})
//	ts := httptest.NewServer(h) // GET ts.URL+"/hello"; h.Counts(); h.KeyFor(req)
//
// or a real listener with graceful shutdown:
//
//	s, err := serve.Start(cfg, "127.0.0.1:0") // s.URL(), s.Addr(), s.Handler().Counts()
//	defer s.Shutdown(ctx)
//
// Run(ctx, cfg, addr, out) is what the command does: Start, print the
// startup line, serve until ctx is cancelled, shut down gracefully.
// NewMiddleware(cfg).Wrap(next) limits any other handler.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// Paths served by New's handler.
const (
	HelloPath   = "/hello"
	MetricsPath = "/metrics"
)

// Handler is the limited /hello endpoint plus the exempt /metrics.
type Handler struct {
	*Middleware
	limited http.Handler
}

// New validates cfg and returns the handler of `ratelimit serve`.
func New(cfg Config) (*Handler, error) {
	m, err := NewMiddleware(cfg)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HelloPath, m.hello)
	return &Handler{Middleware: m, limited: m.Wrap(mux)}, nil
}

// ServeHTTP answers /metrics directly and everything else through the limiter.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == MetricsPath {
		h.ServeMetrics(w, r)
		return
	}
	h.limited.ServeHTTP(w, r)
}

func (m *Middleware) hello(w http.ResponseWriter, r *http.Request) {
	if d := m.cfg.Delay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"ok":true}`+"\n")
}

// Describe is the startup line's account of the configuration, e.g.
// `token-bucket capacity 10, refill 5/s (RateLimit-Policy "default";q=10;w=2);
// identity X-API-Key, else the client IP (X-Forwarded-For ignored); Redis
// deadline 50ms, then fail open; /metrics exempt`.
func (m *Middleware) Describe() string {
	c := m.cfg
	xff := "X-Forwarded-For ignored"
	if c.TrustProxy == 1 {
		xff = "X-Forwarded-For trusted from 1 proxy"
	} else if c.TrustProxy > 1 {
		xff = fmt.Sprintf("X-Forwarded-For trusted from %d proxies", c.TrustProxy)
	}
	s := fmt.Sprintf("%s (RateLimit-Policy %s); identity %s, else the client IP (%s); Redis deadline %s, then fail %s; %s exempt",
		DescribeParams(m.limiter.Params()), m.policyValue, c.IdentityHeader, xff, c.RedisTimeout, c.Fail, MetricsPath)
	if c.Delay > 0 {
		s += fmt.Sprintf("; %s delayed %s", HelloPath, c.Delay)
	}
	return s
}

// DescribeParams reads limiter parameters back in words:
// "token-bucket capacity 10, refill 5/s".
func DescribeParams(p eval.Params) string {
	var s string
	switch p.Algo {
	case eval.TokenBucket:
		s = fmt.Sprintf("token-bucket capacity %d, refill %s", p.Capacity, p.Rate)
	case eval.SlidingWindow, eval.FixedWindow:
		s = fmt.Sprintf("%s limit %d per %s", p.Algo, p.Limit, p.Window)
	case eval.GCRA:
		s = fmt.Sprintf("gcra rate %s, burst %d", p.Rate, p.Burst)
	default:
		s = string(p.Algo)
	}
	if p.Cost > 1 {
		s += fmt.Sprintf(", cost %d per request", p.Cost)
	}
	return s
}

// Server is New's handler on a listening socket.
type Server struct {
	h    *Handler
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	err  error
}

// Start validates cfg, listens on addr (host:port; port 0 picks a free one)
// and serves in the background until Shutdown. A busy or unusable address
// is an exit-2 error that says what to do.
func Start(cfg Config, addr string) (*Server, error) {
	h, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, exitcode.Usagef("listen on %s: address already in use; stop what holds it or pick another --addr (port 0 picks a free one)", addr)
		}
		return nil, exitcode.Usagef("listen on %q: %v; --addr wants host:port such as 127.0.0.1:8011", addr, unwrapOp(err))
	}
	s := &Server{
		h:  h,
		ln: ln,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          log.New(h.cfg.Log, "serve: ", 0),
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.err = fmt.Errorf("serve http on %s: %w", s.Addr(), err)
		}
	}()
	return s, nil
}

// unwrapOp drops net.OpError's repetition of the address.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// Addr is the address the server listens on (host:port, the real port).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is "http://" + Addr().
func (s *Server) URL() string { return "http://" + s.Addr() }

// Handler returns the server's handler (for Counts, KeyFor, Policy).
func (s *Server) Handler() *Handler { return s.h }

// Done is closed when the server has stopped serving.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is why the server stopped on its own, once Done is closed; nil after Shutdown.
func (s *Server) Err() error {
	<-s.done
	return s.err
}

// Shutdown stops accepting connections and waits for requests in flight to
// finish; when ctx ends first, it closes the remaining connections and
// returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	if err != nil {
		return fmt.Errorf("graceful shutdown of %s: %w", s.Addr(), err)
	}
	return nil
}

// shutdownGrace is how long Run lets requests in flight finish.
func shutdownGrace(cfg Config) time.Duration { return 10*time.Second + cfg.Delay }

// Run starts the server on addr, writes the startup line to out, serves
// until ctx is cancelled and then shuts down gracefully, writing a closing
// line with the counts. A cancelled ctx is a normal end (nil error).
func Run(ctx context.Context, cfg Config, addr string, out io.Writer) error {
	s, err := Start(cfg, addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "serve: listening on %s; GET %s limited by %s\n", s.URL(), HelloPath, s.h.Describe())
	select {
	case <-ctx.Done():
	case <-s.Done():
		return s.Err()
	}
	fmt.Fprintln(out, "serve: shutting down; finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace(cfg))
	defer cancel()
	err = s.Shutdown(sctx)
	c := s.h.Counts()
	fmt.Fprintf(out, "serve: stopped; allowed %d, limited %d, fail open %d, fail closed %d\n", c.Allowed, c.Limited, c.FailOpen, c.FailClosed)
	return err
}
