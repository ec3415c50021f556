package load

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// The HTTP stacks a run can use (Options.HTTPClient, --http-client).
const (
	// HTTPClientAuto picks the lean client for plain http:// targets
	// reached without a proxy, net/http for everything else.
	HTTPClientAuto = "auto"
	// HTTPClientLean is the lean HTTP/1.1 client (h1.go): one keep-alive
	// connection per VU, requests serialised once. Plain http:// only.
	HTTPClientLean = "lean"
	// HTTPClientStd is net/http's Transport: TLS, HTTP/2, proxies.
	HTTPClientStd = "std"
)

// HTTPClients are the values --http-client takes.
var HTTPClients = []string{HTTPClientAuto, HTTPClientLean, HTTPClientStd}

// client is an HTTP stack that carries the run's prepared requests (one per
// identity). leanClient (h1.go) and stdClient (std.go) implement it.
type client interface {
	// open returns a VU's side of the client. Its requests end when ctx
	// does (Ctrl-C, an abort, the run's hard deadline); in and out count
	// the bytes its connection moves, where the stack can tell per VU.
	open(ctx context.Context, in, out *atomic.Int64) conn
	// warm connects the given conns before the clock starts, where the
	// stack allows it.
	warm(conns []conn)
	// close releases what the client keeps once the run is over.
	close()
}

// conn is one VU's side of a client, used by one goroutine at a time.
type conn interface {
	// do sends prepared request k and reads the whole response, within
	// Options.Timeout. It returns the status (0 when err is set; a
	// timeout's err wraps context.DeadlineExceeded) and the fields of the
	// response the header checks read, valid until the next do.
	do(k int) (status int, h http.Header, err error)
	// close ends the conn when its VU stops.
	close()
}

// chooseClient names the stack for o's target: the lean client where it
// can carry the requests and auto (or lean) asks for it, else net/http.
// An explicit lean that cannot carry them is an exit-2 error.
func chooseClient(o *Options, u *url.URL) (string, error) {
	switch o.HTTPClient {
	case HTTPClientStd:
		return HTTPClientStd, nil
	case "", HTTPClientAuto:
		if leanFits(o, u) == "" {
			return HTTPClientLean, nil
		}
		return HTTPClientStd, nil
	case HTTPClientLean:
		if why := leanFits(o, u); why != "" {
			return "", exitcode.Usagef("--http-client lean: %s; use --http-client std or auto", why)
		}
		return HTTPClientLean, nil
	}
	return "", exitcode.Usagef("--http-client %q: want auto, lean or std", o.HTTPClient)
}

// leanFits says why the lean client cannot carry o's requests ("" if it
// can): it speaks plain HTTP/1.1 to the target itself, so neither TLS nor a
// proxy, and it cannot use an injected Transport.
func leanFits(o *Options, u *url.URL) string {
	switch {
	case o.Transport != nil:
		return "a custom transport is in use"
	case u.Scheme != "http":
		return "it speaks plain http:// only, not " + u.Scheme + "://"
	}
	p, err := http.ProxyFromEnvironment(&http.Request{Method: o.Method, URL: u, Header: http.Header{}})
	if err != nil {
		return "the proxy environment is invalid: " + secret.Redact(err.Error())
	}
	if p != nil {
		return "the target is reached through the proxy " + secret.URL(p.String()) + " (HTTP_PROXY)"
	}
	return ""
}
