package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
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

	"github.com/ratelimit-dev/ratelimit/wire"
)

// The lean client: for plain http:// targets without a proxy, each VU owns
// one keep-alive HTTP/1.1 connection, writes the request serialised once at
// start-up in a single write, and reads the response in its own goroutine.
// net/http's Transport hands every request between three goroutines
// (caller, writeLoop, readLoop) and allocates a few kilobytes per request;
// on a small machine that overhead decides how high a rate stays clean.
// https, HTTP/2 and proxies use net/http (std.go); both implement client
// (client.go).

// h1Request is one prepared request: the bytes to write, whether the
// method expects no response body, and whether it may be sent again when
// a keep-alive connection turns out closed after it was written (an
// idempotent method, or an Idempotency-Key: net/http's rule).
type h1Request struct {
	wire       []byte
	head       bool
	replayable bool
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
	// Userinfo in the target is sent as Basic auth, as net/http's client
	// does, unless -H gave an Authorization of its own.
	if u.User != nil && len(o.Headers["Authorization"]) == 0 {
		pw, _ := u.User.Password()
		cred := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw))
		b.WriteString("Authorization: Basic " + cred + "\r\n")
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
	replayable := false
	switch o.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		replayable = true
	}
	if len(o.Headers["Idempotency-Key"]) > 0 || len(o.Headers["X-Idempotency-Key"]) > 0 {
		replayable = true
	}
	return h1Request{wire: b.Bytes(), head: o.Method == http.MethodHead, replayable: replayable}
}

// leanClient is the lean HTTP/1.1 client: each conn is one keep-alive
// connection to addr.
type leanClient struct {
	addr    string      // host:port to dial
	ids     *identities // each identity's request, serialised when first sent
	timeout time.Duration
	// slack is how much later than timeout a request may be cut: a
	// connection's deadline is renewed only when fewer than timeout is
	// left of it, not before every request.
	slack time.Duration
	// values are the checked fields' values seen, shared by the conns
	values valueTable
}

// valueTable keeps the values of the checked fields seen on a client's
// connections, so that a value that repeats (a policy, most RateLimit
// values) is not allocated again. Reads take no lock: the map behind the
// pointer is never changed, only replaced by a copy with one more value,
// up to maxValues.
type valueTable struct {
	m  atomic.Pointer[map[string]string]
	mu sync.Mutex
}

// maxValues bounds the values a client keeps.
const maxValues = 256

// get returns b as a string, one seen before when there is one.
func (t *valueTable) get(b []byte) string {
	if m := t.m.Load(); m != nil {
		if v, ok := (*m)[string(b)]; ok { // no allocation for the lookup
			return v
		}
	}
	v := string(b)
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	if old == nil {
		t.m.Store(&map[string]string{v: v})
		return v
	}
	if _, ok := (*old)[v]; ok || len(*old) >= maxValues {
		return v
	}
	m := make(map[string]string, len(*old)+1)
	for k := range *old {
		m[k] = k
	}
	m[v] = v
	t.m.Store(&m)
	return v
}

// deadlineSlack is the slack of a request's deadline: a tenth of the
// timeout, at most 100 ms.
func deadlineSlack(timeout time.Duration) time.Duration { return min(timeout/10, 100*time.Millisecond) }

func newLeanClient(o *Options, u *url.URL, ids *identities) *leanClient {
	c := &leanClient{addr: u.Host, ids: ids, timeout: o.Timeout, slack: deadlineSlack(o.Timeout)}
	if u.Port() == "" {
		c.addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return c
}

func (c *leanClient) open(ctx context.Context, in, out *atomic.Int64) conn {
	l := &leanConn{c: c, ctx: ctx, in: in, out: out, hdr: http.Header{}}
	// Every blocked read or write fails at once when ctx ends.
	l.stop = context.AfterFunc(ctx, func() {
		if hc := l.conn.Load(); hc != nil {
			_ = hc.c.SetDeadline(time.Unix(1, 0))
		}
	})
	return l
}

// warm connects the pre-allocated VUs before the clock starts, a few at
// a time, so the first second is not a storm of connection set-ups (which
// on a busy machine delays the first iterations enough to need many more
// VUs, each dialling in turn). A failed dial is left to the first request.
func (*leanClient) warm(conns []conn) {
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, c := range conns {
		l, ok := c.(*leanConn)
		if !ok {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, _ = l.dial()
		})
	}
	wg.Wait()
}

func (*leanClient) close() {}

// h1Conn is a VU's connection.
type h1Conn struct {
	c        net.Conn
	deadline time.Time  // the read and write deadline set on c
	check    *idleCheck // made on the first request that needs it
	raw      net.Conn   // c without its byte counting
	w        *wire.Conn // the socket's exchange side, where there is one (Linux)
}

// leanConn is a VU's side of the lean client.
type leanConn struct {
	c       *leanClient
	ctx     context.Context
	in, out *atomic.Int64
	conn    atomic.Pointer[h1Conn] // read by the interrupt callback
	hdr     http.Header            // reused for every response; only the checked fields
	stop    func() bool
	retries int64 // requests sent again on a new connection (retried)
}

