package load

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// TestPreflightPlainHTTP (issue 26 item 10): --target https:// against a
// plain HTTP port ran, every request failed its handshake, and the run
// ended with a failed threshold (exit 1). The preflight shakes hands
// once: a target that answers in plain HTTP is exit 3 in one line, before
// the clock starts; a TLS target passes it.
func TestPreflightPlainHTTP(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	plain := httptest.NewServer(ok)
	defer plain.Close()
	_, err := Run(context.Background(), Options{Target: "https://" + strings.TrimPrefix(plain.URL, "http://") + "/x",
		Rate: rate.MustParse("5/s"), Duration: time.Second, Timeout: time.Second})
	if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), "speaks plain HTTP, not TLS") || strings.Contains(err.Error(), "\n") {
		t.Errorf("https:// to a plain HTTP port: %v (exit %d), want one exit-3 line saying it speaks plain HTTP", err, exitcode.Code(err))
	}

	tlsSrv := httptest.NewTLSServer(ok)
	defer tlsSrv.Close()
	host := strings.TrimPrefix(tlsSrv.URL, "https://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := checkTLS(c, host, "127.0.0.1", time.Second); err != nil {
		t.Errorf("checkTLS of a TLS server: %v, want nil", err)
	}
}

// TestPreflightHandshakeTimeout (issue 32): --target https:// against a
// server that accepts and never answers the ClientHello ran 6.4 s of
// failed handshakes and ended exit 1 ("100% failed"); a handshake that
// times out in the preflight is exit 3 in one line, before the clock.
func TestPreflightHandshakeTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // accepted, never answered
		}
	}()
	t.Cleanup(func() {
		for {
			select {
			case c := <-held:
				c.Close()
			default:
				return
			}
		}
	})
	start := time.Now()
	_, err = Run(context.Background(), Options{Target: "https://" + ln.Addr().String() + "/x",
		Rate: rate.MustParse("5/s"), Duration: 5 * time.Second, Timeout: 500 * time.Millisecond})
	if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), "TLS handshake") || strings.Contains(err.Error(), "\n") {
		t.Errorf("https:// to a server that never shakes hands: %v (exit %d), want one exit-3 line about the TLS handshake", err, exitcode.Code(err))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s, want the preflight's timeout, not the run", d)
	}
}
