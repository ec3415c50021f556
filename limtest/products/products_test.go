package products_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limtest"
)

// The models of the limiters people run, held against the real products
// this machine can install (Debian's nginx and haproxy, go-chi/httprate
// from the Go module proxy), each started by the suite on a loopback
// port. A request's answer must be the model's for the request at its
// send or at its answer (the product decided somewhere in between); the
// neighbouring model must disagree somewhere (the negative control).

type shot struct {
	sendMs, doneMs int64
	admitted       bool
}

// fire sends the plan's requests (groups of n at once, then a pause) to
// url with the key header, one after another, and records each.
func fire(t *testing.T, url string, key string, plan []struct {
	n     int
	pause time.Duration
}) []shot {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	var out []shot
	for _, step := range plan {
		for range step.n {
			req, _ := http.NewRequest(http.MethodGet, url+"/x", nil)
			if key != "" {
				req.Header.Set("X-Client-Id", key)
			}
			s := shot{sendMs: time.Now().UnixMilli()}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			s.doneMs, s.admitted = time.Now().UnixMilli(), resp.StatusCode < 400
			out = append(out, s)
		}
		time.Sleep(step.pause)
	}
	return out
}

// holds replays the shots through fresh models of spec at their sends and
// at their answers; it fails the test where neither agrees with the
// product, and reports whether the model at the sends agreed everywhere.
func holds(t *testing.T, spec string, shots []shot) (exact bool) {
	t.Helper()
	p, err := limiter.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := limiter.NewLimiter(p)
	bySend, byDone := l.Model(), l.Model()
	exact = true
	for i, s := range shots {
		a, b := bySend.Allow(s.sendMs, 1).Allowed, byDone.Allow(s.doneMs, 1).Allowed
		if s.admitted != a {
			exact = false
		}
		if s.admitted != a && s.admitted != b {
			t.Errorf("%s request %d (sent +%d ms): the product admitted=%v, the model %v at the send and %v at the answer",
				spec, i, s.sendMs-shots[0].sendMs, s.admitted, a, b)
		}
	}
	return exact
}

// disagrees reports whether the model of spec decides some shot otherwise
// than the product did, at the send and at the answer alike.
func disagrees(t *testing.T, spec string, shots []shot) bool {
	t.Helper()
	p, err := limiter.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := limiter.NewLimiter(p)
	bySend, byDone := l.Model(), l.Model()
	for _, s := range shots {
		a, b := bySend.Allow(s.sendMs, 1).Allowed, byDone.Allow(s.doneMs, 1).Allowed
		if a != s.admitted && b != s.admitted {
			return true
		}
	}
	return false
}

type step = struct {
	n     int
	pause time.Duration
}

// plan is bursts larger than any quota here, then pauses of a fraction of
// the window: the full quota, the refill or the weighted tail, refusals
// that count or do not.
func plan(window time.Duration) []step {
	return []step{{15, window / 2}, {15, window / 3}, {15, window}, {15, window/2 + window/10}, {15, window * 2}, {15, 0}}
}

func TestNginxIsLeakyBucket(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		conf limtest.NginxLimit
		rate string
	}{
		{limtest.NginxLimit{Rate: "5r/s", Burst: 4, NoDelay: true, Key: "$http_x_client_id", Status: 429}, "5/s"},
		{limtest.NginxLimit{Rate: "2r/s", Burst: 3, NoDelay: true, Key: "$http_x_client_id", Status: 429}, "2/s"},
	} {
		spec := fmt.Sprintf("leaky-bucket:rate=%s,burst=%d", c.rate, c.conf.Burst)
		t.Run(spec, func(t *testing.T) {
			url := limtest.Nginx(t, c.conf)
			shots := fire(t, url, "k1", plan(time.Second))
			holds(t, spec, shots)
			// GCRA of the same rate and burst admits one fewer at once
			nb := fmt.Sprintf("gcra:rate=%s,burst=%d", c.rate, c.conf.Burst)
			if !disagrees(t, nb, shots) {
				t.Errorf("%s agrees with nginx: the test cannot tell the models apart", nb)
			}
		})
	}
}

func TestHAProxyIsSlidingWindowCounter(t *testing.T) {
	t.Parallel()
	url := limtest.HAProxy(t, limtest.HAProxyLimit{Period: 2 * time.Second, Limit: 5, Header: "X-Client-Id", Status: 429})
	shots := fire(t, url, "k1", plan(2*time.Second))
	spec := "sliding-window-counter:limit=5,window=2s,align=first,count-refused=true"
	holds(t, spec, shots)
	if !disagrees(t, "sliding-window-counter:limit=5,window=2s,align=first", shots) {
		t.Error("the same counter without counting refusals agrees with haproxy: the test cannot tell them apart")
	}
}

func TestHttprateIsSlidingWindowCounter(t *testing.T) {
	t.Parallel()
	url := limtest.Httprate(t, limtest.HttprateOptions{Limit: 5, Window: 2 * time.Second, KeyHeader: "X-Client-Id"})
	_, off := limtest.HttprateWindowOffset(t, url)
	shots := fire(t, url, "k1", plan(2*time.Second))
	spec := fmt.Sprintf("sliding-window-counter:limit=5,window=2s,round=nearest,offset=%dms", off.Milliseconds())
	holds(t, spec, shots)
	if !disagrees(t, "sliding-window:limit=5,window=2s", shots) {
		t.Error("a sliding log agrees with httprate: the test cannot tell them apart")
	}
}
