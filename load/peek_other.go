//go:build !unix

package load

import "net"

// idleCheck is a no-op where the socket cannot be peeked at: a request
// that may not be sent twice is then sent on an idle connection as it is.
type idleCheck struct{}

func newIdleCheck(net.Conn) *idleCheck { return nil }

func (*idleCheck) closedByPeer() bool { return false }
