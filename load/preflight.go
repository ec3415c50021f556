package load

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// checkTLS shakes hands once with an https target on the connection the
// preflight dialled, before the clock starts: a target that answers the
// TLS ClientHello in plain HTTP (a 400 from a server on an http:// port)
// is exit 3 in one line, instead of a run of requests that each fail the
// handshake and a failed threshold. Only the protocol is checked here
// (the certificate is verified by the requests themselves), and any other
// handshake failure is left to them to report. A server that accepts the
// connection and never finishes the handshake within timeout is exit 3
// too: every request of the run would time out the same way.
func checkTLS(c net.Conn, hostport, serverName string, timeout time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(timeout))
	// #nosec G402 -- no data is sent on this connection: it only tells a
	// TLS server from a plain HTTP one
	tc := tls.Client(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
	err := tc.Handshake()
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && string(rh.RecordHeader[:]) == "HTTP/" {
		return exitcode.UnreachableError(fmt.Errorf("target %s speaks plain HTTP, not TLS: use http:// instead of https://", hostport))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return exitcode.UnreachableError(fmt.Errorf("target %s accepted the connection but did not complete the TLS handshake within %s: check that it serves TLS on this port, or raise --timeout", hostport, timeout))
	}
	return nil
}
