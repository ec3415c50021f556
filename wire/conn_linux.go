//go:build linux

package wire

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"
)

// Conn is a socket's exchange side: Arm a request, then Read the answer.
// One goroutine uses it at a time.
type Conn struct {
	rc      syscall.RawConn
	in, out *atomic.Int64 // bytes read and written, when set

	req     []byte // what is left to write of the armed request
	written int    // bytes of the armed request written so far
	werr    error  // the write's error, if it failed

	p     []byte // the caller's buffer of the read in progress
	n     int
	rerr  error
	first bool // the read in progress is the one that writes the request

	readFn, writeFn func(fd uintptr) bool // made once: no allocation per exchange
}

// New returns c's exchange side, or nil when c has no descriptor. in and
// out, when set, count the bytes read and written.
func New(c net.Conn, in, out *atomic.Int64) *Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	if _, tcp := c.(*net.TCPConn); !tcp {
		if _, unix := c.(*net.UnixConn); !unix {
			return nil
		}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &Conn{rc: rc, in: in, out: out}
	w.readFn = w.onReadable
	w.writeFn = w.onWritable
	return w
}

// Arm sets the request the next Read writes before it waits. req is not
// copied: it must not change until that Read returns.
func (w *Conn) Arm(req []byte) {
	w.req, w.written, w.werr = req, 0, nil
}

// Armed reports whether part of the armed request is still to be written.
func (w *Conn) Armed() bool { return len(w.req) > 0 }

// Written reports how much of the armed request was written, and the
// write's error if it failed (a deadline or an interrupt before it went
// out included).
func (w *Conn) Written() (int, error) { return w.written, w.werr }

// Read reads the answer into p. The first Read after Arm writes the
// request first, within the poller's read wait, so an answer arriving at
// any moment after the write wakes it and no read is tried before there
// can be anything to read.
func (w *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.p, w.n, w.rerr = p, 0, nil
	w.first = len(w.req) > 0
	err := w.rc.Read(w.readFn)
	w.p = nil
	if err == nil && w.werr == nil && len(w.req) > 0 {
		// the socket's buffer was full: finish the write, waiting for
		// room, then read as usual
		if err = w.rc.Write(w.writeFn); err == nil && w.werr == nil {
			w.p, w.first = p, false
			err = w.rc.Read(w.readFn)
			w.p = nil
		}
	}
	switch {
	case w.werr != nil:
		return 0, w.werr
	case err != nil:
		if len(w.req) > 0 {
			w.werr = err // cut (deadline, interrupt) before the request went out
		}
		return 0, err
	case w.rerr != nil:
		return w.n, w.rerr
	}
	counter(w.in, w.n)
	return w.n, nil
}

// onReadable is the read's step: on the first call it writes the armed
// request and waits; then it reads what is there.
func (w *Conn) onReadable(fd uintptr) bool {
	if w.first {
		w.first = false
		if !w.writeSome(fd) || len(w.req) > 0 {
			return true // failed, or the rest waits for room (Read)
		}
		return false // written: wait for the answer
	}
	for {
		n, errno := rawRead(fd, w.p)
		switch {
		case errno == syscall.EAGAIN:
			return false
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			w.rerr = &net.OpError{Op: "read", Net: "tcp", Err: errno}
		case n == 0:
			w.rerr = io.EOF
		default:
			w.n = n
		}
		return true
	}
}

// onWritable writes what is left of the request once there is room.
func (w *Conn) onWritable(fd uintptr) bool {
	if !w.writeSome(fd) {
		return true
	}
	return len(w.req) == 0
}

// writeSome writes as much of the armed request as the socket takes. It
// reports false when the write failed (werr set).
func (w *Conn) writeSome(fd uintptr) bool {
	for len(w.req) > 0 {
		// counted before the write: the answer can never be read (and
		// counted) before the request that asked for it
		counter(w.out, len(w.req))
		n, errno := rawWrite(fd, w.req)
		counter(w.out, n-len(w.req))
		switch {
		case errno == syscall.EAGAIN:
			return true
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			w.werr = &net.OpError{Op: "write", Net: "tcp", Err: errno}
			return false
		}
		w.written += n
		w.req = w.req[n:]
	}
	return true
}
