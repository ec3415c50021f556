package load

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/rate"
)

// closingTarget is a raw HTTP/1.1 server that answers one request per
// connection, as keep-alive (no Connection: close), and then closes the
// connection: what a server closing idle keep-alive connections does, at
// its most eager. It counts each request by its identity.
type closingTarget struct {
	url  string
	mu   sync.Mutex
	seen map[string]int // identity -> requests read
}

func newClosingTarget(t *testing.T) *closingTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ct := &closingTarget{url: "http://" + ln.Addr().String() + "/", seen: map[string]int{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { ct.serve(c) })
		}
	})
	return ct
}

func (ct *closingTarget) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	id, length := "", 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return // a preflight or warm-up connection closed unused
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, _ := strings.Cut(line, ":")
		switch strings.ToLower(name) {
		case "x-api-key":
			id = strings.TrimSpace(value)
		case "content-length":
			_, _ = fmt.Sscan(strings.TrimSpace(value), &length)
		}
	}
	if _, err := br.Discard(length); err != nil {
		return
	}
	ct.mu.Lock()
	ct.seen[id]++
	ct.mu.Unlock()
	_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
}

// check asserts that the target read every request the run counts as
// sent exactly once, and no other: sent distinct identities, among the
// run's first planned, each read once.
func (ct *closingTarget) check(t *testing.T, runID string, planned, sent int) {
	t.Helper()
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if len(ct.seen) != sent {
		t.Errorf("target read %d distinct requests, want %d (the requests sent)", len(ct.seen), sent)
	}
	ours := 0
	for k := range planned {
		got := ct.seen[IdentityValue(runID, k)]
		if got > 0 {
			ours++
		}
		if got > 1 {
			t.Errorf("target read request %d %d times, want once", k, got)
		}
	}
	if ours != len(ct.seen) {
		t.Errorf("target read %d requests that are not the run's: %v", len(ct.seen)-ours, ct.seen)
	}
}

var retriedNote = regexp.MustCompile(`^([\d,]+) requests? (was|were) retried once on a new connection`)

// retriedOf is the count of requests the run's notes say were retried.
func retriedOf(notes []string) int {
	for _, n := range notes {
		if m := retriedNote.FindStringSubmatch(n); m != nil {
			var k int
			_, _ = fmt.Sscan(strings.ReplaceAll(m[1], ",", ""), &k)
			return k
		}
	}
	return 0
}

// A target that closes every keep-alive connection after its response
// (normal HTTP/1.1, at its most eager): the lean client sends a GET that
// finds its connection closed once more on a new one and counts it; a
// POST, which it may not send twice, is not sent on a closed connection
// at all. Either way nothing fails, and the target reads every request
// the run counts as sent exactly once: none lost, none sent twice. (On a
// starved machine the single VU may drop an iteration as late; the
// accounting stays exact: planned = sent + dropped.)
func TestLeanKeepAliveClosedByTarget(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			ct := newClosingTarget(t)
			runID := "closing-" + method
			res := runLoad(t, Options{Target: ct.url, Method: method, Body: []byte("x"), Rate: rate.MustParse("25/s"), Duration: 2 * time.Second,
				Identities: 50, RunID: runID, PreAllocatedVUs: 1, MaxVUs: 1, HTTPClient: HTTPClientLean})
			if res.Planned != 50 || res.Sent+res.Dropped != 50 || res.NotStarted != 0 {
				t.Fatalf("planned %d sent %d dropped %d not started %d; want 50 = sent + dropped", res.Planned, res.Sent, res.Dropped, res.NotStarted)
			}
			if res.Sent < 25 || res.Status["200"] != res.Sent || res.Failed != 0 || len(res.Errors) != 0 {
				t.Fatalf("sent %d status %v failed %d errors %v; want every request sent answered 200", res.Sent, res.Status, res.Failed, res.Errors)
			}
			ct.check(t, runID, 50, int(res.Sent))
			// The first request goes on the connection dialled before the
			// clock, which the target has not closed; every later one finds
			// its connection closed.
			want := int(res.Sent) - 1
			if method == http.MethodPost {
				want = 0 // looked at first, and redialled: nothing to retry
			}
			if got := retriedOf(res.Notes); got != want {
				t.Errorf("retried %d (notes %q), want %d", got, res.Notes, want)
			}
		})
	}
}

