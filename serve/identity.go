package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/ratelimit-dev/ratelimit/limiter"
)

// Identity is whom a request is counted against: an API key, known only by
// a prefix of its SHA-256 digest, or a client IP address.
type Identity struct {
	Kind  string // KindKey or KindIP
	Value string // the digest prefix in hex, or the address in canonical form
}

// The kinds of Identity.
const (
	KindKey = "key"
	KindIP  = "ip"
)

// keyDigestBytes is how much of the SHA-256 digest of an API key names its
// bucket: 128 bits, so distinct keys never share a bucket in practice and a
// second key aimed at someone else's bucket is out of reach.
const keyDigestBytes = 16

// APIKey returns the identity of an API key. The key itself is hashed here
// and never stored, logged or sent to Redis.
func APIKey(key string) Identity {
	sum := sha256.Sum256([]byte(key))
	return Identity{Kind: KindKey, Value: hex.EncodeToString(sum[:keyDigestBytes])}
}

// IP returns the identity of a client address (IPv4-mapped IPv6 addresses
// count as their IPv4 address, zones are dropped).
func IP(addr netip.Addr) Identity {
	return Identity{Kind: KindIP, Value: addr.Unmap().WithZone("").String()}
}

// Key returns the Redis key of the identity's bucket:
// "<prefix>:{key:<digest>}:<algo>" or "<prefix>:{ip:<addr>}:<algo>". The
// identity is the hash tag, so on a cluster every bucket of one client
// lives in one slot and different clients spread over the slots.
func (id Identity) Key(prefix string, algo limiter.Algo) string {
	return prefix + ":{" + id.Kind + ":" + id.Value + "}:" + string(algo)
}

// String is "key:<digest>" or "ip:<addr>"; it never holds an API key.
func (id Identity) String() string { return id.Kind + ":" + id.Value }

// ClientIP returns the address a request is counted against. With
// trustProxy 0 it is the peer address (RemoteAddr) and X-Forwarded-For is
// ignored, since any client can send one. With trustProxy N > 0 the server
// sits behind N proxies that each append the address they received the
// request from, so the Nth entry from the right of X-Forwarded-For is the
// client as seen by the outermost trusted proxy; entries left of it are
// whatever the client chose to send and are never read. When the header has
// fewer than N entries, or that entry is not an IP address, the request did
// not come through the expected chain of proxies and the peer address is
// used instead. ok is false when no address could be read at all (a
// RemoteAddr that is not host:port, as in some tests or a unix socket).
func ClientIP(r *http.Request, trustProxy int) (addr netip.Addr, ok bool) {
	peer, peerOK := parseHostAddr(r.RemoteAddr)
	if trustProxy <= 0 {
		return peer, peerOK
	}
	var entries []string
	for _, line := range r.Header.Values("X-Forwarded-For") {
		for e := range strings.SplitSeq(line, ",") {
			entries = append(entries, strings.TrimSpace(e))
		}
	}
	if len(entries) < trustProxy {
		return peer, peerOK
	}
	if a, ok := parseHostAddr(entries[len(entries)-trustProxy]); ok {
		return a, true
	}
	return peer, peerOK
}

// parseHostAddr reads "1.2.3.4", "1.2.3.4:5678", "::1", "[::1]:80" or "[::1]".
func parseHostAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.Unmap().WithZone(""), true
		}
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.Unmap().WithZone(""), true
		}
	}
	return netip.Addr{}, false
}
