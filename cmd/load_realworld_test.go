package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/serve"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// checkOf finds a check of a load document by id.
func checkOf(t *testing.T, doc tally.Result, id string) (pass, warning, skipped bool, msg string) {
	t.Helper()
	for _, c := range doc.Checks {
		if c.ID == id {
			return c.Pass, c.Warning, c.Skipped, c.Message
		}
	}
	t.Fatalf("no check %s in %+v", id, doc.Checks)
	return
}

// TestLoadOlderDrafts: express-rate-limit's draft-06 (standardHeaders:
// true, its meaning since v6) and draft-07 fields are read: --expect auto
// reads their policy, the run passes, the header checks pass, and the
// draft is a warning naming it (it used to fail every run: "the policy
// identifier must be a String, got an Integer").
func TestLoadOlderDrafts(t *testing.T) {
	t.Parallel()
	for _, draft := range []string{"true", "draft-7"} {
		t.Run(draft, func(t *testing.T) {
			url := limtest.Express(t, limtest.ExpressOptions{Limit: 10, Window: 2 * time.Second, StandardHeaders: draft, KeyHeader: "X-API-Key"})
			code, doc := loadJSON(t, "--target", url, "--rate", "20/s", "--duration", "3s", "--identities", "1", "--expect", "auto")
			name := map[string]string{"true": "draft-06", "draft-7": "draft-07"}[draft]
			pass, warning, _, msg := checkOf(t, doc, tally.CheckDraft)
			if code != exitcode.OK || doc.Verdict != "pass" || doc.Expect == nil || !doc.Expect.Pass || pass || !warning || !strings.Contains(msg, name) {
				t.Fatalf("standardHeaders %s: exit %d, %s %v, expect %+v, draft check %v/%v %q", draft, code, doc.Verdict, doc.VerdictMessages, doc.Expect, pass, warning, msg)
			}
			if p, _, _, m := checkOf(t, doc, tally.CheckPolicy); !p {
				t.Errorf("%s policy check: %s", draft, m)
			}
			t.Log(doc.Expect.Line())
		})
	}
}

// TestLoadLegacyDecimalEpoch: slowapi's X-RateLimit-Reset is a decimal
// Unix time (1796326311.1529): read, not skipped; the run passes.
func TestLoadLegacyDecimalEpoch(t *testing.T) {
	t.Parallel()
	url := limtest.Fake(t, limtest.FakeSpec{Algorithm: limtest.FakeFixedWindow, Limit: 10, Window: 2 * time.Second, Style: limtest.FakeSlowAPI, KeyHeader: "X-API-Key"})
	code, doc := loadJSON(t, "--target", url, "--rate", "20/s", "--duration", "3s", "--identities", "1", "--expect", "fixed-window:limit=10,window=2s")
	if code != exitcode.OK || doc.Verdict != "pass" || doc.Headers.Legacy == 0 {
		t.Fatalf("slowapi: exit %d, %s %v, headers %+v", code, doc.Verdict, doc.VerdictMessages, doc.Headers)
	}
}

// TestLoadRetryAfterZero: Retry-After: 0 is judged by what the same
// identity's next request met: refused again (a limiter whose 0 lies)
// fails header:retry-after; honest 0s, or none, pass.
func TestLoadRetryAfterZero(t *testing.T) {
	t.Parallel()
	liar := limtest.Fake(t, limtest.FakeSpec{Algorithm: limtest.FakeFixedWindow, Limit: 10, Window: 2 * time.Second,
		Style: limtest.FakeSlowAPI, KeyHeader: "X-API-Key", DishonestRetryAfter: true})
	code, doc := loadJSON(t, "--target", liar, "--rate", "20/s", "--duration", "3s", "--identities", "1", "--expect", "fixed-window:limit=10,window=2s")
	pass, _, _, msg := checkOf(t, doc, tally.CheckRetryAfter)
	if code != exitcode.Failed || pass || doc.Headers.RetryZeroRefused == 0 || !strings.Contains(msg, "Retry-After: 0") {
		t.Fatalf("dishonest 0: exit %d, retry-after %v %q, headers %+v", code, pass, msg, doc.Headers)
	}
	honest := limtest.Fake(t, limtest.FakeSpec{Algorithm: limtest.FakeFixedWindow, Limit: 10, Window: 2 * time.Second, Style: limtest.FakeSlowAPI, KeyHeader: "X-API-Key"})
	code, doc = loadJSON(t, "--target", honest, "--rate", "20/s", "--duration", "3s", "--identities", "1", "--expect", "fixed-window:limit=10,window=2s")
	if pass, _, _, msg := checkOf(t, doc, tally.CheckRetryAfter); code != exitcode.OK || !pass || doc.Headers.RetryZeroRefused != 0 {
		t.Fatalf("slowapi: exit %d, retry-after %v %q", code, pass, msg)
	}
}

