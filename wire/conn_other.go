//go:build !linux

package wire

import (
	"net"
	"sync/atomic"
)

// Conn is the exchange side of Linux (conn_linux.go); elsewhere New gives
// none and callers write and read through net.Conn.
type Conn struct{}

// New returns nil: no exchange side here.
func New(net.Conn, *atomic.Int64, *atomic.Int64) *Conn { return nil }

func (*Conn) Arm([]byte)               {}
func (*Conn) Armed() bool              { return false }
func (*Conn) Written() (int, error)    { return 0, nil }
func (*Conn) Read([]byte) (int, error) { return 0, nil }
