package fault

import (
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/sandbox"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// AllowRemoteFlag is the flag that lets faults go to a server that is
// neither on loopback nor a sandbox this process started.
const AllowRemoteFlag = "--allow-faults-on-remote"

// Target is the server faults go to, read from the URL the user named.
type Target struct {
	// Shown is the URL with its password masked, for messages.
	Shown string
	// Network is "tcp" or "unix"; Addr is host:port or the socket path.
	Network, Addr string
	// Loopback is true for a TCP host in 127.0.0.0/8, ::1 or localhost.
	Loopback bool
	// Node and Sandbox are the sandbox node this process started at Addr
	// (and its sandbox), or nil.
	Node    *sandbox.Node
	Sandbox *sandbox.Sandbox
	// Remote is true when the target is allowed only because the caller
	// passed AllowRemote.
	Remote bool

	opts *redis.Options
}

// Describe says in a few words what the target is: "sandbox node pid
// 1234", "loopback server", "unix socket of a sandbox", "remote server
// (--allow-faults-on-remote)".
func (t Target) Describe() string {
	switch {
	case t.Node != nil:
		return "sandbox node, pid " + strconv.Itoa(t.Node.PID())
	case t.Sandbox != nil:
		return "unix socket of a sandbox this process started"
	case t.Loopback:
		return "loopback server"
	case t.Network == "unix":
		return "unix socket (" + AllowRemoteFlag + ")"
	}
	return "remote server (" + AllowRemoteFlag + ")"
}

// CheckTarget decides from rawURL alone, before any connection and
// without resolving a name, whether faults may go there: a TCP host in
// 127.0.0.0/8, ::1 or the name localhost, or a server of one of
// sandboxes, is allowed; anything else (another host name, another
// address, a unix socket outside the sandboxes' directories) needs
// allowRemote, else the error (exit 2) names AllowRemoteFlag. A malformed
// URL, an empty one and "embedded" are exit 2 as well.
func CheckTarget(rawURL string, allowRemote bool, sandboxes []*sandbox.Sandbox) (Target, error) {
	raw := strings.TrimSpace(rawURL)
	if raw == redisconn.EmbeddedURL {
		return Target{}, exitcode.Usagef("--fault-redis embedded: faults need a real server; pass the URL of a server you may break, such as one 'ratelimit sandbox' started")
	}
	if err := redisconn.Check(redisconn.Options{URL: raw, Source: "--fault-redis"}); err != nil {
		return Target{}, err
	}
	ro, err := redis.ParseURL(raw)
	if err != nil {
		// Check accepted it, so this is not expected; say it without the URL's secrets
		return Target{}, exitcode.Usagef("invalid --fault-redis URL %s", secret.URL(raw))
	}
	t := Target{Shown: secret.URL(raw), Network: ro.Network, Addr: ro.Addr, opts: ro}
	if t.Network == "" {
		t.Network = "tcp"
	}
	if t.Network == "unix" {
		for _, sb := range sandboxes {
			if sb != nil && sb.Owns(t.Addr) {
				t.Sandbox = sb
				return t, nil
			}
		}
		if !allowRemote {
			return Target{}, exitcode.Usagef("refusing to inject faults through unix socket %s: it belongs to no sandbox this process started, so the server may not be yours to break; pass %s if it is",
				filepath.Clean(t.Addr), AllowRemoteFlag)
		}
		t.Remote = true
		return t, nil
	}
	if err := t.checkAddr(t.Addr, allowRemote, sandboxes); err != nil {
		return Target{}, err
	}
	return t, nil
}

// checkAddr applies the TCP rule to addr and records what it found.
func (t *Target) checkAddr(addr string, allowRemote bool, sandboxes []*sandbox.Sandbox) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return exitcode.Usagef("refusing to inject faults into %s: address %q has no host:port", t.Shown, addr)
	}
	t.Loopback = IsLoopback(host)
	if n, sb := ownedNode(addr, sandboxes); n != nil {
		t.Node, t.Sandbox = n, sb
		return nil
	}
	if t.Loopback {
		return nil
	}
	if !allowRemote {
		return exitcode.Usagef("refusing to inject faults into %s: %s is not a loopback address or a sandbox this process started; pass %s if the server is yours to break",
			t.Shown, host, AllowRemoteFlag)
	}
	t.Remote = true
	return nil
}

// CheckAddr applies CheckTarget's rule to a host:port the cluster
// announced (a replica to promote, a MOVED redirect): loopback or a
// sandbox node is allowed, anything else needs allowRemote (exit 2
// otherwise). No name is resolved.
func CheckAddr(addr string, allowRemote bool, sandboxes []*sandbox.Sandbox) error {
	t := Target{Shown: addr}
	return t.checkAddr(addr, allowRemote, sandboxes)
}

// IsLoopback reports whether host is a loopback address (127.0.0.0/8,
// ::1, an IPv4-mapped loopback) or the name localhost, read as written:
// no name is resolved.
func IsLoopback(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" {
		return true
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// ownedNode finds the running sandbox node listening on addr. Sandbox
// servers bind 127.0.0.1, so only that address and localhost reach them.
func ownedNode(addr string, sandboxes []*sandbox.Sandbox) (*sandbox.Node, *sandbox.Sandbox) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil
	}
	if h := strings.ToLower(host); h != "127.0.0.1" && h != "localhost" {
		return nil, nil
	}
	for _, sb := range sandboxes {
		if sb == nil {
			continue
		}
		if n := sb.Node(net.JoinHostPort("127.0.0.1", port)); n != nil && n.Running() {
			return n, sb
		}
	}
	return nil, nil
}
