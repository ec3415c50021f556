// Package hostile is a test helper: an HTTP server on a free loopback port
// that misbehaves on purpose, one misbehaviour per path, and a runner that
// runs the ratelimit command as a child process and measures how long it
// took and its peak resident memory (the kernel's getrusage of the child),
// so a test can hold a command to a time and a memory bound against a
// target or a file built to exhaust it. Only tests import it.
//
// The server speaks raw TCP: it reads each request with net/http's parser
// and writes whatever the path asks for, byte by byte if need be. Paths:
//
//	/slowloris     a status line, then one header trickled a byte every
//	               100 ms, never ending
//	/hang          reads the request and never answers
//	/drip          200 with Content-Length of 1 GiB, then the body one byte
//	               every 20 ms
//	/big-header    200 with one header of 10 MiB
//	/header-lines  200 with 10 MiB of short header lines
//	/big-body      200 with a 1 GiB body sent as fast as it is read
//	/status-199    "HTTP/1.1 199" as the only answer, the connection held
//	               open
//	/1xx-flood     "HTTP/1.1 102 Processing" over and over
//	/reset         reads the request and resets the connection (RST)
//	/redirect      302 to itself, keep-alive
//	/garbage       64 KiB of bytes that are not HTTP, then close
//	/delay         200 after ?ms= milliseconds (default 4000), keep-alive
//	/huge-quota    200 advertising RateLimit-Policy q=1000000 per 60 s
//	/limit/NAME    a fixed window of ?q= requests (default 5) per ?w=
//	               seconds (default 2) and X-API-Key (the client address
//	               without one), refusing with 429 (or ?status=) and the
//	               headers of NAME: no-store (the control), max-age
//	               (Cache-Control: public, max-age=60), s-maxage
//	               (Cache-Control: s-maxage=60), expires (Expires a year
//	               ahead), bare (no-store and no Retry-After)
//
// A TLS ClientHello gets a plain HTTP 400, as net/http's server answers
// one. Every connection is closed when the test ends.
package hostile

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running hostile server.
type Server struct {
	// URL is http://127.0.0.1:PORT, without a path.
	URL string

	ln    net.Listener
	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}

	// the fixed windows of /limit: key -> window start and count
	lim map[string]*window
}

type window struct {
	start time.Time
	n     int
}

// Start starts a hostile server and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("hostile: listen: %v", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln, done: make(chan struct{}),
		conns: map[net.Conn]struct{}{}, lim: map[string]*window{}}
	s.wg.Go(s.accept)
	t.Cleanup(s.Close)
	return s
}

// Close stops accepting, closes every connection and waits for them.
func (s *Server) Close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			c.Close()
			return
		default:
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.serve(c)
		})
	}
}

// sleep waits d, false when the server is closing.
func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.done:
		return false
	case <-t.C:
		return true
	}
}

// serve answers the requests of one connection while the path keeps it.
func (s *Server) serve(c net.Conn) {
	br := bufio.NewReader(c)
	// a TLS ClientHello on this plain HTTP port: answer 400 in plain
	// HTTP, as net/http's server and nginx do
	if b, err := br.Peek(1); err == nil && b[0] == 0x16 {
		_, _ = io.WriteString(c, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
		return
	}
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
		if !s.answer(c, req) {
			return
		}
	}
}

