package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/ratelimit-dev/ratelimit/tally"
)

// stdClient is net/http: https (HTTP/2 where the target offers it),
// proxies (HTTP_PROXY), injected transports and --http-client std. Its
// Transport keeps an idle connection for every VU; it counts the bytes of
// all of them together.
type stdClient struct {
	hc      *http.Client
	tr      *http.Transport // nil when Options.Transport was given
	ids     *identities     // each identity's request, built when first sent
	body    []byte
	timeout time.Duration
}

func newStdClient(o *Options, ids *identities, in, out *atomic.Int64) *stdClient {
	c := &stdClient{ids: ids, body: o.Body, timeout: o.Timeout}
	if o.Transport != nil {
		c.hc = &http.Client{Transport: o.Transport}
	} else {
		c.tr = &http.Transport{
			Proxy: http.ProxyFromEnvironment,
			DialContext: countingDial((&net.Dialer{
				Timeout:   o.Timeout,
				KeepAlive: 30 * time.Second,
			}).DialContext, in, out),
			// Every VU may hold a connection: keep them all idle between
			// iterations instead of closing and re-dialling.
			MaxIdleConns:           o.MaxVUs,
			MaxIdleConnsPerHost:    o.MaxVUs,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    o.Timeout,
			ExpectContinueTimeout:  time.Second,
			DisableCompression:     true, // measure the bytes the target sends
			MaxResponseHeaderBytes: h1MaxHeaderBytes,
			ForceAttemptHTTP2:      true,
		}
		c.hc = &http.Client{Transport: c.tr}
	}
	// A 3xx is an answer to count, not a hop to follow.
	c.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// open ignores in and out: the Transport's connections are shared, so
// they are counted on the client.
func (c *stdClient) open(ctx context.Context, _, _ *atomic.Int64) conn {
	return &stdConn{c: c, run: ctx}
}

func (*stdClient) warm([]conn) {}

func (c *stdClient) close() {
	if c.tr != nil {
		c.tr.CloseIdleConnections()
	}
}

// stdConn is a VU's side of net/http. Its requests carry ctx, derived once
// from the run's context (not per request, so VUs do not contend on the run
// context's lock); timer cancels it when a request outlives the timeout,
// and the conn renews it.
type stdConn struct {
	c      *stdClient
	run    context.Context
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
	reqs   []*http.Request // the prepared requests bound to ctx (nil: bind per request)
}

// maxBoundRequests is how many prepared requests (identities) a VU keeps
// bound to its context; beyond it, each iteration binds its own copy.
const maxBoundRequests = 64

// renew gives the conn a fresh context and timeout timer. Each timer
// cancels only the context it was made with, so a timer firing late is
// harmless.
func (s *stdConn) renew() {
	if s.cancel != nil {
		s.cancel()
	}
	ctx, cancel := context.WithCancel(s.run)
	s.ctx, s.cancel = ctx, cancel
	s.timer = time.AfterFunc(time.Hour, cancel)
	s.timer.Stop()
	// Requests with a body need a fresh body each time: they are never kept.
	if s.c.ids.n <= maxBoundRequests && len(s.c.body) == 0 {
		s.reqs = make([]*http.Request, s.c.ids.n)
	}
}

func (s *stdConn) request(k int) *http.Request {
	if s.reqs != nil {
		req := s.reqs[k]
		if req == nil {
			req = s.c.ids.request(k).WithContext(s.ctx)
			s.reqs[k] = req
		}
		return req
	}
	req := s.c.ids.request(k).WithContext(s.ctx)
	if body := s.c.body; len(body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return req
}

func (s *stdConn) do(k int) (int, http.Header, error) {
	if s.ctx == nil {
		s.renew()
	}
	req := s.request(k)
	s.timer.Reset(s.c.timeout)
	resp, err := s.c.hc.Do(req)
	status := 0
	var h http.Header
	if err == nil && !tally.ValidStatus(resp.StatusCode) {
		// net/http takes any three digits, "000" and "+12" included
		resp.Body.Close()
		err = malformed("status %d is not a three-digit code from 100", resp.StatusCode)
	} else if err == nil {
		status, h = resp.StatusCode, resp.Header
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			status, h = 0, nil // the body was cut: a transport error after all
		}
	}
	if !s.timer.Stop() {
		s.renew() // the timer cancelled this conn's context
		if status == 0 {
			err = fmt.Errorf("no response within %s: %w (%w)", s.c.timeout, context.DeadlineExceeded, err)
		}
	}
	return status, h, err
}

func (s *stdConn) close() {
	if s.cancel != nil {
		s.timer.Stop()
		s.cancel()
	}
}
