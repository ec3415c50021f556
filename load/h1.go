package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The lean client: for plain http:// targets without a proxy, each VU owns
// one keep-alive HTTP/1.1 connection, writes the request serialised once at
// start-up in a single write, and reads the response in its own goroutine.
// net/http's Transport hands every request between three goroutines
// (caller, writeLoop, readLoop) and allocates a few kilobytes per request;
// on a small machine that overhead decides how high a rate stays clean.
// https, HTTP/2 and proxies use net/http.

// h1Request is one prepared request: the bytes to write, and whether the
// method expects no response body.
type h1Request struct {
	wire []byte
	head bool
}

// h1Prepare serialises the request for identity k once.
func h1Prepare(o *Options, u *url.URL, identity string) h1Request {
	var b bytes.Buffer
	path := u.RequestURI()
	b.WriteString(o.Method + " " + path + " HTTP/1.1\r\n")
	host := u.Host
	if vs := o.Headers["Host"]; len(vs) > 0 {
		host = vs[0]
	}
	b.WriteString("Host: " + host + "\r\n")
	if _, ok := o.Headers["User-Agent"]; !ok {
		b.WriteString("User-Agent: ratelimit-load/1\r\n")
	}
	for name, vs := range o.Headers {
		if name == "Host" || name == "Content-Length" || name == "Connection" || name == "Transfer-Encoding" {
			continue
		}
		for _, v := range vs {
			b.WriteString(name + ": " + v + "\r\n")
		}
	}
	if identity != "" {
		b.WriteString(http.CanonicalHeaderKey(o.IdentityHeader) + ": " + identity + "\r\n")
	}
	switch o.Method {
	case http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodOptions, http.MethodTrace:
		if len(o.Body) > 0 {
			b.WriteString("Content-Length: " + strconv.Itoa(len(o.Body)) + "\r\n")
		}
	default:
		b.WriteString("Content-Length: " + strconv.Itoa(len(o.Body)) + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(o.Body)
	return h1Request{wire: b.Bytes(), head: o.Method == http.MethodHead}
}

// useH1 reports whether the lean client can carry the run's requests.
func useH1(o *Options, u *url.URL, probe *http.Request) bool {
	if o.Transport != nil || u.Scheme != "http" {
		return false
	}
	if p, err := http.ProxyFromEnvironment(probe); err != nil || p != nil {
		return false
	}
	return true
}

// h1Conn is a VU's connection.
type h1Conn struct {
	c    net.Conn
	br   *bufio.Reader
	used bool // served a request already (a failure may be a stale keep-alive)
}

// h1State is the lean client's part of a VU.
type h1State struct {
	conn atomic.Pointer[h1Conn] // read by the interrupt callback
	br   *bufio.Reader
	hdr  http.Header // reused for every response; only the checked fields
	stop func() bool
}

var errStaleConn = errors.New("keep-alive connection closed by the target")

// h1Do runs one request on VU v: connect if needed, write, read the status
// and headers, drain the body. It returns the status (0 on error).
func (e *engine) h1Do(v *vu, r *h1Request) (int, error) {
	st := &v.h1
	for attempt := 0; ; attempt++ {
		status, err := e.h1Once(v, r)
		if err == nil {
			return status, nil
		}
		// A connection the target closed while it sat idle fails before a
		// byte of the response arrives: redial once, like net/http does.
		if errors.Is(err, errStaleConn) && attempt == 0 && e.runCtx.Err() == nil {
			continue
		}
		st.closeConn()
		return 0, err
	}
}

func (st *h1State) closeConn() {
	if c := st.conn.Swap(nil); c != nil {
		c.c.Close()
	}
}

func (e *engine) h1Once(v *vu, r *h1Request) (int, error) {
	st := &v.h1
	c := st.conn.Load()
	if c == nil {
		var err error
		if c, err = e.h1Dial(v); err != nil {
			return 0, err
		}
	}
	reused := c.used
	c.used = true
	if err := c.c.SetDeadline(time.Now().Add(e.o.Timeout)); err != nil {
		return 0, err
	}
	// Checked after SetDeadline: an interrupt that set its past deadline
	// before ours is seen here, one after it cuts the read.
	if err := e.runCtx.Err(); err != nil {
		return 0, err
	}
	if _, err := c.c.Write(r.wire); err != nil {
		st.closeConn()
		if reused && !isTimeout(err) {
			return 0, fmt.Errorf("%w: %w", errStaleConn, err)
		}
		return 0, err
	}
	status, keep, err := h1ReadResponse(c.br, st.hdr, r.head)
	if err != nil {
		st.closeConn()
		if reused && errors.Is(err, errNoResponse) {
			return 0, fmt.Errorf("%w: %w", errStaleConn, err)
		}
		return 0, err
	}
	if !keep {
		st.closeConn()
	}
	return status, nil
}

// h1Dial connects VU v to the target.
func (e *engine) h1Dial(v *vu) (*h1Conn, error) {
	st := &v.h1
	d := net.Dialer{Timeout: e.o.Timeout, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(e.runCtx, "tcp", e.h1Addr)
	if err != nil {
		return nil, err
	}
	if st.br == nil {
		st.br = bufio.NewReaderSize(nc, 16<<10)
	} else {
		st.br.Reset(nc)
	}
	c := &h1Conn{c: nc, br: st.br}
	st.conn.Store(c)
	if err := e.runCtx.Err(); err != nil { // interrupted while dialling
		st.closeConn()
		return nil, err
	}
	return c, nil
}

// h1Warm connects the pre-allocated VUs before the clock starts, a few at
// a time, so the first second is not a storm of connection set-ups (which
// on a busy machine delays the first iterations enough to need many more
// VUs, each dialling in turn). A failed dial is left to the first request.
func (e *engine) h1Warm(vus []*vu) {
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, v := range vus {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, _ = e.h1Dial(v)
		})
	}
	wg.Wait()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// errNoResponse wraps a read error that came before any byte of a response.
var errNoResponse = errors.New("no response")

// h1ReadResponse reads one response from br: skips 1xx interim responses,
// keeps the fields the header checks read in h (reused: each known field is
// truncated, not deleted), drains the body. keep reports whether the
// connection may carry another request.
func h1ReadResponse(br *bufio.Reader, h http.Header, head bool) (status int, keep bool, err error) {
	for k, vs := range h {
		h[k] = vs[:0]
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if len(line) == 0 && (err == io.EOF || isReset(err)) {
				return 0, false, fmt.Errorf("%w: %w", errNoResponse, err)
			}
			return 0, false, fmt.Errorf("read status line: %w", err)
		}
		status, keep, err = parseStatusLine(line)
		if err != nil {
			return 0, false, err
		}
		var length int64 = -1
		chunked := false
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				if errors.Is(err, bufio.ErrBufferFull) {
					return 0, false, errors.New("response header line longer than 16 KiB")
				}
				return 0, false, fmt.Errorf("read header: %w", err)
			}
			line = trimCRLF(line)
			if len(line) == 0 {
				break
			}
			colon := bytes.IndexByte(line, ':')
			if colon <= 0 {
				return 0, false, fmt.Errorf("malformed header line %q", line)
			}
			name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
			switch {
			case asciiEqualFold(name, "content-length"):
				n, err := strconv.ParseInt(string(value), 10, 64)
				if err != nil || n < 0 || length >= 0 && n != length {
					return 0, false, fmt.Errorf("bad Content-Length %q", value)
				}
				length = n
			case asciiEqualFold(name, "transfer-encoding"):
				chunked = asciiContainsFold(value, "chunked")
			case asciiEqualFold(name, "connection"):
				if asciiContainsFold(value, "close") {
					keep = false
				} else if asciiContainsFold(value, "keep-alive") {
					keep = true
				}
			default:
				if key := checkedField(name); key != "" {
					vs := h[key]
					// Reuse the last string when the value repeats (a policy
					// does): no allocation for the common case.
					if n := len(vs); n < cap(vs) && vs[:n+1][n] == string(value) {
						h[key] = vs[:n+1]
					} else {
						h[key] = append(vs, string(value))
					}
				}
			}
		}
		if status >= 100 && status < 200 && status != http.StatusSwitchingProtocols {
			continue // interim response; the real one follows
		}
		switch {
		case head || status == http.StatusNoContent || status == http.StatusNotModified:
		case chunked:
			if err := drainChunked(br); err != nil {
				return 0, false, err
			}
		case length >= 0:
			if _, err := br.Discard(int(length)); err != nil {
				return 0, false, fmt.Errorf("read body: %w", err)
			}
		default: // delimited by the end of the connection
			if _, err := io.Copy(io.Discard, br); err != nil {
				return 0, false, fmt.Errorf("read body: %w", err)
			}
			keep = false
		}
		return status, keep, nil
	}
}

