package serve

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestServerGracefulShutdown: a request in flight when Shutdown starts is
// finished; afterwards nothing listens.
func TestServerGracefulShutdown(t *testing.T) {
	tg := redistest.Standalone(t)
	cfg := Config{Store: redislimit.NewStore(tg.Client), Params: bucket(t, 10, "5/s"), Delay: 300 * time.Millisecond, KeyPrefix: "test-" + uuid.NewString()}
	s, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	forget(t, tg.Client, s.Handler(), IP(netip.MustParseAddr("127.0.0.1")))
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || strings.HasSuffix(s.URL(), ":0") {
		t.Fatalf("URL() = %q, want the real port", s.URL())
	}
	done := make(chan response, 1)
	go func() { done <- get(t, http.DefaultClient, s.URL()+"/hello") }()
	// Wait until the request has passed the limiter and sits in the delay.
	for deadline := time.Now().Add(5 * time.Second); s.Handler().Counts().Allowed == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the handler")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if r := <-done; r.status != http.StatusOK || r.body != `{"ok":true}`+"\n" {
		t.Errorf("request in flight during shutdown = %d %q, want 200", r.status, r.body)
	}
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		_ = c.Close()
		t.Errorf("%s still accepts connections after Shutdown", s.Addr())
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err() after Shutdown = %v", err)
	}
}

func TestStartAddressErrors(t *testing.T) {
	client := redistest.Embedded(t).Client
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Close() })
	tests := []struct {
		addr, want string
	}{
		{busy.Addr().String(), "address already in use"},
		{"127.0.0.1:http-nope", "--addr wants host:port"},
		{"127.0.0.1", "--addr wants host:port"},
	}
	for _, tt := range tests {
		_, err := Start(Config{Store: redislimit.NewStore(client), Params: bucket(t, 10, "5/s")}, tt.addr)
		if err == nil {
			t.Fatalf("Start(%q): no error", tt.addr)
		}
		if !strings.Contains(err.Error(), tt.want) || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("Start(%q) = %v (exit %d), want %q and exit 2", tt.addr, err, exitcode.Code(err), tt.want)
		}
	}
}

// TestRun: the startup line names the URL and the policy; cancelling the
// context shuts down and reports the counts.
func TestRun(t *testing.T) {
	tg := redistest.Embedded(t)
	out := &redistest.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, Config{Store: redislimit.NewStore(tg.Client), Params: bucket(t, 10, "5/s"), KeyPrefix: "test-" + uuid.NewString()}, "127.0.0.1:0", out)
	}()
	var url string
	for deadline := time.Now().Add(5 * time.Second); url == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no startup line: %q", out.String())
		}
		if _, rest, ok := strings.Cut(out.String(), "listening on "); ok {
			url, _, _ = strings.Cut(rest, ";")
		}
	}
	line := strings.SplitN(out.String(), "\n", 2)[0]
	for _, want := range []string{"serve: listening on http://127.0.0.1:", `token-bucket capacity 10, rate 5/s`, `RateLimit-Policy "default";q=10;w=2`, "identity X-API-Key", "fail open", "/metrics exempt"} {
		if !strings.Contains(line, want) {
			t.Errorf("startup line %q lacks %q", line, want)
		}
	}
	if r := get(t, http.DefaultClient, url+"/hello", "X-API-Key", "k"); r.status != 200 {
		t.Errorf("GET %s/hello = %d", url, r.status)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if !strings.Contains(out.String(), "serve: stopped; allowed 1, limited 0, fail open 0, fail closed 0") {
		t.Errorf("no closing line with counts in %q", out.String())
	}
}
