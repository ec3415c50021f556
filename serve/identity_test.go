package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/limiter"
)

func TestClientIP(t *testing.T) {
	tests := []struct {
		name       string
		remote     string
		xff        []string // X-Forwarded-For lines
		trustProxy int
		want       string // "" means ok == false
	}{
		{"peer only", "192.0.2.1:1234", nil, 0, "192.0.2.1"},
		{"peer ipv6", "[2001:db8::1]:443", nil, 0, "2001:db8::1"},
		{"peer ipv4-mapped", "[::ffff:192.0.2.7]:80", nil, 0, "192.0.2.7"},
		{"peer with zone", "[fe80::1%eth0]:80", nil, 0, "fe80::1"},
		{"spoofed header ignored by default", "192.0.2.1:1234", []string{"203.0.113.9"}, 0, "192.0.2.1"},
		{"one proxy: rightmost", "10.0.0.1:5000", []string{"203.0.113.9"}, 1, "203.0.113.9"},
		{"one proxy: client-sent entries left of it ignored", "10.0.0.1:5000", []string{"198.51.100.66, 203.0.113.9"}, 1, "203.0.113.9"},
		{"two proxies: second from the right", "10.0.0.2:5000", []string{"198.51.100.66, 203.0.113.9, 10.0.0.1"}, 2, "203.0.113.9"},
		{"split over lines", "10.0.0.2:5000", []string{"198.51.100.66", "203.0.113.9, 10.0.0.1"}, 2, "203.0.113.9"},
		{"entry with port", "10.0.0.1:5000", []string{"203.0.113.9:4711"}, 1, "203.0.113.9"},
		{"bracketed ipv6 entry", "10.0.0.1:5000", []string{"[2001:db8::9]:4711"}, 1, "2001:db8::9"},
		{"bracketed ipv6 without port", "10.0.0.1:5000", []string{"[2001:db8::9]"}, 1, "2001:db8::9"},
		{"fewer entries than proxies: peer", "10.0.0.1:5000", []string{"203.0.113.9"}, 2, "10.0.0.1"},
		{"no header behind proxy: peer", "10.0.0.1:5000", nil, 1, "10.0.0.1"},
		{"garbage entry: peer", "10.0.0.1:5000", []string{"unknown"}, 1, "10.0.0.1"},
		{"empty entry: peer", "10.0.0.1:5000", []string{"203.0.113.9, "}, 1, "10.0.0.1"},
		{"no address at all", "@", nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/hello", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got, ok := ClientIP(r, tt.trustProxy)
			if tt.want == "" {
				if ok {
					t.Fatalf("ClientIP(%q, xff %q, %d) = %s, want no address", tt.remote, tt.xff, tt.trustProxy, got)
				}
				return
			}
			if !ok || got.String() != tt.want {
				t.Fatalf("ClientIP(%q, xff %q, %d) = %s, %v; want %s", tt.remote, tt.xff, tt.trustProxy, got, ok, tt.want)
			}
		})
	}
}

// FuzzClientIP: whatever a client sends in X-Forwarded-For, without
// TrustProxy the answer is the peer address, and with it the answer is the
// peer or an address that really appears in the header.
func FuzzClientIP(f *testing.F) {
	f.Add("192.0.2.1:1234", "203.0.113.9", 1)
	f.Add("[::1]:80", "a, b, [2001:db8::1]:9, ,", 2)
	f.Add("10.0.0.1:1", ",,,", 3)
	f.Fuzz(func(t *testing.T, remote, xff string, n int) {
		n = n % 8
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", xff)
		peer, peerOK := ClientIP(r, 0)
		r.Header.Del("X-Forwarded-For")
		bare, bareOK := ClientIP(r, 0)
		if peer != bare || peerOK != bareOK {
			t.Fatalf("X-Forwarded-For %q changed the untrusted answer: %v,%v vs %v,%v", xff, peer, peerOK, bare, bareOK)
		}
		r.Header.Set("X-Forwarded-For", xff)
		got, ok := ClientIP(r, n)
		if !ok || got == peer {
			return
		}
		for e := range strings.SplitSeq(xff, ",") {
			if a, ok := parseHostAddr(e); ok && a == got {
				return
			}
		}
		t.Fatalf("ClientIP(%q, xff %q, %d) = %v, which is neither the peer nor in the header", remote, xff, n, got)
	})
}

func TestIdentityKeys(t *testing.T) {
	secret := "sk_live_0123456789abcdef"
	id := APIKey(secret)
	sum := sha256.Sum256([]byte(secret))
	wantDigest := hex.EncodeToString(sum[:16])
	tests := []struct {
		id   Identity
		algo limiter.Algo
		want string
	}{
		{id, limiter.TokenBucket, "rl:{key:" + wantDigest + "}:token-bucket"},
		{APIKey("alice"), limiter.GCRA, "rl:{key:2bd806c97f0e00af1a1fc3328fa763a9}:gcra"},
		{IP(netip.MustParseAddr("192.0.2.1")), limiter.SlidingWindow, "rl:{ip:192.0.2.1}:sliding-window"},
		{IP(netip.MustParseAddr("::ffff:192.0.2.1")), limiter.FixedWindow, "rl:{ip:192.0.2.1}:fixed-window"},
		{IP(netip.MustParseAddr("2001:db8::1")), limiter.TokenBucket, "rl:{ip:2001:db8::1}:token-bucket"},
	}
	for _, tt := range tests {
		if got := tt.id.Key("rl", tt.algo); got != tt.want {
			t.Errorf("%v.Key(rl, %s) = %q, want %q", tt.id, tt.algo, got, tt.want)
		}
		if strings.Contains(tt.id.Key("rl", tt.algo), secret) || strings.Contains(tt.id.String(), secret) {
			t.Errorf("%v carries the API key in clear", tt.id)
		}
	}
	if APIKey("alice") == APIKey("bob") {
		t.Error("APIKey(alice) == APIKey(bob)")
	}
}
