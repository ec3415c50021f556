package serve

import (
	"net"
	"sync"
)

// LimitListener returns a listener that has at most n accepted connections
// open at once. While n are open, Accept waits for one to close before it
// takes the next from the kernel's accept queue: a connection past the cap
// is not refused, it waits unserved (its request is not read) until a slot
// frees, as with golang.org/x/net/netutil. A client holding connections
// open can thus delay others but not exhaust the process's file
// descriptors; the read and idle timeouts bound how long it holds a slot.
// n < 1 means no cap.
func LimitListener(ln net.Listener, n int) net.Listener {
	if n < 1 {
		return ln
	}
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: l.Addr().Network(), Addr: l.Addr(), Err: net.ErrClosed}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
