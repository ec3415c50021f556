package fault

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// recordingDialer records every dial and makes none: a test that hands
// it to an injector proves what would have been dialled.
type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
}

var errNoDial = errors.New("test dialer: no connection made")

func (d *recordingDialer) Dial(_ context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, network+" "+addr)
	return nil, errNoDial
}

func (d *recordingDialer) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true, "localhost": true, "LOCALHOST": true,
		"localhost.": true, "::ffff:127.0.0.1": true,
		"128.0.0.1": false, "10.0.0.1": false, "::2": false, "0.0.0.0": false, "redis.invalid": false,
		"localhost.invalid": false, "127.0.0.1.invalid": false, "": false,
	} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestRemoteRefusedBeforeAnyDial: a non-loopback --fault-redis without
// AllowRemote is exit 2 naming the flag, decided from the URL: the
// injector's dialer is never called.
func TestRemoteRefusedBeforeAnyDial(t *testing.T) {
	plan, err := ParsePlan([]string{"pause:1s@0s"})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "redis.sock")
	for _, url := range []string{
		"redis://redis.invalid:6380",
		"redis://user:s3cret-pw@redis.invalid:6380/0",
		"rediss://cache.redis.invalid:6380",
		"redis://localhost.invalid:6380",
		"unix://" + sock,
	} {
		t.Run(url, func(t *testing.T) {
			d := &recordingDialer{}
			in, err := New(context.Background(), plan, Options{URL: url, Dial: d.Dial})
			if err == nil {
				_ = in.Close()
				t.Fatalf("New(%s) = nil error, want a refusal", url)
			}
			if exitcode.Code(err) != exitcode.Usage {
				t.Errorf("New(%s) exit code = %d, want 2 (%v)", url, exitcode.Code(err), err)
			}
			if !strings.Contains(err.Error(), AllowRemoteFlag) || !strings.HasPrefix(err.Error(), "refusing to inject faults") {
				t.Errorf("New(%s) error = %q, want a refusal naming %s", url, err, AllowRemoteFlag)
			}
			if strings.Contains(err.Error(), "s3cret-pw") {
				t.Errorf("New(%s) error shows the password: %q", url, err)
			}
			if got := d.dialled(); len(got) != 0 {
				t.Errorf("New(%s) dialled %v before refusing", url, got)
			}
		})
	}
}

// TestAllowRemoteDialsOnlyTheNamedServer: with AllowRemote the same URL
// passes the check and the one address dialled is the one named (the
// recording dialer makes no connection, so no traffic leaves the test).
func TestAllowRemoteDialsOnlyTheNamedServer(t *testing.T) {
	plan, err := ParsePlan([]string{"drop-clients@0s"})
	if err != nil {
		t.Fatal(err)
	}
	d := &recordingDialer{}
	in, err := New(context.Background(), plan, Options{URL: "redis://redis.invalid:6380", AllowRemote: true, Dial: d.Dial})
	if err == nil {
		_ = in.Close()
		t.Fatal("New with a dialer that connects nowhere = nil error, want exit 3")
	}
	if exitcode.Code(err) != exitcode.Unreachable {
		t.Errorf("New exit code = %d, want 3 (%v)", exitcode.Code(err), err)
	}
	for _, a := range d.dialled() {
		if a != "tcp redis.invalid:6380" {
			t.Errorf("dialled %q, want only tcp redis.invalid:6380", a)
		}
	}
	if len(d.dialled()) == 0 {
		t.Error("nothing dialled: the check should have let the named server through")
	}
	tgt, err := CheckTarget("unix:///var/run/redis.sock", true, nil)
	if err != nil || !tgt.Remote || tgt.Network != "unix" {
		t.Errorf("CheckTarget(unix socket, allowRemote) = %+v, %v; want an allowed remote unix target", tgt, err)
	}
}

func TestCheckTargetRefusesBadURLs(t *testing.T) {
	for _, url := range []string{"", "embedded", "localhost:7000", "redis://", "http://127.0.0.1:7000", "redis://127.0.0.1:0"} {
		if _, err := CheckTarget(url, true, nil); err == nil || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("CheckTarget(%q) error = %v, want exit 2", url, err)
		}
	}
}

// TestOwnedFaultsNeedASandbox: stop and restart are refused, before any
// dial, for a loopback server that is not a sandbox of this process; a
// failover needs a key.
func TestOwnedFaultsNeedASandbox(t *testing.T) {
	for _, tt := range []struct {
		spec, want string
	}{
		{"stop:1s@0s", "needs a server this process started with sandbox"},
		{"restart@0s", "needs a server this process started with sandbox"},
		// (a failover without a key is refused only once the server has
		// said it is a cluster: on a standalone pair none is needed)
	} {
		plan, err := ParsePlan([]string{tt.spec})
		if err != nil {
			t.Fatal(err)
		}
		d := &recordingDialer{}
		_, err = New(context.Background(), plan, Options{URL: "redis://127.0.0.1:1", Dial: d.Dial})
		if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%s) error = %v, want exit 2 containing %q", tt.spec, err, tt.want)
		}
		if got := d.dialled(); len(got) != 0 {
			t.Errorf("New(%s) dialled %v before refusing", tt.spec, got)
		}
	}
	for _, p := range []Plan{nil, {{Kind: Pause}}, {{Kind: "nap"}}, {{Kind: Restart, At: time.Second}, {Kind: Restart}}} {
		d := &recordingDialer{}
		if _, err := New(context.Background(), p, Options{URL: "redis://127.0.0.1:1", Dial: d.Dial}); err == nil || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("New(%v) error = %v, want exit 2", p, err)
		}
		if got := d.dialled(); len(got) != 0 {
			t.Errorf("New(%v) dialled %v before refusing", p, got)
		}
	}
}

// TestSandboxSocketAllowed: a unix socket inside a sandbox's directory
// counts as the sandbox's own.
func TestSandboxSocketAllowed(t *testing.T) {
	sb := &sandbox.Sandbox{Dir: t.TempDir()}
	tgt, err := CheckTarget("unix://"+filepath.Join(sb.Dir, "node-0", "redis.sock"), false, []*sandbox.Sandbox{sb})
	if err != nil || tgt.Sandbox != sb || tgt.Remote {
		t.Errorf("CheckTarget(socket in sandbox dir) = %+v, %v; want the sandbox's own", tgt, err)
	}
	for _, p := range []string{filepath.Join(sb.Dir, "..", "other.sock"), sb.Dir + "-other/redis.sock"} {
		if _, err := CheckTarget("unix://"+p, false, []*sandbox.Sandbox{sb}); err == nil || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("CheckTarget(unix://%s) error = %v, want exit 2 (outside the sandbox)", p, err)
		}
	}
}
