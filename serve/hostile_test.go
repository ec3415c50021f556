package serve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// hostileServer starts New's handler on a loopback port with cfg's limits
// on the shared standalone server.
func hostileServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	tg := redistest.Standalone(t)
	cfg.Store = redislimit.NewStore(tg.Client)
	cfg.Params = bucket(t, 100, "1/m")
	cfg.KeyPrefix = "test-" + uuid.NewString()
	s, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		_ = s.srv.Close()
		<-s.Done()
	})
	forget(t, tg.Client, s.Handler(), IP(netip.MustParseAddr("127.0.0.1")))
	return s
}

// trickle writes head on a fresh connection, then one byte of pad every
// 20 ms, and reads until the server closes the connection or wait passes.
// It returns what the server sent and whether it closed the connection.
func trickle(t *testing.T, addr, head string, pad byte, wait time.Duration) (got string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatalf("write head: %v", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte{pad}); err != nil {
					return
				}
			}
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return string(b), false
	}
	return string(b), true // EOF or a reset: the server closed it
}

// TestSlowClientsCut: a client that trickles its headers (slowloris) is cut
// after ReadHeaderTimeout; one that trickles a body is cut after
// ReadTimeout, on /hello and on /metrics. The negative control is a server
// with long timeouts, where the same clients are still connected.
func TestSlowClientsCut(t *testing.T) {
	const generous = 5 * time.Second
	cut := hostileServer(t, Config{ReadHeaderTimeout: 100 * time.Millisecond, ReadTimeout: 300 * time.Millisecond})
	control := hostileServer(t, Config{ReadHeaderTimeout: time.Minute, ReadTimeout: time.Minute})
	tests := []struct {
		name, head string
		wantPrefix string // what the cut server answers before it closes
	}{
		{"slowloris headers", "GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: ", ""},
		{"slow body to /hello", "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", "HTTP/1.1 408"},
		{"slow body to /metrics", "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", "HTTP/1.1 408"},
		{"slow chunked body", "POST /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n", "HTTP/1.1 408"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, closed := trickle(t, cut.Addr(), tt.head, 'a', generous)
			if !closed {
				t.Errorf("%s: still connected after %s with ReadHeaderTimeout 100ms, ReadTimeout 300ms (got %q)", tt.name, generous, got)
			}
			if !strings.HasPrefix(got, tt.wantPrefix) || (tt.wantPrefix == "" && strings.HasPrefix(got, "HTTP/1.1 2")) {
				t.Errorf("%s: server sent %q, want a response starting %q", tt.name, got, tt.wantPrefix)
			}
			if got, closed := trickle(t, control.Addr(), tt.head, 'a', 500*time.Millisecond); closed {
				t.Errorf("control: %s: a server with 1-minute timeouts closed the connection within 500ms (sent %q); the test proves nothing", tt.name, got)
			}
		})
	}
	if c := cut.Handler().Counts(); c != (Counts{}) {
		t.Errorf("slow requests reached the limiter: %+v", c)
	}
}

// TestBodyCap: a body over MaxBody gets 413 before the limiter runs, both
// with a Content-Length and chunked, on /hello and /metrics; one within
// the cap goes on to the limiter.
func TestBodyCap(t *testing.T) {
	s := hostileServer(t, Config{MaxBody: 1024})
	big := strings.Repeat("x", 2048)
	for _, tt := range []struct {
		name, path, body string
		chunked          bool
		want             int
	}{
		{"declared length over the cap", HelloPath, big, false, http.StatusRequestEntityTooLarge},
		{"chunked over the cap", HelloPath, big, true, http.StatusRequestEntityTooLarge},
		{"metrics, over the cap", MetricsPath, big, false, http.StatusRequestEntityTooLarge},
		{"within the cap", HelloPath, big[:1024], false, http.StatusMethodNotAllowed}, // POST /hello: the limiter ran, then 405
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Handler().Counts()
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // hides the length: chunked
			}
			req, err := http.NewRequest(http.MethodPost, s.URL()+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST %s: %v", tt.path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("POST %s with %d bytes (chunked %v) = %d %q, want %d", tt.path, len(tt.body), tt.chunked, resp.StatusCode, b, tt.want)
			}
			after := s.Handler().Counts()
			if tt.want == http.StatusRequestEntityTooLarge {
				if string(b) != `{"error":"body_too_large","max_body_bytes":1024}`+"\n" {
					t.Errorf("413 body = %q", b)
				}
				if after != before {
					t.Errorf("an oversized request reached the limiter: %+v -> %+v", before, after)
				}
			} else if after.Allowed != before.Allowed+1 {
				t.Errorf("a body within the cap did not reach the limiter: %+v -> %+v", before, after)
			}
		})
	}
}

