package cmd

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/serve"
)

// TestLoadCatchesBrokenServe: load --expect auto against serve passes, and
// fails (exit 1, naming the check in the error line) against every --break
// mode whose defect a load run can see; --headers warn lets the header
// defects pass and --headers off does not check them.
func TestLoadCatchesBrokenServe(t *testing.T) {
	tests := []struct {
		brk  serve.Break
		want string // in the error line; "" for a pass
	}{
		{"", ""},
		{serve.BreakRetryAfterZero, "header:retry-after"},
		{serve.BreakNoRetryAfter, "header:retry-after"},
		{serve.BreakCacheable429, "header:429-not-storable"},
		{serve.BreakStatus503, "header:limited-status"},
		{serve.BreakOverAdmit, "expected"},
	}
	for _, tt := range tests {
		t.Run(string(tt.brk)+"-", func(t *testing.T) {
			t.Parallel()
			url := probeTarget(t, tt.brk)
			tf := newTestFactory(t)
			// 503 is accepted as a status so that only the header check
			// can see that it limits
			code := tf.execute(t, "load", "--target", url, "--rate", "20/s", "--duration", "3s", "--expect", "auto", "--expect-status", "200,429,503")
			e := tf.ErrOut.String()
			switch {
			case tt.want == "" && code != exitcode.OK:
				t.Errorf("load against plain serve = %d\n%s\n%s", code, tf.Out.String(), e)
			case tt.want != "" && (code != exitcode.Failed || !strings.Contains(e, tt.want)):
				t.Errorf("load against serve --break %s = %d %q, want exit 1 naming %q\n%s", tt.brk, code, e, tt.want, tf.Out.String())
			}
		})
	}
	t.Run("modes", func(t *testing.T) {
		t.Parallel()
		url := probeTarget(t, serve.BreakRetryAfterZero)
		for mode, want := range map[string]string{"warn": "WARN", "off": "not checked (--headers off)"} {
			tf := newTestFactory(t)
			code := tf.execute(t, "load", "--target", url, "--rate", "20/s", "--duration", "2s", "--headers", mode, "-o", "junit")
			if code != exitcode.OK || !strings.Contains(tf.Out.String()+tf.ErrOut.String(), strings.TrimPrefix(want, "WARN")) {
				t.Errorf("--headers %s = %d, want 0 and %q in\n%s", mode, code, want, tf.Out.String())
			}
		}
		tf := newTestFactory(t)
		if code := tf.execute(t, "load", "--target", url, "--headers", "sometimes", "--rate", "1/s", "--duration", "1s"); code != exitcode.Usage {
			t.Errorf("--headers sometimes = %d, want %d", code, exitcode.Usage)
		}
	})
}

// TestLoadIdentityHeaderFromH: -H that sets the identity header is the
// identity; the generator sends no second X-API-Key.
func TestLoadIdentityHeaderFromH(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[strings.Join(r.Header.Values("X-Api-Key"), "|")]++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	tf := newTestFactory(t)
	if code := tf.execute(t, "load", "--target", srv.URL, "--rate", "10/s", "--duration", "1s", "-H", "X-API-Key: mine", "--allow-undecided"); code != exitcode.OK {
		t.Fatalf("load = %d: %s", code, tf.ErrOut.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen["mine"] == 0 {
		t.Errorf("X-API-Key values seen: %v, want only \"mine\"", seen)
	}
	tf = newTestFactory(t)
	if code := tf.execute(t, "load", "--target", srv.URL, "--rate", "10/s", "--duration", "1s", "-H", "X-API-Key: mine", "--identities", "3"); code != exitcode.Usage {
		t.Errorf("-H X-API-Key with --identities 3 = %d, want %d", code, exitcode.Usage)
	}
}
