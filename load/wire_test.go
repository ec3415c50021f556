package load

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/rate"
)

// leanConnTo opens one lean conn to url with o's request.
func leanConnTo(t *testing.T, o Options) (*leanConn, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	o.Rate, o.Duration, o.Identities, o.RunID, o.HTTPClient = rate.MustParse("1/s"), time.Second, 1, "wire", HTTPClientLean
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{o: o}
	if err := e.prepare(); err != nil {
		t.Fatal(err)
	}
	in, out := new(atomic.Int64), new(atomic.Int64)
	c := e.client.open(context.Background(), in, out).(*leanConn)
	t.Cleanup(c.close)
	return c, in, out
}

// A body far larger than a socket's send buffer is written in parts, each
// waiting for room, and the answer is read after the last: the target
// reads every byte, and the bytes counted are the bytes on the wire.
func TestWireLargeBody(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		time.Sleep(10 * time.Millisecond) // the answer comes well after the write
		_, _ = w.Write([]byte(strconv.FormatInt(n, 10)))
	}))
	defer srv.Close()
	c, in, out := leanConnTo(t, Options{Target: srv.URL + "/big", Method: http.MethodPost, Body: body, Timeout: 10 * time.Second})
	wireLen := int64(len(c.c.ids.wire(0).wire))
	for i := range 3 {
		status, _, err := c.do(0)
		if err != nil || status != http.StatusOK {
			t.Fatalf("request %d: status %d, %v", i, status, err)
		}
		if got := out.Load(); got != int64(i+1)*wireLen {
			t.Errorf("request %d: bytes out %d, want %d", i, got, int64(i+1)*wireLen)
		}
	}
	if in.Load() == 0 {
		t.Error("no bytes counted in")
	}
	if runtime.GOOS == "linux" && c.conn.Load().w == nil {
		t.Error("on Linux the lean client should use the raw socket path")
	}
}

// A target that never answers: the request ends at its timeout (a
// timeout, not a transport error), and the next request works on a new
// connection.
func TestWireTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer nc.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := nc.Read(buf); err != nil {
						return
					}
					if n > 1 { // only the first connection is silent
						_, _ = nc.Write([]byte("HTTP/1.1 204 No Content\r\n\r\n"))
					}
				}
			}()
		}
	}()
	c, _, _ := leanConnTo(t, Options{Target: "http://" + ln.Addr().String() + "/", Timeout: 200 * time.Millisecond})
	start := time.Now()
	status, _, err := c.do(0)
	took := time.Since(start)
	if status != 0 || !isTimeout(err) || classify(err) != "timeout" {
		t.Fatalf("silent target: status %d, err %v (%s), want a timeout", status, err, classify(err))
	}
	if took < 200*time.Millisecond || took > 2*time.Second {
		t.Errorf("the timeout ended the request after %v, want about 200-300 ms", took)
	}
	status, _, err = c.do(0)
	if err != nil || status != http.StatusNoContent {
		t.Fatalf("after the timeout: status %d, %v", status, err)
	}
}

// An interrupt (the run's context ending) cuts a request waiting for its
// answer at once.
func TestWireInterrupt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	o, err := Options{Target: srv.URL, Rate: rate.MustParse("1/s"), Duration: time.Second, Identities: 1,
		RunID: "wire", HTTPClient: HTTPClientLean, Timeout: 30 * time.Second}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{o: o}
	if err := e.prepare(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := e.client.open(ctx, new(atomic.Int64), new(atomic.Int64))
	defer c.close()
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	status, _, err := c.do(0)
	if status != 0 || err == nil {
		t.Fatalf("status %d, err %v, want an error", status, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("interrupt took %v to end the request", took)
	}
	if !errors.Is(err, context.Canceled) && !isTimeout(err) {
		t.Errorf("err %v: want the interrupt's deadline or context.Canceled", err)
	}
}

func TestProcs(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two processors")
	}
	t.Setenv("GOMAXPROCS", "")
	have := runtime.GOMAXPROCS(0)
	for _, tt := range []struct {
		target, rate, client string
		segments             int
		want                 int
	}{
		{"http://127.0.0.1:1/", "10000/s", "", 0, 1},
		{"http://127.0.0.1:1/", "25000/s", "", 0, 1},
		{"http://127.0.0.1:1/", "25001/s", "", 0, 2},
		{"http://127.0.0.1:1/", "1000000/s", "", 0, have},
		{"http://127.0.0.1:1/", "40000/s", "", 4, 1}, // a segment's share
		{"http://127.0.0.1:1/", "10000/s", HTTPClientStd, 0, have},
		{"https://127.0.0.1:1/", "10000/s", "", 0, have}, // net/http: TLS
	} {
		o := Options{Target: tt.target, Rate: rate.MustParse(tt.rate), HTTPClient: tt.client}
		if tt.segments > 0 {
			o.Segment.Index, o.Segment.Count = 0, tt.segments
		}
		if got := Procs(o); got != tt.want {
			t.Errorf("Procs(%s at %s, client %q, %d segments) = %d, want %d", tt.target, tt.rate, tt.client, tt.segments, got, tt.want)
		}
	}
	t.Setenv("GOMAXPROCS", "2")
	if got := Procs(Options{Target: "http://127.0.0.1:1/", Rate: rate.MustParse("10/s")}); got != have {
		t.Errorf("with GOMAXPROCS set, Procs = %d, want the process's %d", got, have)
	}
}