// TestLoadNginx503: nginx limit_req refuses with 503 by default. With the
// status declared (--expect-status 200,503 implies it; --limited-status
// says it) the refusals count as the limiter's everywhere: the count is
// judged, the limiter is seen, and the run's verdict is the count's. The
// same run without declaring 503 fails (503s are failures, and no
// refusal was seen).
func TestLoadNginx503(t *testing.T) {
	t.Parallel()
	url := limtest.Nginx(t, limtest.NginxLimit{Rate: "5r/s", Burst: 9, NoDelay: true, Key: "$http_x_api_key"})
	for _, args := range [][]string{{"--expect-status", "200,503"}, {"--limited-status", "503", "--max-failed", "100%"}} {
		code, doc := loadJSON(t, append([]string{"--target", url, "--rate", "20/s", "--duration", "3s", "--identities", "1",
			"--expect", "gcra:rate=5/s,burst=10", "--headers", "warn"}, args...)...)
		seen, _, _, msg := checkOf(t, doc, tally.CheckLimiterSeen)
		if code != exitcode.OK || !seen || doc.RateLimited == 0 || doc.Status["503"] != doc.RateLimited || len(doc.LimitedStatus) != 1 {
			t.Fatalf("%v: exit %d %v, limiter-seen %v %q, refused %d, status %v, limited_status %v", args, code, doc.VerdictMessages, seen, msg, doc.RateLimited, doc.Status, doc.LimitedStatus)
		}
		t.Log(doc.Expect.Line())
	}
	code, doc := loadJSON(t, "--target", url, "--rate", "20/s", "--duration", "3s", "--identities", "1", "--expect", "gcra:rate=5/s,burst=10")
	if code != exitcode.Failed || doc.RateLimited != 0 {
		t.Fatalf("503 not declared: exit %d, refused %d", code, doc.RateLimited)
	}
}

// TestLoadDefaultVerdict: without --expect, a target that advertises a
// policy is judged against it (serve --break over-admit, which admits
// twice what it advertises, fails: exit 1); --expect none opts out; a
// target that advertises none is not judged, and the summary says so.
func TestLoadDefaultVerdict(t *testing.T) {
	t.Parallel()
	broken, forget := breakTarget(t, serve.BreakOverAdmit)
	code, doc := loadJSON(t, "--target", broken, "--rate", "20/s", "--duration", "3s")
	forget(doc)
	if code != exitcode.Failed || doc.Expect == nil || doc.Expect.Pass || !doc.Expect.Implicit {
		t.Fatalf("over-admit without --expect: exit %d, expect %+v", code, doc.Expect)
	}
	code, doc = loadJSON(t, "--target", broken, "--rate", "20/s", "--duration", "3s", "--expect", "none")
	forget(doc)
	if code != exitcode.OK {
		t.Fatalf("--expect none: exit %d %v", code, doc.VerdictMessages)
	}
	plain := loadBucketTargetNoPolicy(t)
	tf := newTestFactory(t)
	code = tf.execute(t, "load", "--target", plain, "--rate", "20/s", "--duration", "2s")
	if out := tf.Out.String(); code != exitcode.OK || !strings.Contains(out, "not judged") {
		t.Fatalf("no policy, no --expect: exit %d\n%s", code, out)
	}
}

// TestLoadFailOpenFinding: a limiter that serves some requests without
// deciding (failing open: no RateLimit header on them) is named in the
// run's checks, and in the count's failure when it is over.
func TestLoadFailOpenFinding(t *testing.T) {
	t.Parallel()
	url := failOpenTarget(t)
	code, doc := loadJSON(t, "--target", url, "--rate", "20/s", "--duration", "2s", "--identities", "1", "--expect", "token-bucket:burst=10,rate=5/s")
	pass, warning, _, msg := checkOf(t, doc, tally.CheckFailOpen)
	_, _, _, expect := checkOf(t, doc, tally.CheckExpect)
	if code != exitcode.Failed || pass || !warning || !strings.Contains(msg, "failing open") || !strings.Contains(expect, "failing open") {
		t.Fatalf("fail-open target: exit %d, fail-open %v/%v %q, expect %q", code, pass, warning, msg, expect)
	}
}