// answer writes the path's answer; false closes the connection.
func (s *Server) answer(c net.Conn, req *http.Request) bool {
	path := req.URL.Path
	q := req.URL.Query()
	switch {
	case path == "/slowloris":
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Slow: "); err != nil {
			return false
		}
		for s.sleep(100 * time.Millisecond) {
			if _, err := c.Write([]byte{'a'}); err != nil {
				return false
			}
		}
		return false
	case path == "/hang":
		<-s.done
		return false
	case path == "/drip":
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1073741824\r\n\r\n"); err != nil {
			return false
		}
		for s.sleep(20 * time.Millisecond) {
			if _, err := c.Write([]byte{'a'}); err != nil {
				return false
			}
		}
		return false
	case path == "/big-header":
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Big: "); err != nil {
			return false
		}
		if !s.repeat(c, strings.Repeat("a", 64<<10), 10<<20) {
			return false
		}
		_, _ = io.WriteString(c, "\r\n\r\nok")
		return false
	case path == "/header-lines":
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"); err != nil {
			return false
		}
		if !s.repeat(c, strings.Repeat("X-N: v\r\n", 8<<10), 10<<20) {
			return false
		}
		_, _ = io.WriteString(c, "\r\nok")
		return false
	case path == "/big-body":
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n"); err != nil {
			return false
		}
		s.repeat(c, strings.Repeat("a", 64<<10), 1<<30)
		return false
	case path == "/status-199":
		if _, err := io.WriteString(c, "HTTP/1.1 199 Informational\r\n\r\n"); err != nil {
			return false
		}
		<-s.done
		return false
	case path == "/1xx-flood":
		for {
			if _, err := io.WriteString(c, "HTTP/1.1 102 Processing\r\n\r\n"); err != nil {
				return false
			}
			if !s.sleep(10 * time.Millisecond) {
				return false
			}
		}
	case path == "/reset":
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // Close sends RST
		}
		return false
	case path == "/redirect":
		_, err := io.WriteString(c, "HTTP/1.1 302 Found\r\nLocation: /redirect\r\nContent-Length: 0\r\n\r\n")
		return err == nil
	case path == "/garbage":
		b := make([]byte, 64<<10)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		b[0] = 0 // never "H" of HTTP/
		_, _ = c.Write(b)
		return false
	case path == "/delay":
		ms, err := strconv.Atoi(q.Get("ms"))
		if err != nil {
			ms = 4000
		}
		if !s.sleep(time.Duration(ms) * time.Millisecond) {
			return false
		}
		_, err = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return err == nil
	case path == "/huge-quota":
		_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nRateLimit-Policy: \"default\";q=1000000;w=60\r\nRateLimit: \"default\";r=999999;t=60\r\nContent-Length: 2\r\n\r\nok")
		return err == nil
	case strings.HasPrefix(path, "/limit/"):
		return s.limit(c, req, strings.TrimPrefix(path, "/limit/"))
	}
	_, err := io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
	return err == nil
}

// repeat writes chunk until n bytes are written; false on a write error
// or when the server closes.
func (s *Server) repeat(c net.Conn, chunk string, n int) bool {
	for sent := 0; sent < n; sent += len(chunk) {
		select {
		case <-s.done:
			return false
		default:
		}
		if _, err := io.WriteString(c, chunk); err != nil {
			return false
		}
	}
	return true
}

// limit is a fixed window per identity whose 429 carries the caching
// headers of variant.
func (s *Server) limit(c net.Conn, req *http.Request, variant string) bool {
	quota, err := strconv.Atoi(req.URL.Query().Get("q"))
	if err != nil || quota <= 0 {
		quota = 5
	}
	w, err := strconv.Atoi(req.URL.Query().Get("w"))
	if err != nil || w <= 0 {
		w = 2
	}
	key := req.Header.Get("X-Api-Key")
	if key == "" {
		key, _, _ = net.SplitHostPort(c.RemoteAddr().String())
	}
	key = variant + "|" + key
	now := time.Now()
	s.mu.Lock()
	win := s.lim[key]
	if win == nil || now.Sub(win.start) >= time.Duration(w)*time.Second {
		win = &window{start: now}
		s.lim[key] = win
	}
	win.n++
	n := win.n
	reset := max(int((time.Duration(w)*time.Second-now.Sub(win.start)+time.Second-1)/time.Second), 1)
	s.mu.Unlock()
	h := fmt.Sprintf("RateLimit-Policy: \"fixed\";q=%d;w=%d\r\nRateLimit: \"fixed\";r=%d;t=%d\r\n", quota, w, max(quota-n, 0), reset)
	if n <= quota {
		_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\n"+h+"Content-Length: 2\r\n\r\nok")
		return err == nil
	}
	if variant != "bare" {
		h += fmt.Sprintf("Retry-After: %d\r\n", reset)
	}
	switch variant {
	case "bare":
		h += "Cache-Control: no-store\r\n"
	case "no-store":
		h += "Cache-Control: no-store\r\n"
	case "max-age":
		h += "Cache-Control: public, max-age=60\r\n"
	case "s-maxage":
		h += "Cache-Control: s-maxage=60\r\n"
	case "expires":
		h += "Expires: " + now.AddDate(1, 0, 0).UTC().Format(http.TimeFormat) + "\r\n"
	}
	code, err := strconv.Atoi(req.URL.Query().Get("status"))
	if err != nil || code < 400 || code > 599 {
		code = http.StatusTooManyRequests
	}
	_, err = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\n%sContent-Length: 0\r\n\r\n", code, http.StatusText(code), h)
	return err == nil
}
