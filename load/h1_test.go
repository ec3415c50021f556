package load

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/rate"
)

func TestH1ReadResponse(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		head   bool
		status int
		keep   bool
		hdr    map[string][]string
		rest   string // what must be left unread (the next response)
		err    string
	}{
		{name: "content-length", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT",
			status: 200, keep: true, rest: "NEXT"},
		{name: "headers kept", in: "HTTP/1.1 429 Too Many Requests\r\nratelimit-policy: \"default\";q=10;w=2\r\nRATELIMIT: \"default\";r=0;t=1\r\n" +
			"Retry-After: 1\r\nCache-Control: no-store\r\nX-RateLimit-Remaining: 0\r\nX-Other: x\r\nContent-Length: 0\r\n\r\n",
			status: 429, keep: true, hdr: map[string][]string{
				"Ratelimit-Policy": {`"default";q=10;w=2`}, "Ratelimit": {`"default";r=0;t=1`}, "Retry-After": {"1"},
				"Cache-Control": {"no-store"}, "X-Ratelimit-Remaining": {"0"}}},
		{name: "repeated field", in: "HTTP/1.1 200 OK\r\nRateLimit: \"a\";r=1\r\nRateLimit: \"b\";r=2\r\nContent-Length: 0\r\n\r\n",
			status: 200, keep: true, hdr: map[string][]string{"Ratelimit": {`"a";r=1`, `"b";r=2`}}},
		{name: "chunked with trailer", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: y\r\n\r\nNEXT",
			status: 200, keep: true, rest: "NEXT"},
		{name: "close delimited", in: "HTTP/1.1 200 OK\r\n\r\nall of it", status: 200, keep: false},
		{name: "connection close", in: "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno", status: 503, keep: false},
		{name: "http/1.0", in: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, keep: false},
		{name: "http/1.0 keep-alive", in: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", status: 200, keep: true},
		{name: "interim 100", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\nNEXT", status: 201, keep: true, rest: "NEXT"},
		{name: "no body for 204", in: "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\nNEXT", status: 204, keep: true, rest: "NEXT"},
		{name: "no body for HEAD", in: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nNEXT", head: true, status: 200, keep: true, rest: "NEXT"},
		{name: "bare LF", in: "HTTP/1.1 200 OK\nContent-Length: 1\n\nxNEXT", status: 200, keep: true, rest: "NEXT"},
		{name: "empty", in: "", err: "no response"},
		{name: "garbage status", in: "HTTP/2 200\r\n\r\n", err: "malformed response: status line"},
		{name: "letters in status", in: "HTTP/1.1 2x0 OK\r\n\r\n", err: "malformed response: status line"},
		{name: "bad length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: "malformed response: Content-Length"},
		{name: "conflicting lengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", err: "malformed response: Content-Length"},
		{name: "truncated body", in: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", err: "read body"},
		{name: "bad chunk", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", err: "malformed response: chunk size"},
		{name: "header without colon", in: "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", err: "malformed response: header line"},
		{name: "truncated headers", in: "HTTP/1.1 200 OK\r\nContent-Le", err: "read header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.in), 16<<10)
			h := http.Header{"Ratelimit": {"stale from the last response"}}
			status, keep, err := h1ReadResponse(br, h, tt.head)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("h1ReadResponse = %d, %v, %v; want error containing %q", status, keep, err, tt.err)
				}
				return
			}
			if err != nil || status != tt.status || keep != tt.keep {
				t.Fatalf("h1ReadResponse = %d, %v, %v; want %d, %v", status, keep, err, tt.status, tt.keep)
			}
			for k, want := range tt.hdr {
				if got := h[k]; strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("h[%q] = %q, want %q", k, got, want)
				}
			}
			if tt.hdr == nil && len(h["Ratelimit"]) != 0 {
				t.Errorf("a field of the previous response survived: %q", h["Ratelimit"])
			}
			rest, _ := io.ReadAll(br)
			if string(rest) != tt.rest {
				t.Errorf("left %q unread, want %q", rest, tt.rest)
			}
		})
	}
}

func TestH1Prepare(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:8011/hello?x=1&y=%20")
	h, _ := ParseHeaders([]string{"Accept: */*", "Host: api.test"})
	o := Options{Method: "POST", Headers: h, Body: []byte("{}"), IdentityHeader: "x-api-key"}
	r := h1Prepare(&o, u, "load-run-3")
	want := "POST /hello?x=1&y=%20 HTTP/1.1\r\nHost: api.test\r\nUser-Agent: ratelimit-load/1\r\nAccept: */*\r\nX-Api-Key: load-run-3\r\nContent-Length: 2\r\n\r\n{}"
	if string(r.wire) != want || r.head {
		t.Errorf("h1Prepare =\n%q\nwant\n%q", r.wire, want)
	}
	o = Options{Method: "HEAD"}
	u, _ = url.Parse("http://h.test")
	r = h1Prepare(&o, u, "")
	if string(r.wire) != "HEAD / HTTP/1.1\r\nHost: h.test\r\nUser-Agent: ratelimit-load/1\r\n\r\n" || !r.head {
		t.Errorf("HEAD: %q head=%v", r.wire, r.head)
	}
}

// rawTarget answers each request with a fixed 200 and then closes the
// connection without saying so, as a target with a short idle timeout
// does: the next request on that connection must be retried, not failed.
func TestH1StaleKeepAliveRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for { // read one request head
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						break
					}
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	res := runLoad(t, Options{Target: "http://" + ln.Addr().String() + "/", Rate: rate.MustParse("20/s"), Duration: time.Second, PreAllocatedVUs: 1, MaxVUs: 1})
	// one VU on a busy machine may not keep up and drop some of the 20
	// (the generator's own count says so): every request it sent is judged
	if res.Sent+res.Dropped != 20 || res.Sent < 2 {
		t.Fatalf("%d sent, %d dropped; want the 20 planned, at least 2 sent (a second request meets the closed keep-alive)", res.Sent, res.Dropped)
	}
	if res.Status["200"] != res.Sent || res.Failed != 0 {
		t.Errorf("status %v failed %d errors %v of %d sent; want every one OK despite closed keep-alives", res.Status, res.Failed, res.Errors, res.Sent)
	}
	if conns.Load() < res.Sent {
		t.Errorf("%d connections for %d requests, want one per request", conns.Load(), res.Sent)
	}
}

