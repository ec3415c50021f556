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