// TestDefaultLimits: the defaults are in force when Config leaves them
// zero: a 64 KiB header gets 431 (net/http's own default would take 1 MiB)
// and a 2 MiB declared body gets 413.
func TestDefaultLimits(t *testing.T) {
	s := hostileServer(t, Config{})
	c := s.srv
	if c.ReadHeaderTimeout != DefaultReadHeaderTimeout || c.ReadTimeout != DefaultReadTimeout ||
		c.WriteTimeout != DefaultWriteTimeout || c.IdleTimeout != DefaultIdleTimeout || c.MaxHeaderBytes != DefaultMaxHeaderBytes {
		t.Errorf("http.Server limits = %s %s %s %s %d, want the defaults", c.ReadHeaderTimeout, c.ReadTimeout, c.WriteTimeout, c.IdleTimeout, c.MaxHeaderBytes)
	}
	if code := rawStatus(t, s.Addr(), "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("h", 64<<10)+"\r\n\r\n"); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB header = %d, want 431", code)
	}
	if r := get(t, http.DefaultClient, s.URL()+MetricsPath, "X-Fine", strings.Repeat("h", 8<<10)); r.status != http.StatusOK {
		t.Errorf("8 KiB header = %d, want 200", r.status)
	}
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer to a 2 MiB Content-Length: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Errorf("2 MiB Content-Length = %d (close %v), want 413 and the connection closed", resp.StatusCode, resp.Close)
	}
}

// TestMaxConns: with MaxConns 2 and two connections held open, a third is
// not served; once one of the two closes, the third gets its answer. The
// control is a cap of 3, where the third is served while both are held.
func TestMaxConns(t *testing.T) {
	for _, tt := range []struct {
		max        int
		wantWaited bool
	}{{2, true}, {3, false}} {
		s := hostileServer(t, Config{MaxConns: tt.max, ReadHeaderTimeout: 20 * time.Second, ReadTimeout: 20 * time.Second})
		var held []net.Conn
		for range 2 {
			c, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			_, _ = io.WriteString(c, "GET /hello HTTP/1.1\r\n") // and never the rest
			held = append(held, c)
		}
		third, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = third.Close() })
		_, _ = io.WriteString(third, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		rd := bufio.NewReader(third)
		if tt.wantWaited {
			// Unserved for 300 ms while both slots are held (a slow machine
			// could only make this pass wrongly, never fail wrongly) ...
			_ = third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err := rd.Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("MaxConns %d, 2 connections held: the third was answered (read: %v), want it to wait", tt.max, err)
			}
			// ... and served once one of them closes.
			_ = held[0].Close()
		}
		// The control has a free slot: the third is served with both held.
		_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("MaxConns %d: third connection: %v", tt.max, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("MaxConns %d: third connection = %d, want 200", tt.max, resp.StatusCode)
		}
	}
}

// TestLimitListenerClose: closing the listener wakes an Accept that waits
// for a slot, so Shutdown is not held up by the cap.
func TestLimitListenerClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(ln, 1)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first, err := l.Accept()
	if err != nil {
		t.Fatalf("first Accept: %v", err)
	}
	defer first.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		errc <- err
	}()
	_ = l.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept waiting for a slot did not return after Close")
	}
	// Closing a connection twice frees one slot, not two.
	_ = first.Close()
	_ = first.Close()
	if n := len(l.(*limitListener).sem); n != 0 {
		t.Errorf("slots in use after closing the only connection twice = %d, want 0", n)
	}
}

// rawStatus writes req on a fresh connection (in the background: the
// server may answer before it has read it all) and returns the status of
// the answer.
func rawStatus(t *testing.T, addr, req string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = io.WriteString(c, req) }()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestIdleConnectionsClosed: a keep-alive connection that sends nothing
// after its first request is closed after IdleTimeout; with a 1-minute
// timeout (the control) it is still open.
func TestIdleConnectionsClosed(t *testing.T) {
	for _, tt := range []struct {
		idle       time.Duration
		wait       time.Duration
		wantClosed bool
	}{{200 * time.Millisecond, 5 * time.Second, true}, {time.Minute, 500 * time.Millisecond, false}} {
		s := hostileServer(t, Config{IdleTimeout: tt.idle})
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		rd := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("first request: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		_ = c.SetReadDeadline(time.Now().Add(tt.wait))
		_, err = rd.ReadByte()
		closed := err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
		if closed != tt.wantClosed {
			t.Errorf("IdleTimeout %s: idle connection closed within %s = %v (%v), want %v", tt.idle, tt.wait, closed, err, tt.wantClosed)
		}
	}
}
