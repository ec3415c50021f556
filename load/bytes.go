package load

import (
	"context"
	"net"
	"sync/atomic"
)

// countConn counts the bytes read from and written to a connection: the
// run's bytes_in and bytes_out, on the wire (headers, bodies and TLS
// records included).
type countConn struct {
	net.Conn
	in, out *atomic.Int64
}

func (c countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

// Write counts p before it writes it, so the answer to these bytes can never
// be read (by net/http's read loop, while its write loop is still returning
// from Write) before they are counted; what was not written is taken back.
func (c countConn) Write(p []byte) (int, error) {
	c.out.Add(int64(len(p)))
	n, err := c.Conn.Write(p)
	if n < len(p) {
		c.out.Add(int64(n - len(p)))
	}
	return n, err
}

// countingDial wraps dial so that every connection it makes is counted
// into in and out.
func countingDial(dial func(ctx context.Context, network, addr string) (net.Conn, error), in, out *atomic.Int64) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countConn{Conn: c, in: in, out: out}, nil
	}
}
