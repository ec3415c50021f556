package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/schematest"
)

// fingerprintRuns is how many fingerprints each target gets: 1, or 10
// with RATELIMIT_SOAK=1 (issue 22's acceptance).
func fingerprintRuns() int {
	if os.Getenv("RATELIMIT_SOAK") != "" {
		return 10
	}
	return 1
}

func fingerprint(t *testing.T, url string, mod ...func(*Options)) Fingerprint {
	t.Helper()
	o := Options{URL: url, RunID: uuid.NewString()[:8]}
	for _, m := range mod {
		m(&o)
	}
	res, err := RunFingerprint(context.Background(), o)
	if err != nil {
		t.Fatalf("RunFingerprint(%s): %v", url, err)
	}
	if res.Requests > res.Budget {
		t.Errorf("sent %d requests, over the budget of %d", res.Requests, res.Budget)
	}
	return res
}

func dumpFingerprint(t *testing.T, res Fingerprint) {
	t.Helper()
	t.Logf("%d requests of %d, %.0f ms, %d candidates, notes %q", res.Requests, res.Budget, res.ElapsedMs, res.Candidates, res.Notes)
	for _, p := range res.Phases {
		t.Logf("phase %-18s %s: %d sent, %d admitted, %.0f-%.0f ms", p.Name, p.Identity, p.Sent, p.Admitted, p.StartMs, p.EndMs)
	}
	for _, c := range res.Fits {
		t.Logf("fit   %s (exact %v)", c.Model, c.Exact)
	}
	for _, c := range res.NearMisses {
		t.Logf("miss  %s: %d, %s", c.Model, c.Mismatches, c.RuledOutBy)
	}
	var line strings.Builder
	for i, o := range res.Observations {
		fmt.Fprintf(&line, " %s%s@%.0f-%.0f=%d", o.Phase[:2], o.Identity, o.SentMs, o.DoneMs, o.Status)
		if i%8 == 7 || i == len(res.Observations)-1 {
			t.Log(line.String())
			line.Reset()
		}
	}
}

// named reports whether the fingerprint names want (a spec) as its best
// fit, or as a fit no arrival tells apart from the best one.
func named(res Fingerprint, want string) bool {
	if len(res.Fits) == 0 {
		return false
	}
	if res.Fits[0].Model == want {
		return true
	}
	if res.Equivalent == "" {
		return false
	}
	for _, c := range res.Fits {
		if c.Model == want {
			return true
		}
	}
	return false
}

