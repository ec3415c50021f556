package load

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// --http-client: auto picks lean for plain http:// and net/http for
// https; an explicit choice is kept where it can work and refused (exit 2,
// naming the way out) where it cannot.
func TestChooseClient(t *testing.T) {
	tests := []struct {
		target, choice string
		transport      bool
		want           string // client, or "" for an exit-2 error
		errHas         string
	}{
		{"http://127.0.0.1:1/", "", false, HTTPClientLean, ""},
		{"http://127.0.0.1:1/", HTTPClientAuto, false, HTTPClientLean, ""},
		{"http://127.0.0.1:1/", HTTPClientLean, false, HTTPClientLean, ""},
		{"http://127.0.0.1:1/", HTTPClientStd, false, HTTPClientStd, ""},
		{"https://127.0.0.1:1/", "", false, HTTPClientStd, ""},
		{"https://127.0.0.1:1/", HTTPClientStd, false, HTTPClientStd, ""},
		{"https://127.0.0.1:1/", HTTPClientLean, false, "", "plain http:// only, not https://; use --http-client std or auto"},
		{"http://127.0.0.1:1/", "", true, HTTPClientStd, ""},
		{"http://127.0.0.1:1/", HTTPClientLean, true, "", "custom transport"},
		{"http://127.0.0.1:1/", "h2", false, "", `--http-client "h2": want auto, lean or std`},
	}
	for _, tt := range tests {
		t.Run(tt.target+" "+tt.choice, func(t *testing.T) {
			o := Options{Target: tt.target, Rate: rate.MustParse("1/s"), Duration: time.Second, HTTPClient: tt.choice}
			if tt.transport {
				o.Transport = &http.Transport{}
			}
			err := o.Validate()
			if tt.want == "" {
				if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("Validate() = %v, want exit 2 saying %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			o, _ = o.withDefaults()
			e := &engine{o: o}
			if err := e.prepare(); err != nil || e.clientName != tt.want {
				t.Fatalf("prepare: %v, client %q; want %q", err, e.clientName, tt.want)
			}
			switch e.client.(type) {
			case *leanClient:
				if tt.want != HTTPClientLean {
					t.Errorf("client is lean, want %s", tt.want)
				}
			case *stdClient:
				if tt.want != HTTPClientStd {
					t.Errorf("client is net/http, want %s", tt.want)
				}
			default:
				t.Errorf("client %T", e.client)
			}
		})
	}
}

// Both clients carry the same run to the same counts: statuses, header
// checks, the identity header and the body, the bytes moved, timeouts.
func TestClientsAgree(t *testing.T) {
	var slow atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		body := make([]byte, 64)
		n, _ := r.Body.Read(body)
		h := w.Header()
		h.Set("RateLimit-Policy", `"default";q=10;w=1`)
		h.Set("RateLimit", `"default";r=3;t=1`)
		if r.Header.Get("X-Api-Key") == "" || string(body[:n]) != "ping" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(r.Header.Get("X-Api-Key"), "-1") {
			h.Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	run := func(name string, timeout time.Duration) *tally.Result {
		return runLoad(t, Options{Target: srv.URL + "/x", Method: http.MethodPost, Body: []byte("ping"),
			Rate: rate.MustParse("20/s"), Duration: time.Second, Identities: 2, HTTPClient: name, Timeout: timeout})
	}
	lean, std := run(HTTPClientLean, 0), run(HTTPClientStd, 0)
	for _, r := range []*tally.Result{lean, std} {
		if r.Status["200"] != 10 || r.Status["429"] != 10 || r.Failed != 0 ||
			r.Headers.Policy.Valid != 20 || r.Headers.RateLimit.Valid != 20 || r.Headers.RetryAfter.Valid != 10 {
			t.Errorf("status %v failed %d headers %+v; want 10 OK, 10 refused, every header valid", r.Status, r.Failed, r.Headers)
		}
		if r.BytesIn < 20*int64(len("HTTP/1.1 200 OK\r\n\r\nok")) || r.BytesOut < 20*int64(len("POST /x HTTP/1.1\r\n\r\nping")) {
			t.Errorf("bytes in %d out %d", r.BytesIn, r.BytesOut)
		}
	}
	if lean.Headers != std.Headers {
		t.Errorf("header checks differ: lean %+v, std %+v", lean.Headers, std.Headers)
	}
	slow.Store(true)
	for _, name := range []string{HTTPClientLean, HTTPClientStd} {
		r := run(name, 100*time.Millisecond)
		if r.Errors["timeout"] != 20 || r.Responses != 0 {
			t.Errorf("%s against a slow target: errors %v responses %d; want 20 timeouts", name, r.Errors, r.Responses)
		}
	}
}