func parseStatusLine(line []byte) (status int, keep bool, err error) {
	line = trimCRLF(line)
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, false, fmt.Errorf("malformed status line %q", line)
		}
		status = status*10 + int(c-'0')
	}
	if len(line) > 12 && line[12] != ' ' || status < 100 {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	return status, line[7] == '1', nil // HTTP/1.1 keeps the connection by default
}

func drainChunked(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("read chunk size: %w", err)
		}
		line = trimCRLF(line)
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			for { // trailer section up to the empty line
				t, err := br.ReadSlice('\n')
				if err != nil {
					return fmt.Errorf("read trailer: %w", err)
				}
				if len(trimCRLF(t)) == 0 {
					return nil
				}
			}
		}
		if _, err := br.Discard(int(n)); err != nil {
			return fmt.Errorf("read chunk: %w", err)
		}
		crlf, err := br.ReadSlice('\n')
		if err != nil || len(trimCRLF(crlf)) != 0 {
			return fmt.Errorf("chunk not followed by CRLF")
		}
	}
}

func trimCRLF(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// checkedFields maps lower-case field names to the canonical keys the
// header checks read.
var checkedFields = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"RateLimit", "RateLimit-Policy", "Retry-After", "Cache-Control", "Expires",
		"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
		"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
	} {
		m[strings.ToLower(k)] = http.CanonicalHeaderKey(k)
	}
	return m
}()

// checkedField returns the canonical key of a field the checks read, or "".
func checkedField(name []byte) string {
	if len(name) > 32 {
		return ""
	}
	var low [32]byte
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	return checkedFields[string(low[:len(name)])] // no allocation for the lookup
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

func asciiContainsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if asciiEqualFold(b[i:i+len(s)], s) {
			return true
		}
	}
	return false
}

// interruptOnDone makes every blocked read or write of v fail at once when
// ctx ends (Ctrl-C or the run's hard deadline).
func (v *vu) interruptOnDone(ctx context.Context) {
	v.h1.stop = context.AfterFunc(ctx, func() {
		if c := v.h1.conn.Load(); c != nil {
			_ = c.c.SetDeadline(time.Unix(1, 0))
		}
	})
}