// brPool holds the readers of responses: a VU holds one only while it
// reads, so a run with thousands of VUs keeps as many buffers as
// requests in flight, not one per VU.
var brPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// errStaleConn wraps the error of a request the target never read: it was
// written on a keep-alive connection the target had closed while it sat
// idle, which HTTP/1.1 allows at any time. do sends it once more on a new
// connection.
var errStaleConn = errors.New("keep-alive connection closed by the target")

// do runs one request: connect if needed, write, read the status and
// headers, drain the body. It returns the status (0 on error).
func (l *leanConn) do(k int) (int, http.Header, error) {
	r := l.c.ids.wire(k)
	status, err := l.once(r)
	if err != nil && errors.Is(err, errStaleConn) && l.ctx.Err() == nil {
		// A connection the target closed while it sat idle fails before
		// a byte of the response arrives: send once more on a new one,
		// like net/http does.
		l.retries++
		status, err = l.once(r)
	}
	if err != nil {
		l.closeConn()
		return 0, nil, err
	}
	return status, l.hdr, nil
}

// retried is how many requests the conn sent again on a new connection.
func (l *leanConn) retried() int64 { return l.retries }

func (l *leanConn) close() {
	l.stop()
	l.closeConn()
}

func (l *leanConn) closeConn() {
	if c := l.conn.Swap(nil); c != nil {
		c.c.Close()
	}
}

// once sends r once. A connection that was idle (dialled before the clock
// started, or kept from an earlier request) may have been closed by the
// target meanwhile: a request on it that was not written, or (replayable)
// got no byte of an answer, fails with errStaleConn. On a connection
// dialled for this request, the same failure is the target's.
func (l *leanConn) once(r *h1Request) (int, error) {
	c := l.conn.Load()
	idle := c != nil
	if idle && !r.replayable {
		// A request that may not be sent twice is not sent on a
		// connection the target has closed: look first.
		if c.check == nil {
			c.check = newIdleCheck(c.raw)
		}
		if c.check.closedByPeer() {
			l.closeConn()
			c, idle = nil, false
		}
	}
	if c == nil {
		var err error
		if c, err = l.dial(); err != nil {
			return 0, err
		}
	}
	// One deadline serves many requests: renewed only when less than the
	// timeout is left, so a request is cut between timeout and timeout +
	// slack after it started.
	if now := time.Now(); c.deadline.Sub(now) < l.c.timeout {
		c.deadline = now.Add(l.c.timeout + l.c.slack)
		if err := c.c.SetDeadline(c.deadline); err != nil {
			return 0, err
		}
	}
	// Checked after SetDeadline: an interrupt that set its past deadline
	// before ours is seen here, one after it cuts the read.
	if err := l.ctx.Err(); err != nil {
		return 0, err
	}
	br := brPool.Get().(*bufio.Reader)
	if c.w != nil {
		// the first read writes the request, inside the wait for the answer
		c.w.Arm(r.wire)
		br.Reset(c.w)
	} else {
		if n, err := c.c.Write(r.wire); err != nil {
			brPool.Put(br)
			return 0, l.writeFailed(idle, r, n, err)
		}
		br.Reset(c.c)
	}
	status, keep, err := readResponse(br, l.hdr, r.head, &l.c.values)
	if err == nil && br.Buffered() > 0 {
		keep = false // bytes beyond the response: the connection is out of step
	}
	br.Reset(nil)
	brPool.Put(br)
	if c.w != nil {
		if n, werr := c.w.Written(); werr != nil {
			return 0, l.writeFailed(idle, r, n, werr)
		}
	}
	if err != nil {
		l.closeConn()
		if idle && r.replayable && errors.Is(err, errNoResponse) {
			return 0, fmt.Errorf("%w: %w", errStaleConn, err)
		}
		return 0, err
	}
	if !keep {
		l.closeConn()
	}
	return status, nil
}

// writeFailed closes the connection a request could not be written on
// and names the failure: a stale keep-alive connection (sent again on a
// new one) when the connection was idle and nothing, or only a request
// that may be sent twice, went out.
func (l *leanConn) writeFailed(idle bool, r *h1Request, n int, err error) error {
	l.closeConn()
	if idle && !isTimeout(err) && (n == 0 || r.replayable) {
		return fmt.Errorf("%w: %w", errStaleConn, err)
	}
	return err
}