// breakTarget is serve (a bucket of 10 at 5/s) broken with b.
func breakTarget(t *testing.T, b serve.Break) (string, func(tally.Result)) {
	t.Helper()
	return loadServeTargetBroken(t, limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")}, b)
}

// TestLoadNginxLeakyBucket: Debian's nginx limit_req judged by
// leaky-bucket: its count with nodelay, and with delay=N its delays too
// (the requests past N within the burst are held, not refused); the same
// nginx without delays judged by the delaying model fails on the delays.
func TestLoadNginxLeakyBucket(t *testing.T) {
	t.Parallel()
	nodelay := limtest.Nginx(t, limtest.NginxLimit{Rate: "5r/s", Burst: 6, NoDelay: true, Key: "$http_x_api_key", Status: 429})
	delayed := limtest.Nginx(t, limtest.NginxLimit{Rate: "5r/s", Burst: 6, Delay: 2, Key: "$http_x_api_key", Status: 429})
	run := func(url, spec string) (int, tally.Result) {
		return loadJSON(t, "--target", url, "--rate", "20/s", "--duration", "3s", "--identities", "1", "--headers", "off", "--expect", spec)
	}
	if code, doc := run(nodelay, "leaky-bucket:rate=5/s,burst=6"); code != exitcode.OK {
		t.Fatalf("nginx nodelay judged by its model: exit %d: %s", code, doc.Expect.Line())
	}
	code, doc := run(delayed, "leaky-bucket:rate=5/s,burst=6,delay=2")
	if code != exitcode.OK || doc.Expect.Delays == nil || doc.Expect.Delays.Delayed == 0 {
		t.Fatalf("nginx delay=2 judged by its model: exit %d: %s", code, doc.Expect.Line())
	}
	t.Log(doc.Expect.Line())
	code, doc = run(nodelay, "leaky-bucket:rate=5/s,burst=6,delay=2")
	if code != exitcode.Failed || doc.Expect.Delays == nil || doc.Expect.Delays.Pass {
		t.Fatalf("nginx nodelay judged by a delaying model: exit %d: %s", code, doc.Expect.Line())
	}
	t.Log(doc.Expect.Line())
}

// TestLoadSlidingWindowCounter: go-chi/httprate (a sliding window counter,
// rounded to nearest, windows offset by when its limiter was made)
// judged by sliding-window-counter passes; judged by sliding-window (a
// log) it fails, short by what the two models' arithmetic predicts for
// the plan. Once in the suite; RATELIMIT_SOAK=1 runs it 20 times (the
// issue's acceptance), each run on fresh identities.
func TestLoadSlidingWindowCounter(t *testing.T) {
	t.Parallel()
	url := limtest.Httprate(t, limtest.HttprateOptions{Limit: 10, Window: 2 * time.Second, KeyHeader: "X-API-Key"})
	_, off := limtest.HttprateWindowOffset(t, url)
	swc := fmt.Sprintf("sliding-window-counter:limit=10,window=2s,round=nearest,offset=%dms", off.Milliseconds())
	log := "sliding-window:limit=10,window=2s"
	runs := 1
	if os.Getenv("RATELIMIT_SOAK") != "" {
		runs = 20
	}
	// The two models differ most when a run starts 1.5 s into one of the
	// server's windows: start there (on the real clock: the windows are
	// the clock's), 5 identities at 20/s each for 6 s.
	at := func() string {
		w := int64(2000)
		now := time.Now().UnixMilli() + 1500
		phase := ((now-off.Milliseconds())%w + w) % w
		start := now + (1500-phase+w)%w
		return time.UnixMilli(start).UTC().Format(time.RFC3339Nano)
	}
	run1 := func(spec string) (int, tally.Result) {
		tf := newTestFactory(t)
		tf.Now = time.Now
		code := tf.execute(t, "load", "-o", "json", "--target", url, "--rate", "100/s", "--duration", "6s", "--identities", "5",
			"--headers", "warn", "--start-at", at(), "--expect", spec)
		var doc tally.Result
		if err := json.Unmarshal(tf.Out.Bytes(), &doc); err != nil || doc.Expect == nil {
			t.Fatalf("exit %d, %v: %s", code, err, tf.ErrOut.String())
		}
		return code, doc
	}
	for run := range runs {
		code, doc := run1(swc)
		if code != exitcode.OK || !doc.Expect.Pass {
			t.Fatalf("run %d: httprate judged by %s: exit %d: %s", run, swc, code, doc.Expect.Line())
		}
		code, other := run1(log)
		j := other.Expect
		if code != exitcode.Failed || j.Pass {
			t.Fatalf("run %d: httprate judged by %s: exit %d: %s", run, log, code, j.Line())
		}
		// what the arithmetic predicts: the two models over the same
		// arrivals (the run's sends), the log admitting fewer
		predicted := predictGap(t, swc, log, other)
		if other.Sent != other.Planned {
			// the prediction replays the plan: a run that did not send
			// all of it (a starved generator) is judged on what it sent
			t.Logf("run %d: %d of %d planned sent: the plan's predicted gap does not apply", run, other.Sent, other.Planned)
		} else if gap := j.Observed - j.Expected; abs64(gap-predicted) > j.Tolerance {
			t.Errorf("run %d: judged by the log, %d more admitted than it expects; the models' arithmetic predicts %d (±%d)", run, gap, predicted, j.Tolerance)
		}
		t.Logf("run %d: %s / %s, predicted gap %d", run, doc.Expect.Line(), j.Line(), predicted)
	}
}

// predictGap replays the run's plan (100/s round-robin over 5
// identities) through both models, one per identity, from the run's
// start, and returns the first's admissions minus the second's.
func predictGap(t *testing.T, a, b string, doc tally.Result) int64 {
	t.Helper()
	count := func(spec string) int64 {
		p, err := limiter.ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := limiter.NewLimiter(p)
		ms := make([]model.Limiter, max(doc.Identities, 1))
		for k := range ms {
			ms[k] = l.Model()
		}
		start := doc.StartedAt.UnixMilli()
		var n int64
		for i := range doc.Planned {
			if ms[i%int64(len(ms))].Allow(start+i*10, 1).Allowed {
				n++
			}
		}
		return n
	}
	return count(a) - count(b)
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