// TestFingerprintServe: the fingerprint names serve's algorithm and its
// parameters, whichever it runs (a token bucket and GCRA of the same
// burst and rate cannot be told apart: either is named, and the
// equivalence said).
func TestFingerprintServe(t *testing.T) {
	cases := []limiter.Params{
		{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")},
		{Algo: limiter.GCRA, Rate: rate.MustParse("5/s"), Burst: 10},
		{Algo: limiter.SlidingWindow, Limit: 10, Window: 2 * time.Second},
		{Algo: limiter.FixedWindow, Limit: 10, Window: 2 * time.Second},
	}
	for _, p := range cases {
		t.Run(string(p.Algo), func(t *testing.T) {
			t.Parallel()
			p.Cost = 1
			want := p.Spec()
			url := algoTarget(t, p)
			for run := range fingerprintRuns() {
				res := fingerprint(t, url)
				if !named(res, want) || res.Verdict != Pass {
					dumpFingerprint(t, res)
					t.Fatalf("run %d: serve --algo %s: best fit %v, want %s", run, p.Algo, firstFit(res), want)
				}
				if (p.Algo == limiter.TokenBucket || p.Algo == limiter.GCRA) && res.Equivalent == "" {
					t.Errorf("run %d: token bucket and GCRA fit alike, but no equivalence is said", run)
				}
				// the same windows under the other rule do not fit: the
				// first-window-edge phase tells a log from a fixed window
				neighbour := map[limiter.Algo]string{
					limiter.SlidingWindow: "fixed-window:limit=10,window=2s",
					limiter.FixedWindow:   "sliding-window:limit=10,window=2s",
				}[p.Algo]
				for _, c := range res.Fits {
					if neighbour != "" && c.Model == neighbour {
						dumpFingerprint(t, res)
						t.Fatalf("run %d: serve --algo %s: %s fits too", run, p.Algo, neighbour)
					}
				}
				// the neighbours are ruled out, each by a request named
				for _, c := range res.NearMisses {
					if c.RuledOutBy == "" {
						t.Errorf("near miss %s has no request that ruled it out", c.Model)
					}
				}
			}
		})
	}
}

func firstFit(res Fingerprint) string {
	if len(res.Fits) == 0 {
		return "none"
	}
	return res.Fits[0].Model
}

// TestFingerprintNginx: Debian's nginx limit_req (5r/s, burst 9, nodelay)
// is a leaky bucket of rate 5/s and burst 9: burst + 1 for a key it has
// not seen, burst after draining.
func TestFingerprintNginx(t *testing.T) {
	t.Parallel()
	url := limtest.Nginx(t, limtest.NginxLimit{Rate: "5r/s", Burst: 9, NoDelay: true, Key: "$http_x_api_key", Status: 429})
	for run := range fingerprintRuns() {
		res := fingerprint(t, url, func(o *Options) { o.IdentityHeader = "X-Api-Key" })
		want := "leaky-bucket:rate=5/s,burst=9"
		if !named(res, want) {
			dumpFingerprint(t, res)
			t.Fatalf("run %d: nginx limit_req 5r/s burst=9: best fit %s, want %s", run, firstFit(res), want)
		}
	}
}

// clockWindowLua is the fixed window of most Redis tutorials: the key
// names the clock's window (floor(unix time / window)), INCR, EXPIREAT at
// its end. ARGV: limit, window seconds. Reply: the count after INCR.
const clockWindowLua = `
local t = redis.call('TIME')
local w = tonumber(ARGV[2])
local slot = math.floor(tonumber(t[1]) / w)
local key = KEYS[1] .. ':' .. slot
local n = redis.call('INCR', key)
if n == 1 then redis.call('EXPIREAT', key, (slot + 1) * w + 1) end
return n`

// clockWindowTarget serves a fixed window on the clock (INCR + EXPIREAT
// on a real redis-server), keyed by the header idHeader ("": one key for
// every client, as a limiter keyed by address on loopback), with no
// RateLimit headers: the fingerprint has only the statuses to go by.
func clockWindowTarget(t *testing.T, limit, windowSeconds int, idHeader string) string {
	t.Helper()
	tg := redistest.Standalone(t)
	script := redis.NewScript(clockWindowLua)
	prefix := "{fp-clock-" + uuid.NewString()[:8] + "}"
	t.Cleanup(func() {
		ctx := context.Background()
		if keys, err := tg.Client.Keys(ctx, prefix+"*").Result(); err == nil && len(keys) > 0 {
			tg.Client.Del(ctx, keys...)
		}
	})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := ""
		if idHeader != "" {
			id = r.Header.Get(idHeader)
		}
		n, err := script.Run(r.Context(), tg.Client, []string{prefix + id}, limit, windowSeconds).Int64()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if n > int64(limit) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/hello"
}

// TestFingerprintClockWindow: an INCR + EXPIREAT fixed window is named a
// fixed window aligned to the clock, not one from the key's first request
// (the clock-edge phase rules that out), though it sends no headers;
// keyed by identity, or one key for all (the phases then run one after
// another, and a fingerprint right after another waits for the quota).
func TestFingerprintClockWindow(t *testing.T) {
	for _, tc := range []struct{ name, header string }{{"per identity", DefaultIdentityHeader}, {"one key", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := clockWindowTarget(t, 10, 2, tc.header)
			for run := range fingerprintRuns() {
				res := fingerprint(t, url)
				want := "fixed-window:limit=10,window=2s,align=clock"
				if !named(res, want) {
					dumpFingerprint(t, res)
					t.Fatalf("run %d: INCR+EXPIREAT window: best fit %s, want %s", run, firstFit(res), want)
				}
				// the same window from a key's first request is ruled out
				// (another length may fit by coincidence; it ranks below)
				for _, c := range res.Fits {
					if c.Model == "fixed-window:limit=10,window=2s" {
						t.Errorf("run %d: the 2 s window from the first request fits too: the clock-edge phase should rule it out", run)
					}
				}
			}
		})
	}
}