// dial connects to the target.
func (l *leanConn) dial() (*h1Conn, error) {
	d := net.Dialer{Timeout: l.c.timeout, KeepAlive: 30 * time.Second}
	tc, err := d.DialContext(l.ctx, "tcp", l.c.addr)
	if err != nil {
		return nil, err
	}
	c := &h1Conn{c: countConn{Conn: tc, in: l.in, out: l.out}, raw: tc, w: wire.New(tc, l.in, l.out)}
	l.conn.Store(c)
	if err := l.ctx.Err(); err != nil { // interrupted while dialling
		l.closeConn()
		return nil, err
	}
	return c, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// errNoResponse wraps a read error that came before any byte of a response.
var errNoResponse = errors.New("no response")

// errMalformed wraps every response the lean client cannot parse: a bad
// status line, Content-Length or chunk size, a header section too long. It
// is counted as a failed request of kind "malformed response", never a
// panic.
var errMalformed = errors.New("malformed response")

// Bounds on what one response may make the lean client read before its
// body: net/http's Transport has the same kind of limits.
const (
	h1MaxHeaderBytes = 1 << 20 // status lines and header sections, interim responses included
	h1MaxInterim     = 5       // 1xx responses before the final one
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// h1ReadResponse reads one response from br: skips 1xx interim responses,
// keeps the fields the header checks read in h (reused: each known field is
// truncated, not deleted), drains the body. keep reports whether the
// connection may carry another request. The status is always a three-digit
// code, 100 to 999; anything else is an error wrapping errMalformed.
func h1ReadResponse(br *bufio.Reader, h http.Header, head bool) (status int, keep bool, err error) {
	return readResponse(br, h, head, nil)
}

// readResponse is h1ReadResponse; values, when set, gives the checked
// fields' values, so that one seen before is not allocated again.
func readResponse(br *bufio.Reader, h http.Header, head bool, values *valueTable) (status int, keep bool, err error) {
	for k, vs := range h {
		h[k] = vs[:0]
	}
	headerBytes := 0
	for interim := 0; ; interim++ {
		if interim > h1MaxInterim {
			return 0, false, malformed("more than %d interim (1xx) responses", h1MaxInterim)
		}
		line, err := br.ReadSlice('\n')
		if err != nil {
			if len(line) == 0 && (err == io.EOF || isReset(err)) {
				return 0, false, fmt.Errorf("%w: %w", errNoResponse, err)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				return 0, false, malformed("status line longer than %d KiB", br.Size()>>10)
			}
			return 0, false, fmt.Errorf("read status line: %w", err)
		}
		headerBytes += len(line)
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
					return 0, false, malformed("response header line longer than %d KiB", br.Size()>>10)
				}
				return 0, false, fmt.Errorf("read header: %w", err)
			}
			if headerBytes += len(line); headerBytes > h1MaxHeaderBytes {
				return 0, false, malformed("response header section longer than %d KiB", h1MaxHeaderBytes>>10)
			}
			line = trimCRLF(line)
			if len(line) == 0 {
				break
			}
			colon := bytes.IndexByte(line, ':')
			if colon <= 0 {
				return 0, false, malformed("header line %q", clip(line))
			}
			name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
			switch {
			case asciiEqualFold(name, "content-length"):
				n, ok := parseDecimal(value)
				if !ok || length >= 0 && n != length {
					return 0, false, malformed("Content-Length %q", clip(value))
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
					// does), or one seen before: no allocation for the
					// common case.
					if n := len(vs); n < cap(vs) && vs[:n+1][n] == string(value) {
						h[key] = vs[:n+1]
					} else if values != nil {
						h[key] = append(vs, values.get(value))
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

// parseStatusLine reads "HTTP/1.x NNN[ reason]": NNN is exactly three
// digits, 100 to 999 (a status of 600-999 is odd but well formed and
// counted under its own code).
func parseStatusLine(line []byte) (status int, keep bool, err error) {
	line = trimCRLF(line)
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, malformed("status line %q", clip(line))
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, false, malformed("status line %q", clip(line))
		}
		status = status*10 + int(c-'0')
	}
	if len(line) > 12 && line[12] != ' ' || status < 100 {
		return 0, false, malformed("status line %q", clip(line))
	}
	return status, line[7] == '1', nil // HTTP/1.1 keeps the connection by default
}

// parseDecimal reads a Content-Length: ASCII digits only (no sign, no
// space), at most 18 of them so the value fits an int64.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseHex reads a chunk size: hex digits only, at most 15 of them.
func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | int64(c)
	}
	return n, true
}

// clip shortens wire bytes quoted in an error.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

func drainChunked(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return malformed("chunk size line longer than %d KiB", br.Size()>>10)
			}
			return fmt.Errorf("read chunk size: %w", err)
		}
		line = trimCRLF(line)
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, ok := parseHex(bytes.TrimSpace(line))
		if !ok {
			return malformed("chunk size %q", clip(line))
		}
		if n == 0 {
			trailer := 0
			for { // trailer section up to the empty line
				t, err := br.ReadSlice('\n')
				if err != nil {
					if errors.Is(err, bufio.ErrBufferFull) {
						return malformed("trailer line longer than %d KiB", br.Size()>>10)
					}
					return fmt.Errorf("read trailer: %w", err)
				}
				if trailer += len(t); trailer > h1MaxHeaderBytes {
					return malformed("trailer section longer than %d KiB", h1MaxHeaderBytes>>10)
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
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("read chunk: %w", err)
		}
		if err != nil || len(trimCRLF(crlf)) != 0 {
			return malformed("chunk not followed by CRLF")
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
