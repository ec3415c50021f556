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
// # Hostile clients
//
// Start and Run serve with every limit of Config in force (defaults in
// brackets): a request's headers must arrive within ReadHeaderTimeout [5s]
// and the whole request within ReadTimeout [10s], else the connection is
// closed (408 once the headers are in); a response must be written within
// WriteTimeout [10s] plus Delay; a keep-alive connection idles at most
// IdleTimeout [60s]. Headers over MaxHeaderBytes [16 KiB] get 431 and a
// body over MaxBody [1 MiB] 413 with {"error":"body_too_large",...}, before
// the limiter runs. At most MaxConns [1024] connections are served at once:
// further ones wait, unread, in the kernel's accept queue until one closes
// (LimitListener). Log lines escape control bytes (Escape).
//
// # ACL
//
// Run probes the limiter before it listens (Middleware.Probe): EVAL, then
// EVALSHA, of the script on a key of its own, "<prefix>:{probe:<uuid>}:<algo>",
// deleted afterwards. A NOPERM stops it with an exit-3 error naming the
// rule to add and serve's minimal ACL (Middleware.ACLRules: +evalsha,
// +eval, each command the script calls, ~<prefix>:*). A NOPERM on a
// request later, or a script refusing a bucket (a key holding data the
// script did not write), is decided per Fail, logged once and counted in
// ratelimit_limiter_failures_total; serve never overwrites such a key.
//
// # Go API
//
// For tests and embedding, without the CLI:
//
//	h, err := serve.New(serve.Config{Client: rdb, Params: limiter.Params{
//		Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}},
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

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
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

// ServeHTTP enforces MaxBody, then answers /metrics directly and
// everything else through the limiter.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.readBody(w, r) {
		return
	}
	if r.URL.Path == MetricsPath {
		h.ServeMetrics(w, r)
		return
	}
	h.limited.ServeHTTP(w, r)
}

// readBody enforces Config.MaxBody before anything else runs, so an
// oversized request costs no Redis round trip. A declared Content-Length
// over the cap gets 413 at once, unread; any other body (no endpoint takes
// one) is read through http.MaxBytesReader and dropped, so a chunked body
// over the cap gets 413 too, and a body trickled slowly is cut by
// ReadTimeout instead of holding the connection. It reports whether the
// request may go on.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) bool {
	limit := h.cfg.MaxBody
	if r.ContentLength > limit {
		tooLarge(w, limit)
		return false
	}
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	_, err := io.Copy(io.Discard, r.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		tooLarge(w, limit)
		return false
	case err != nil:
		// ReadTimeout passed or the client went away mid-body: the
		// connection cannot carry another request; close it.
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestTimeout)
		return false
	}
	return true
}

// tooLarge answers 413 with {"error":"body_too_large","max_body_bytes":N}
// and closes the connection (the rest of the body is never read).
func tooLarge(w http.ResponseWriter, limit int64) {
	h := w.Header()
	h.Set("Connection", "close")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = fmt.Fprintf(w, `{"error":"body_too_large","max_body_bytes":%d}`+"\n", limit)
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
// `token-bucket capacity 10, rate 5/s (RateLimit-Policy "default";q=10;w=2);
// identity X-API-Key, else the client IP (X-Forwarded-For ignored); Redis
// deadline 50ms, then fail open; /metrics exempt`.
func (m *Middleware) Describe() string {
	c := m.cfg
	xff := "X-Forwarded-For ignored"
	if c.Break == BreakTrustXFF {
		xff = "X-Forwarded-For trusted from any client: broken on purpose"
	} else if c.TrustProxy == 1 {
		xff = "X-Forwarded-For trusted from 1 proxy"
	} else if c.TrustProxy > 1 {
		xff = fmt.Sprintf("X-Forwarded-For trusted from %d proxies", c.TrustProxy)
	}
	deadline := fmt.Sprintf("Redis deadline %s, then fail %s", c.RedisTimeout, c.Fail)
	if c.RedisTimeout == WaitForever {
		deadline = "no Redis deadline (requests wait as long as Redis takes)"
	}
	s := fmt.Sprintf("%s (RateLimit-Policy %s); identity %s, else the client IP (%s); %s; %s exempt",
		DescribeParams(m.limiter.Params()), m.policyValue, c.IdentityHeader, xff, deadline, MetricsPath)
	if c.Delay > 0 {
		s += fmt.Sprintf("; %s delayed %s", HelloPath, c.Delay)
	}
	return s
}

// DescribeParams reads limiter parameters back in words:
// "token-bucket capacity 10, rate 5/s".
func DescribeParams(p limiter.Params) string {
	s := string(p.Algo) + " " + p.Settings()
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
// is an exit-2 error that says what to do. Start does not probe the
// limiter; Run does, before it listens.
func Start(cfg Config, addr string) (*Server, error) {
	h, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return start(h, addr)
}

// start serves h on addr with the limits of h's configuration: the
// timeouts, MaxHeaderBytes and at most MaxConns connections at once.
func start(h *Handler, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, exitcode.Usagef("listen on %s: address already in use; stop what holds it or pick another --addr (port 0 picks a free one)", addr)
		}
		return nil, exitcode.Usagef("listen on %q: %v; --addr wants host:port such as 127.0.0.1:8011", addr, unwrapOp(err))
	}
	c := h.cfg
	s := &Server{
		h:  h,
		ln: ln,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: c.ReadHeaderTimeout,
			ReadTimeout:       c.ReadTimeout,
			WriteTimeout:      c.WriteTimeout + c.Delay,
			IdleTimeout:       c.IdleTimeout,
			MaxHeaderBytes:    c.MaxHeaderBytes,
			ErrorLog:          log.New(lineWriter{c.Log}, "serve: ", 0),
		},
		done: make(chan struct{}),
	}
	// serve speaks plain HTTP/1.1 (net/http offers HTTP/2 only over TLS),
	// so the limits above are all there is to configure.
	served := LimitListener(ln, c.MaxConns)
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(served); err != nil && !errors.Is(err, http.ErrServerClosed) {
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
//
// Before it listens, Run probes the limiter (see Middleware.Probe): a
// server or ACL user that cannot run the script is an exit-3 error, not a
// server that fails open on every request.
func Run(ctx context.Context, cfg Config, addr string, out io.Writer) error {
	h, err := New(cfg)
	if err != nil {
		return err
	}
	if err := h.Probe(ctx); err != nil {
		return err
	}
	s, err := start(h, addr)
	if err != nil {
		return err
	}
	c := h.cfg
	fmt.Fprintf(out, "serve: listening on %s; GET %s limited by %s; at most %d connections, headers within %s, requests within %s, bodies up to %d bytes\n",
		s.URL(), HelloPath, h.Describe(), c.MaxConns, c.ReadHeaderTimeout, c.ReadTimeout, c.MaxBody)
	select {
	case <-ctx.Done():
	case <-s.Done():
		return s.Err()
	}
	fmt.Fprintln(out, "serve: shutting down; finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace(cfg))
	defer cancel()
	err = s.Shutdown(sctx)
	n := s.h.Counts()
	fmt.Fprintf(out, "serve: stopped; allowed %d, limited %d, fail open %d, fail closed %d\n", n.Allowed, n.Limited, n.FailOpen, n.FailClosed)
	return err
}
