package cmd

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// The behaviours of issue 31, each against its reference target
// (limtest.Behave): load --expect with the model that is the target
// passes, and with the neighbouring model (what a user would write
// without the option) fails, exit 1.

type behaviourRun struct {
	pass, fail []string // specs that must pass, specs that must fail
	rate, dur  string
}

func runBehaviour(t *testing.T, url string, b behaviourRun) {
	t.Helper()
	// the real clock: whole-second timers are the wall clock's seconds
	run := func(spec string) (int, tally.Result) {
		tf := newTestFactory(t)
		tf.Now = time.Now
		code := tf.execute(t, "load", "-o", "json", "--target", url, "--rate", b.rate, "--duration", b.dur, "--identities", "1", "--headers", "off", "--expect", spec)
		var doc tally.Result
		if err := json.Unmarshal(tf.Out.Bytes(), &doc); err != nil {
			t.Fatalf("exit %d, stdout is not JSON: %v\n%s", code, err, tf.ErrOut.String())
		}
		return code, doc
	}
	for _, spec := range b.pass {
		code, doc := run(spec)
		if code != exitcode.OK || doc.Expect == nil || !doc.Expect.Pass {
			t.Fatalf("judged by %s: exit %d %v", spec, code, doc.VerdictMessages)
		}
		t.Logf("%s: %s", spec, doc.Expect.Line())
	}
	for _, spec := range b.fail {
		code, doc := run(spec)
		if code != exitcode.Failed || doc.Expect == nil || doc.Expect.Pass {
			t.Fatalf("judged by the neighbouring %s: exit %d %v, want 1", spec, code, doc.VerdictMessages)
		}
		t.Logf("%s: %s", spec, doc.Expect.Line())
	}
}

// TestLoadSlowdown: a limiter that delays instead of refusing (10 per 2 s
// at once, then 200 ms more each, up to 1 s) is judged on its delays:
// slowdown with its parameters passes; a refusing fixed window of the
// same numbers fails on the count, and a slowdown of twice the step on
// the delays (the target holds half as long).
func TestLoadSlowdown(t *testing.T) {
	t.Parallel()
	url := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.Slowdown, Limit: 10, Window: 2 * time.Second,
		Step: 200 * time.Millisecond, MaxDelay: time.Second, KeyHeader: "X-API-Key"})
	runBehaviour(t, url, behaviourRun{rate: "20/s", dur: "4s",
		pass: []string{"slowdown:after=10,window=2s,step=200ms,max=1s"},
		fail: []string{"fixed-window:limit=10,window=2s", "slowdown:after=10,window=2s,step=400ms,max=2s"}})
}

// TestLoadExpressSlowDown: express-slow-down itself (3.1.1, from the npm
// registry), 10 per 2 s at once, then 200 ms more each, up to 1 s: the
// same verdicts as its reference.
func TestLoadExpressSlowDown(t *testing.T) {
	t.Parallel()
	url := limtest.SlowDown(t, limtest.SlowDownOptions{DelayAfter: 10, Window: 2 * time.Second, Step: 200 * time.Millisecond, MaxDelay: time.Second, KeyHeader: "X-API-Key"})
	runBehaviour(t, url, behaviourRun{rate: "20/s", dur: "4s",
		pass: []string{"slowdown:after=10,window=2s,step=200ms,max=1s"},
		fail: []string{"fixed-window:limit=10,window=2s", "slowdown:after=10,window=2s,step=400ms,max=2s"}})
}

// TestLoadBlockAfterRefusal: 5 per 1 s whose first refusal blocks the key
// for 3 s: block=3s passes; the plain fixed window (5 each second) fails.
func TestLoadBlockAfterRefusal(t *testing.T) {
	t.Parallel()
	url := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.BlockAfterRefusal, Limit: 5, Window: time.Second, Block: 3 * time.Second, KeyHeader: "X-API-Key"})
	runBehaviour(t, url, behaviourRun{rate: "20/s", dur: "6s",
		pass: []string{"fixed-window:limit=5,window=1s,block=3s"},
		fail: []string{"fixed-window:limit=5,window=1s"}})
}

// TestLoadFlexibleBlockDuration: rate-limiter-flexible's own
// blockDuration (5 points per 1 s, blocked 3 s), from the npm registry:
// the same verdicts as its reference.
func TestLoadFlexibleBlockDuration(t *testing.T) {
	t.Parallel()
	url := limtest.Flexible(t, limtest.FlexibleOptions{Points: 5, Duration: time.Second, BlockDuration: 3 * time.Second, KeyHeader: "X-API-Key"})
	runBehaviour(t, url, behaviourRun{rate: "20/s", dur: "6s",
		pass: []string{"fixed-window:limit=5,window=1s,block=3s"},
		fail: []string{"fixed-window:limit=5,window=1s"}})
}

// TestLoadElasticExpiry: 5 per 1 s whose every hit restarts the window: a
// client at 20/s gets its first 5 and nothing after; expiry=elastic
// passes, the fixed window (5 each second) fails.
func TestLoadElasticExpiry(t *testing.T) {
	t.Parallel()
	url := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.ElasticExpiry, Limit: 5, Window: time.Second, KeyHeader: "X-API-Key"})
	runBehaviour(t, url, behaviourRun{rate: "20/s", dur: "4s",
		pass: []string{"fixed-window:limit=5,window=1s,expiry=elastic"},
		fail: []string{"fixed-window:limit=5,window=1s"}})
}

// TestLoadTickingWindow: 1 per 510 ms in windows ticking from the key's
// creation, asked twice a second: align=creation admits about every
// request; the fixed window re-anchored at the first request after each
// window (every other request) fails.
func TestLoadTickingWindow(t *testing.T) {
	t.Parallel()
	url := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.TickingWindow, Limit: 1, Window: 510 * time.Millisecond, KeyHeader: "X-API-Key"})
	runBehaviour(t, url, behaviourRun{rate: "2/s", dur: "10s",
		pass: []string{"fixed-window:limit=1,window=510ms,align=creation"},
		fail: []string{"fixed-window:limit=1,window=510ms"}})
}

// TestLoadLossyBucket: the case, one request every 150 ms to a
// 5/s bucket (of 2) that credits whole tokens from the last admission:
// one per 300 ms once empty; refill=whole passes, the exact bucket (5/s)
// fails.
func TestLoadLossyBucket(t *testing.T) {
	t.Parallel()
	url := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.LossyBucket, Limit: 2, Rate: 5, KeyHeader: "X-API-Key"})
	runBehaviour(t, url, behaviourRun{rate: "400/m", dur: "6s",
		pass: []string{"token-bucket:burst=2,rate=5/s,refill=whole"},
		fail: []string{"token-bucket:burst=2,rate=5/s"}})
}

// TestLoadWholeSecondTimers: 5 per 1 s on whole-second timers, refused at
// count >= limit: 4 per window of 1 to 2 s; timer=seconds,refuse-at=limit
// passes, the millisecond timer with the same refusal fails.
func TestLoadWholeSecondTimers(t *testing.T) {
	t.Parallel()
	url := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.WholeSeconds, Limit: 5, Window: time.Second, KeyHeader: "X-API-Key"})
	runBehaviour(t, url, behaviourRun{rate: "20/s", dur: "8s",
		pass: []string{"fixed-window:limit=5,window=1s,timer=seconds,refuse-at=limit"},
		fail: []string{"fixed-window:limit=5,window=1s,refuse-at=limit", "fixed-window:limit=5,window=1s"}})
}
