package fault

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// pauseSlice is how long each CLIENT PAUSE of a pause fault holds, ALL
// (pause) and WRITE (pause-write) alike: a pause is a chain of slices, so
// when this process dies the server is released within one slice.
//
// Under CLIENT PAUSE ALL the server holds every command of every normal
// client, CLIENT UNPAUSE included (checked on Redis 7.0), so a pause of
// the whole duration could not be undone on Ctrl-C. A pause fault is
// therefore a chain of short pauses on one connection of its own: the
// next CLIENT PAUSE is always already queued behind the one that holds,
// so when a slice lapses the server runs the queued renewal before any
// other client's held command, and the pause does not let one through.
// Undoing the fault closes that connection: the server drops what was
// queued, and the slice in force lapses within pauseSlice (plus the
// server's timer tick, 100 ms at the default hz). Should this process
// die, the kernel closes the connection and the pause ends the same way.
//
// Under CLIENT PAUSE WRITE the renewals themselves are not held, so they
// are paced instead: one every third of a slice, each moving the end of
// the pause a slice ahead (Redis keeps the later end). The fault never
// sends CLIENT UNPAUSE, which would also end a pause another client holds.
const pauseSlice = 100 * time.Millisecond

// pauseQueue is how many renewals wait behind the slice that holds.
const pauseQueue = 2

// replyError is an error reply of the server read off a raw connection;
// it is a redis.Error, so redisconn.Classify reads it as go-redis's own.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// The modes of CLIENT PAUSE a pause fault holds.
const (
	pauseAll   = "ALL"
	pauseWrite = "WRITE"
)

// pauser holds a CLIENT PAUSE ALL or WRITE in slices on its own connection.
type pauser struct {
	conn  net.Conn
	r     *bufio.Reader
	mode  string // pauseAll or pauseWrite
	slice time.Duration
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	err   error // why the renewals stopped early (nil when stopped)

	mu    sync.Mutex
	acked time.Time // when the server last acknowledged a WRITE renewal
}

// command encodes a RESP array of bulk strings.
func command(args ...string) []byte {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return []byte(b.String())
}

// readStatus reads one reply and returns nil for a status reply, the
// server's error for an error reply, and an error for anything else.
func readStatus(r *bufio.Reader) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "+"):
		return nil
	case strings.HasPrefix(line, "-"):
		return replyError(line[1:])
	}
	return fmt.Errorf("unexpected reply %.40q", line)
}

// auth is the AUTH command for user and password, nil without a password.
func auth(user, password string) []byte {
	switch {
	case password == "":
		return nil
	case user != "":
		return command("AUTH", user, password)
	}
	return command("AUTH", password)
}

// startPause logs in on conn (AUTH when password is set) and starts the
// chain of slices of mode (pauseAll or pauseWrite). It returns once the
// first CLIENT PAUSE was answered: the server holds its clients from
// then on.
func startPause(conn net.Conn, user, password, mode string, slice, timeout time.Duration) (*pauser, error) {
	p := &pauser{conn: conn, r: bufio.NewReader(conn), mode: mode, slice: slice, stop: make(chan struct{}), done: make(chan struct{})}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if login := auth(user, password); login != nil {
		if _, err := conn.Write(login); err != nil {
			return nil, fmt.Errorf("AUTH: %w", err)
		}
		if err := readStatus(p.r); err != nil {
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	first := p.renewal()
	if mode == pauseAll {
		// the renewals wait, queued behind the slice that holds
		for i := 0; i < pauseQueue; i++ {
			first = append(first, p.renewal()...)
		}
	}
	if _, err := conn.Write(first); err != nil {
		return nil, fmt.Errorf("CLIENT PAUSE: %w", err)
	}
	if err := readStatus(p.r); err != nil {
		return nil, fmt.Errorf("CLIENT PAUSE: %w", err)
	}
	p.setAcked(time.Now())
	_ = conn.SetDeadline(time.Time{})
	if mode == pauseAll {
		go p.renew(timeout)
	} else {
		go p.renewPaced(timeout)
	}
	return p, nil
}

func (p *pauser) renewal() []byte {
	return command("CLIENT", "PAUSE", strconv.FormatInt(p.slice.Milliseconds(), 10), p.mode)
}

func (p *pauser) setAcked(t time.Time) {
	p.mu.Lock()
	p.acked = t
	p.mu.Unlock()
}

// lapses is when the last slice acknowledged lapses (by this process's
// clock; the server's timer tick may add up to 100 ms).
func (p *pauser) lapses() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked.Add(p.slice)
}

// renewPaced renews a WRITE pause every third of a slice, until stopped:
// the server does not hold the renewals of a WRITE pause, so they cannot
// wait in a queue as those of a pause of everything do.
func (p *pauser) renewPaced(timeout time.Duration) {
	defer close(p.done)
	tick := time.NewTicker(max(p.slice/3, time.Millisecond))
	defer tick.Stop()
	fail := func(err error) {
		select {
		case <-p.stop:
		default:
			p.err = err
		}
	}
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		_ = p.conn.SetDeadline(time.Now().Add(timeout))
		if _, err := p.conn.Write(p.renewal()); err != nil {
			fail(err)
			return
		}
		if err := readStatus(p.r); err != nil {
			fail(err)
			return
		}
		p.setAcked(time.Now())
	}
}

