package cmd

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/probe"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/serve"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// soakRuns and burnCPU: the shared harness's (limtest).
func soakRuns() int { return limtest.SoakRuns() }

func burnCPU(t *testing.T, cores int) { limtest.BurnCPU(t, cores) }

// soakAlgos are serve's scripted algorithms, each a quota of 10 over 2 s.
var soakAlgos = []limiter.Params{
	{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")},
	{Algo: limiter.SlidingWindow, Limit: 10, Window: 2 * time.Second},
	{Algo: limiter.FixedWindow, Limit: 10, Window: 2 * time.Second},
	{Algo: limiter.GCRA, Rate: rate.MustParse("5/s"), Burst: 10},
}

// probeFailed runs probe against url and returns its exit code and the
// checks that failed.
func probeFailed(t *testing.T, url string) (int, []string) {
	t.Helper()
	tf := newTestFactory(t)
	code := tf.execute(t, "probe", url, "-o", "json")
	var res probe.Result
	if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
		t.Fatalf("probe -o json (exit %d): %v\n%s", code, err, tf.ErrOut.String())
	}
	var failed []string
	for _, c := range res.Checks {
		if c.Status == probe.Fail {
			failed = append(failed, c.ID+": "+c.Message)
		}
	}
	return code, failed
}

// loadFailed runs load --expect auto against url and returns its exit
// code and the checks that failed (warnings not included).
func loadFailed(t *testing.T, url string) (int, []string) {
	t.Helper()
	tf := newTestFactory(t)
	code := tf.execute(t, "load", "--target", url, "--rate", "20/s", "--duration", "3s", "--expect", "auto", "--expect-status", "200,429,503", "-o", "json")
	var res tally.Result
	if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
		t.Fatalf("load -o json (exit %d): %v\n%s", code, err, tf.ErrOut.String())
	}
	var failed []string
	for _, c := range res.CheckList() {
		if !c.Pass && c.Counts() {
			failed = append(failed, c.ID+": "+c.Message)
		}
	}
	return code, failed
}

func ids(failed []string) []string {
	out := make([]string, len(failed))
	for i, f := range failed {
		out[i], _, _ = strings.Cut(f, ":")
		if strings.HasPrefix(f, "header:") {
			out[i] = "header:" + strings.SplitN(f, ":", 3)[1]
		}
	}
	return out
}

// TestServeUnderBurner: with a CPU burner keeping both cores busy, every
// serve --algo passes probe and load --expect auto, run after run; and
// every --break mode still fails exactly the check that guards it, in
// probe and (where a load run can see it) in load. One run each; 20 with
// RATELIMIT_SOAK=1.
func TestServeUnderBurner(t *testing.T) {
	burnCPU(t, 2)
	for _, p := range soakAlgos {
		t.Run(string(p.Algo), func(t *testing.T) {
			t.Parallel()
			url, _ := loadServeTarget(t, p, 0)
			for run := range soakRuns() {
				if code, failed := probeFailed(t, url); code != exitcode.OK {
					t.Fatalf("run %d: probe of serve --algo %s = %d, failed %q", run, p.Algo, code, failed)
				}
				if code, failed := loadFailed(t, url); code != exitcode.OK {
					t.Fatalf("run %d: load --expect auto against serve --algo %s = %d, failed %q", run, p.Algo, code, failed)
				}
			}
		})
	}
	probeWant := map[serve.Break]string{
		serve.BreakRetryAfterZero: probe.CheckRetryAfterHonest,
		serve.BreakNoRetryAfter:   probe.CheckRetryAfter,
		serve.BreakCacheable429:   probe.CheckCacheable,
		serve.BreakConstantReset:  probe.CheckReset,
		serve.BreakStatus503:      probe.CheckLimitedStatus,
		serve.BreakTrustXFF:       probe.CheckSpoofing,
		serve.BreakOverAdmit:      probe.CheckPolicy,
	}
	// what a load run sees of each break ("": nothing, it passes)
	loadWant := map[serve.Break]string{
		serve.BreakRetryAfterZero: "header:retry-after",
		serve.BreakNoRetryAfter:   "header:retry-after",
		serve.BreakCacheable429:   "header:429-not-storable",
		serve.BreakConstantReset:  "",
		serve.BreakStatus503:      "header:limited-status",
		serve.BreakTrustXFF:       "",
		serve.BreakOverAdmit:      "expect",
	}
	for _, b := range serve.Breaks() {
		t.Run("break-"+string(b), func(t *testing.T) {
			t.Parallel()
			url, _ := breakTarget(t, b)
			for run := range soakRuns() {
				code, failed := probeFailed(t, url)
				if code != exitcode.Failed || !slices.Equal(ids(failed), []string{probeWant[b]}) {
					t.Fatalf("run %d: probe of serve --break %s = %d, failed %q; want exit 1 and exactly %s", run, b, code, failed, probeWant[b])
				}
				code, failed = loadFailed(t, url)
				want := loadWant[b]
				switch {
				case want == "" && code != exitcode.OK:
					t.Fatalf("run %d: load against serve --break %s = %d, failed %q; want a pass (a load run cannot see it)", run, b, code, failed)
				case want != "" && (code != exitcode.Failed || !slices.Equal(ids(failed), []string{want})):
					t.Fatalf("run %d: load against serve --break %s = %d, failed %q; want exit 1 and exactly %s", run, b, code, failed, want)
				}
			}
		})
	}
}