// TestFingerprintNoLimiter: the negative control, a target that never
// refuses: no model is named, the run is undecided and says why.
func TestFingerprintNoLimiter(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	t.Cleanup(ts.Close)
	res := fingerprint(t, ts.URL, func(o *Options) { o.Budget = 300 })
	if res.Verdict != "undecided" || len(res.Fits) != 0 || !strings.Contains(res.Checks[0].Message, "nothing was refused") {
		dumpFingerprint(t, res)
		t.Fatalf("a target without a limiter: verdict %s with %d fits, want undecided with none, saying nothing was refused", res.Verdict, len(res.Fits))
	}
}

// edgeAfterBurstTarget is a fixed window of limit per windowSeconds on
// the clock, kept per identity (the header X-API-Key), whose answers are
// timed so a window's end falls right after the first burst: the first
// request is held until 1.5 s before a window ends, and identity A's
// first request after another identity's (the poll after the isolation
// request) until just after that end. The answers are a clock window's
// all the same, decided when they are sent back.
func edgeAfterBurstTarget(t *testing.T, limit int, windowSeconds int64) string {
	t.Helper()
	w := windowSeconds * 1000
	var mu sync.Mutex
	var edge int64 // the window's end the first burst runs before (unix ms)
	hits := map[string]int{}
	var first, other string // the first identity; another one seen after it
	held := false
	return fake(t, func(rw http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(DefaultIdentityHeader)
		mu.Lock()
		var until int64
		switch {
		case first == "":
			first = id
			now := time.Now().UnixMilli()
			edge = (now/w + 1) * w
			if edge-now < 1700 {
				edge += w
			}
			until = edge - 1500
		case id != first && other == "":
			other = id
		case id == first && other != "" && !held:
			held = true
			until = edge + 5
		}
		mu.Unlock()
		if until > 0 {
			time.Sleep(time.Until(time.UnixMilli(until)))
		}
		mu.Lock()
		key := fmt.Sprintf("%s:%d", id, time.Now().UnixMilli()/w)
		hits[key]++
		n := hits[key]
		mu.Unlock()
		if n > limit {
			limited(rw)
			return
		}
		fmt.Fprintln(rw, "ok")
	})
}

// TestFingerprintEdgeAfterBurst: a clock window whose end falls between
// the first burst and the first poll gives the quota back at once, which
// also looks like a refill too fast to time; the fingerprint spends the
// quota once more and times the refill from there, and names the window
// (it called the run undecided before: CI, a real INCR + EXPIREAT window
// whose end fell 20 ms after the burst).
func TestFingerprintEdgeAfterBurst(t *testing.T) {
	t.Parallel()
	url := edgeAfterBurstTarget(t, 10, 2)
	res := fingerprint(t, url)
	want := "fixed-window:limit=10,window=2s,align=clock"
	if !named(res, want) {
		dumpFingerprint(t, res)
		t.Fatalf("a window's end right after the burst: best fit %s (%s), want %s", firstFit(res), res.Checks[0].Message, want)
	}
	var again bool
	for _, p := range res.Phases {
		again = again || p.Name == "burst-again"
	}
	if !again {
		dumpFingerprint(t, res)
		t.Errorf("no burst-again phase: the window's end was not where the test put it")
	}
	// the document, with the phases of a second burst, fits its schema
	res.Tool, res.Command = &doc.Tool{Name: "ratelimit", Version: "(devel)"}, []string{"ratelimit", "probe", url, "--fingerprint"}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, "the fingerprint document", b)
}