// renew queues one more slice each time one starts, until stopped.
func (p *pauser) renew(timeout time.Duration) {
	defer close(p.done)
	for {
		// a slice starts at most pauseSlice plus the server's tick after
		// the one before; a longer silence means the server is gone
		_ = p.conn.SetReadDeadline(time.Now().Add(p.slice + timeout))
		err := readStatus(p.r)
		select {
		case <-p.stop:
			return
		default:
		}
		if err != nil {
			p.err = err
			return
		}
		if _, err := p.conn.Write(p.renewal()); err != nil {
			select {
			case <-p.stop:
			default:
				p.err = err
			}
			return
		}
	}
}

// end stops the renewals and closes the connection; the slice in force
// lapses on its own. It returns why the renewals had stopped early, if
// they had.
func (p *pauser) end() error {
	p.once.Do(func() {
		close(p.stop)
		_ = p.conn.Close()
	})
	<-p.done
	if p.err != nil && !errors.Is(p.err, net.ErrClosed) {
		return fmt.Errorf("the pause was not renewed: %w", p.err)
	}
	return nil
}

// pauseProbeWait is how long a command a pause would hold may go
// unanswered, while the server answers others at once, before the server
// is taken as paused.
const pauseProbeWait = time.Second

// pauseProbe is a command no server knows: a server answers it with an
// error at once, before any pause applies (and before AUTH is checked).
const pauseProbe = "RATELIMIT.PAUSE-PROBE"

// noScript is the SHA1 of no script: EVALSHA of it is held by a WRITE
// pause like any script call, then fails with NOSCRIPT, having changed
// nothing (EVAL would add its script to the server's cache).
const noScript = "0000000000000000000000000000000000000000"

// heldBy tells which CLIENT PAUSE, one this process did not start, holds
// the target's clients now: pauseAll, pauseWrite, or "" (none, or it
// cannot tell: no answer at all, a refused login or command). Redis 7.0
// shows a pause neither in INFO nor in CLIENT LIST, so it asks on two
// connections of its own: one sends pauseProbe, answered even under a
// pause; the other logs in and sends PING, which a pause of everything
// holds, then EVALSHA of noScript, which a WRITE pause holds too.
func (in *Injector) heldBy(ctx context.Context) string {
	alive, err := in.rawConn(ctx)
	if err != nil {
		return ""
	}
	defer alive.Close()
	probe, err := in.rawConn(ctx)
	if err != nil {
		return ""
	}
	defer probe.Close()
	deadline := time.Now().Add(in.timeout)
	_ = alive.SetDeadline(deadline)
	_ = probe.SetDeadline(deadline)
	ro := in.target.opts
	login := auth(ro.Username, ro.Password)
	if _, err := probe.Write(append(login, command("PING")...)); err != nil {
		return ""
	}
	if _, err := alive.Write(command(pauseProbe)); err != nil {
		return ""
	}
	if _, err := readLine(bufio.NewReader(alive)); err != nil {
		return "" // the server answers nothing: not a pause
	}
	r := bufio.NewReader(probe)
	_ = probe.SetDeadline(time.Now().Add(pauseProbeWait))
	replies := 1
	if login != nil {
		replies = 2
	}
	for range replies {
		line, err := readLine(r)
		if timedOut(err) {
			return pauseAll
		}
		if err != nil || strings.HasPrefix(line, "-") {
			return "" // a refused login or PING: cannot tell
		}
	}
	_ = probe.SetDeadline(time.Now().Add(pauseProbeWait))
	if _, err := probe.Write(command("EVALSHA", noScript, "0")); err != nil {
		return ""
	}
	if _, err := readLine(r); timedOut(err) {
		return pauseWrite
	}
	return ""
}

// foreignPause refuses (exit 2) to go on while another client's pause
// holds the target: a pause fault would merge with it (Redis keeps the
// stronger mode and the later end of both), and a run's measurements
// would be that pause's.
func (in *Injector) foreignPause(ctx context.Context) error {
	held := in.heldBy(ctx)
	if held == "" {
		return nil
	}
	what := "every command held"
	if held == pauseWrite {
		what = "write commands held"
	}
	return exitcode.Usagef("another client's CLIENT PAUSE is in force on %s (%s); wait for it to end (or end it with CLIENT UNPAUSE if it is yours) and run again: a fault never undoes a pause it did not start", in.target.Shown, what)
}

// readLine reads the first line of a reply.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// rawConn dials the target on a connection of its own, through TLS when
// the target uses it.
func (in *Injector) rawConn(ctx context.Context) (net.Conn, error) {
	conn, err := in.dialer()(ctx, in.target.Network, in.target.Addr)
	if err != nil {
		return nil, connectErr("connect --fault-redis "+in.target.Shown, err)
	}
	if tc := in.tlsConfig(); tc != nil {
		c := tls.Client(conn, tc)
		if err := c.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, redisconn.Wrap("TLS handshake with "+in.target.Shown, err)
		}
		conn = c
	}
	return conn, nil
}

// dialer returns the function connections are made with.
func (in *Injector) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if in.opts.Dial != nil {
		return in.opts.Dial
	}
	d := &net.Dialer{Timeout: in.timeout}
	return d.DialContext
}
