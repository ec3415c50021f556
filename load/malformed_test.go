package load

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// rawTarget is a TCP server on loopback that answers every request head it
// reads with the bytes of resp, then closes the connection: a target that
// speaks broken HTTP.
func rawTarget(t *testing.T, resp string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				for { // one request head
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						break
					}
				}
				_, _ = io.WriteString(c, resp)
			})
		}
	})
	return "http://" + ln.Addr().String() + "/"
}

// A target answering with any bytes at all gives counted results: a
// three-digit status (600-999 included) under its own code, anything
// malformed as a failed request, never a panic of a VU goroutine.
func TestRunMalformedResponses(t *testing.T) {
	const n = 3 // 10/s for 300 ms
	tests := []struct {
		name   string
		resp   string
		status string // counted under this code; "" when it is an error
		kind   string // else the error kind
	}{
		{"999", "HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n", "999", ""},
		{"600", "HTTP/1.1 600 X\r\nContent-Length: 2\r\n\r\nok", "600", ""},
		{"700 no reason", "HTTP/1.1 700\r\nContent-Length: 0\r\n\r\n", "700", ""},
		{"1000", "HTTP/1.1 1000 X\r\nContent-Length: 0\r\n\r\n", "", "malformed response"},
		{"099", "HTTP/1.1 099 X\r\nContent-Length: 0\r\n\r\n", "", "malformed response"},
		{"000", "HTTP/1.1 000 X\r\nContent-Length: 0\r\n\r\n", "", "malformed response"},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", "", "malformed response"},
		{"signed length", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", "", "malformed response"},
		{"length overflows", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", "", "malformed response"},
		{"huge length cut", "HTTP/1.1 200 OK\r\nContent-Length: 999999999999999999\r\n\r\nabc", "", "eof"},
		{"int64 length", "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nabc", "", "malformed response"},
		{"huge chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\n", "", "malformed response"},
		{"max chunk size cut", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\nabc", "", "eof"},
		{"int64 chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nabc", "", "malformed response"},
		{"negative chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", "", "malformed response"},
		{"header without colon", "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", "", "malformed response"},
		{"too many 1xx", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 50) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "", "malformed response"},
		{"header section too long", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("a", 1000)+"\r\n", 1100) + "\r\n", "", "malformed response"},
		{"garbage", "\x00\xff\r\n\r\n", "", "malformed response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runLoad(t, Options{Target: rawTarget(t, tt.resp), Rate: rate.MustParse("10/s"), Duration: 300 * time.Millisecond,
				PreAllocatedVUs: 1, MaxVUs: 2, Timeout: 5 * time.Second})
			if res.Completed != n || res.Failed != n {
				t.Fatalf("completed %d failed %d, want %d %d; status %v errors %v", res.Completed, res.Failed, n, n, res.Status, res.Errors)
			}
			if tt.status != "" {
				if res.Status[tt.status] != n || res.Responses != n || len(res.Errors) != 0 {
					t.Errorf("status %v errors %v; want %d under %s", res.Status, res.Errors, n, tt.status)
				}
				return
			}
			if res.Errors[tt.kind] != n || res.Responses != 0 {
				t.Errorf("errors %v status %v; want %d of kind %q", res.Errors, res.Status, n, tt.kind)
			}
		})
	}
}

// The net/http client (https, proxies, injected transports) takes any three
// digits, "000" included: the engine counts 600-999 and fails 0-99.
func TestRunNetHTTPOddStatus(t *testing.T) {
	tests := []struct {
		resp   string
		status string
		kind   string
	}{
		{"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n", "999", ""},
		{"HTTP/1.1 650 X\r\nContent-Length: 0\r\n\r\n", "650", ""},
		{"HTTP/1.1 000 X\r\nContent-Length: 0\r\n\r\n", "", "malformed response"},
		{"HTTP/1.1 +12 X\r\nContent-Length: 0\r\n\r\n", "", "malformed response"},
	}
	for _, tt := range tests {
		t.Run(tt.resp[9:12], func(t *testing.T) {
			tr := &http.Transport{DisableKeepAlives: true}
			t.Cleanup(tr.CloseIdleConnections)
			res := runLoad(t, Options{Target: rawTarget(t, tt.resp), Rate: rate.MustParse("10/s"), Duration: 300 * time.Millisecond,
				PreAllocatedVUs: 1, MaxVUs: 2, Transport: tr})
			if res.Completed != 3 || res.Failed != 3 {
				t.Fatalf("completed %d failed %d; status %v errors %v", res.Completed, res.Failed, res.Status, res.Errors)
			}
			if tt.status != "" && res.Status[tt.status] != 3 || tt.kind != "" && res.Errors[tt.kind] != 3 {
				t.Errorf("status %v errors %v; want 3 under %q%q", res.Status, res.Errors, tt.status, tt.kind)
			}
		})
	}
}

// FuzzH1Response feeds arbitrary bytes from a target through the lean
// client as a VU does: response after response on one connection (through a
// small buffer too, so long lines hit its edge), each checked by the rate
// limit header checks and recorded. No panic; every status a three-digit
// code; every read consumes input, so no hang.
func FuzzH1Response(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 999 Odd\r\nRateLimit-Policy: \"d\";q=10;w=2\r\nRateLimit: \"d\";r=0;t=1\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 600 X\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\n",
		"HTTP/1.1 429 X\r\nRetry-After: -1\r\nCache-Control: max-age=99999999999999999999\r\nX-RateLimit-Reset: 1e309\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 1000 X\r\n\r\n",
	} {
		f.Add([]byte(s), false)
	}
	e := &engine{maxLat: int64(time.Minute / time.Microsecond), st: tally.NewStatuses(judge.Rule{}, DefaultExpectStatus)}
	f.Fuzz(func(t *testing.T, in []byte, head bool) {
		for _, size := range []int{16, 16 << 10} {
			v := newVU(e, 0)
			br := bufio.NewReaderSize(bytes.NewReader(in), size)
			h := http.Header{}
			for i := 0; i <= len(in); i++ { // each response takes at least one byte
				status, keep, err := h1ReadResponse(br, h, head)
				if err != nil {
					v.add(job{i: int64(i)}, 0, time.Millisecond, 0, classify(err))
					break
				}
				if status < 100 || status > 999 {
					t.Fatalf("status %d from %q", status, in)
				}
				v.t.Inspect(status, h, time.Unix(1e9, 0))
				v.add(job{i: int64(i)}, 0, time.Millisecond, status, "")
				if !keep {
					break
				}
			}
			var res tally.Result
			v.t.Fill(&res, 0, HeadersFail, "")
			if v.t.Completed != v.t.Responses+v.t.Failed-countUnexpected(e, &res) {
				t.Fatalf("completed %d responses %d failed %d", v.t.Completed, v.t.Responses, v.t.Failed)
			}
		}
	})
}

// countUnexpected is how many of res's responses had a status that is a
// failure.
func countUnexpected(e *engine, res *tally.Result) int64 {
	var n int64
	for s, c := range res.Status {
		if code, _ := strconv.Atoi(s); !e.st.Expected(code) {
			n += c
		}
	}
	return n
}
