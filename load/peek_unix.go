//go:build unix

package load

import (
	"errors"
	"net"
	"syscall"
)

// idleCheck tells whether the target closed an idle connection (or sent
// it something unasked, which leaves it as unusable), without waiting: a
// peek at the socket, as net/http's read loop and go-redis's pool see it.
// The lean client asks it only before a request it may not send twice.
type idleCheck struct {
	rc     syscall.RawConn
	peek   func(fd uintptr) bool // made once per connection: no allocation per check
	closed bool
}

func newIdleCheck(c net.Conn) *idleCheck {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	ic := &idleCheck{rc: rc}
	var b [1]byte
	ic.peek = func(fd uintptr) bool {
		// nil: EOF (0 bytes) or bytes unasked for; EAGAIN: open and quiet
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ic.closed = err == nil || !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR)
		return true // never wait for readiness
	}
	return ic
}

// closedByPeer reports whether the connection can no longer carry a
// request: the target closed or reset it, or sent bytes nobody asked for.
func (ic *idleCheck) closedByPeer() bool {
	if ic == nil {
		return false
	}
	if err := ic.rc.Read(ic.peek); err != nil {
		return true
	}
	return ic.closed
}