// https and injected transports take net/http; the same checks apply.
func TestRunNetHTTPPath(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"default";q=10;w=2`)
		if r.Header.Get("X-Api-Key") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	o := Options{Target: srv.URL, Rate: rate.MustParse("10/s"), Duration: time.Second, Identities: 2, Transport: srv.Client().Transport}
	e := &engine{o: o}
	if o2, err := o.withDefaults(); err != nil {
		t.Fatal(err)
	} else {
		e.o = o2
	}
	if err := e.prepare(); err != nil || e.clientName != HTTPClientStd {
		t.Fatalf("prepare: %v, client %q; want net/http for https", err, e.clientName)
	}
	res := runLoad(t, o)
	if res.Status["200"] != 10 || res.Headers.Policy.Valid != 10 {
		t.Errorf("status %v headers %+v", res.Status, res.Headers)
	}
}

func TestH1InterruptCutsBlockedRead(t *testing.T) {
	pt := newPlainTarget(t, 200, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	res, err := Run(ctx, Options{Target: pt.URL, Rate: rate.MustParse("5/s"), Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Ctrl-C took %v to stop a run blocked on a 10 s target", el)
	}
	if !res.Interrupted || res.Errors[errInterrupted] == 0 || res.Failed != 0 {
		t.Errorf("interrupted %v errors %v failed %d", res.Interrupted, res.Errors, res.Failed)
	}
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Fatal("context not cancelled")
	}
}

// FuzzH1ReadResponse: any bytes from a target give a status or an error,
// never a panic, and a status is a 3-digit code.
func FuzzH1ReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nbody",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, in string, head bool) {
		br := bufio.NewReaderSize(strings.NewReader(in), 16<<10)
		status, _, err := h1ReadResponse(br, http.Header{}, head)
		if err == nil && (status < 100 || status > 999) {
			t.Fatalf("status %d from %q", status, in)
		}
	})
}
