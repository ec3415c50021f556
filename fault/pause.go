package fault

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pauseSlice is how long each CLIENT PAUSE ... ALL of a pause fault holds.
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
const pauseSlice = 100 * time.Millisecond

// pauseQueue is how many renewals wait behind the slice that holds.
const pauseQueue = 2

// replyError is an error reply of the server read off a raw connection;
// it is a redis.Error, so redisconn.Classify reads it as go-redis's own.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// pauser holds a CLIENT PAUSE ALL in slices on its own connection.
type pauser struct {
	conn  net.Conn
	r     *bufio.Reader
	slice time.Duration
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	err   error // why the renewals stopped early (nil when stopped)
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

// startPause logs in on conn (AUTH when password is set) and starts the
// chain of slices. It returns once the first CLIENT PAUSE was answered:
// the server holds its clients from then on.
func startPause(conn net.Conn, user, password string, slice, timeout time.Duration) (*pauser, error) {
	p := &pauser{conn: conn, r: bufio.NewReader(conn), slice: slice, stop: make(chan struct{}), done: make(chan struct{})}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if password != "" {
		args := []string{"AUTH", password}
		if user != "" {
			args = []string{"AUTH", user, password}
		}
		if _, err := conn.Write(command(args...)); err != nil {
			return nil, fmt.Errorf("AUTH: %w", err)
		}
		if err := readStatus(p.r); err != nil {
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	var first []byte
	for i := 0; i <= pauseQueue; i++ {
		first = append(first, p.renewal()...)
	}
	if _, err := conn.Write(first); err != nil {
		return nil, fmt.Errorf("CLIENT PAUSE: %w", err)
	}
	if err := readStatus(p.r); err != nil {
		return nil, fmt.Errorf("CLIENT PAUSE: %w", err)
	}
	_ = conn.SetDeadline(time.Time{})
	go p.renew(timeout)
	return p, nil
}

func (p *pauser) renewal() []byte {
	return command("CLIENT", "PAUSE", strconv.FormatInt(p.slice.Milliseconds(), 10), "ALL")
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

// dialer returns the function connections are made with.
func (in *Injector) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if in.opts.Dial != nil {
		return in.opts.Dial
	}
	d := &net.Dialer{Timeout: in.timeout}
	return d.DialContext
}