// Connections dialled before the clock starts are idle keep-alive
// connections too: a server that closes a connection on which no request
// arrives in time (net/http's ReadHeaderTimeout, ratelimit serve's
// --read-header-timeout) has closed them by the time a VU first uses
// them. The request is sent again on a new connection, not failed as EOF.
func TestLeanWarmConnectionClosedBeforeUse(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Config.ReadHeaderTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	res := runLoad(t, Options{Target: srv.URL, Rate: rate.MustParse("10/s"), Duration: 2 * time.Second,
		PreAllocatedVUs: 10, MaxVUs: 10, HTTPClient: HTTPClientLean})
	if res.Sent+res.Dropped != 20 || res.Sent < 10 || res.Status["200"] != res.Sent || len(res.Errors) != 0 || hits.Load() != res.Sent {
		t.Fatalf("sent %d dropped %d status %v errors %v, target answered %d; want every request sent answered once, no error",
			res.Sent, res.Dropped, res.Status, res.Errors, hits.Load())
	}
	// The VUs take iterations in turn: VU k first sends at k*100 ms, by
	// when the target has closed its connection (for k >= 1 at least).
	if got := retriedOf(res.Notes); got < 5 {
		t.Errorf("retried %d (notes %q), want the warm connections' first requests retried", got, res.Notes)
	}
}

// A real EOF, on a connection dialled for the request, stays an error, and
// the run says in one line what it means.
func TestLeanEOFIsExplained(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // read the request, then hang up without answering
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				c.Close()
			}()
		}
	}()
	res := runLoad(t, Options{Target: "http://" + ln.Addr().String() + "/", Rate: rate.MustParse("10/s"), Duration: 500 * time.Millisecond,
		PreAllocatedVUs: 1, MaxVUs: 1, HTTPClient: HTTPClientLean, MaxFailed: 1})
	if res.Sent+res.Dropped != 5 || res.Sent < 2 || res.Errors["eof"] != res.Sent {
		t.Fatalf("sent %d dropped %d errors %v, want every request sent to end in eof", res.Sent, res.Dropped, res.Errors)
	}
	explained := false
	for _, n := range res.Notes {
		explained = explained || strings.HasPrefix(n, fmt.Sprintf("%d requests ended in eof: the target closed the connection without answering", res.Sent))
	}
	if !explained {
		t.Errorf("notes %q: no line explaining the eof errors", res.Notes)
	}
	// Only the first request went on an idle connection (the one dialled
	// before the clock): it was sent once more on a new one, whose EOF is
	// counted. A target that hangs up after reading gets a replayable
	// request twice, as from net/http; every later request went on a new
	// connection and was not retried.
	if got := retriedOf(res.Notes); got != 1 {
		t.Errorf("retried %d (notes %q), want 1", got, res.Notes)
	}
}

// TestSoakServe runs the default client against `ratelimit serve`
// (built from this tree) at 100/s and asserts not one EOF, nor any other
// transport error, and every planned request sent or counted as dropped.
// By default it is short (3 runs of 3 s); RATELIMIT_SOAK=1 runs the soak
// the issue asks for, 20 runs of 30 s (over ten minutes):
//
//	RATELIMIT_SOAK=1 go test -run TestSoakServe -timeout 20m -v ./load
func TestSoakServe(t *testing.T) {
	runs, dur := 3, 3*time.Second
	if os.Getenv("RATELIMIT_SOAK") == "1" {
		runs, dur = 20, 30*time.Second
	}
	bin := filepath.Join(t.TempDir(), "ratelimit")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "REDIS_URL=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	target := ""
	sc := bufio.NewScanner(stderr)
	listening := regexp.MustCompile(`listening on (http://\S+);`)
	for sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			target = m[1] + "/hello"
			break
		}
	}
	if target == "" {
		t.Fatal("ratelimit serve did not say where it listens")
	}
	go func() { // keep draining its log
		for sc.Scan() {
		}
	}()
	var eofs, errs int64
	for run := range runs {
		res, err := Run(ctx, Options{Target: target, Rate: rate.MustParse("100/s"), Duration: dur,
			RunID: fmt.Sprintf("soak-%d", run), MaxFailed: 1})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		t.Logf("run %2d: sent %d/%d, status %v, errors %v, retried %d, vus %d", run, res.Sent, res.Planned, res.Status, res.Errors, retriedOf(res.Notes), res.VUs.Peak)
		eofs += res.Errors["eof"]
		for _, n := range res.Errors {
			errs += n
		}
		if res.Sent+res.Dropped != res.Planned || res.Completed != res.Sent || res.Sent == 0 {
			t.Errorf("run %d: planned %d sent %d dropped %d completed %d", run, res.Planned, res.Sent, res.Dropped, res.Completed)
		}
	}
	if eofs != 0 || errs != 0 {
		t.Errorf("%d runs: %d eof errors, %d transport errors in all; want none", runs, eofs, errs)
	}
}
