package cmd

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/probe"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/serve"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// fingerprintOf runs probe --fingerprint against url and decodes it.
func fingerprintOf(t *testing.T, url string, args ...string) (int, probe.Fingerprint) {
	t.Helper()
	tf := newTestFactory(t)
	code := tf.execute(t, append([]string{"probe", url, "--fingerprint", "-o", "json"}, args...)...)
	var res probe.Fingerprint
	if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
		t.Fatalf("probe --fingerprint -o json (exit %d): %v\n%s", code, err, tf.ErrOut.String())
	}
	return code, res
}

// bucketOf5 is the token bucket of 5 at 5/s and the models no arrival
// tells from it (GCRA, nginx's leaky bucket of one less burst).
var bucketOf5 = []string{"token-bucket:burst=5,rate=5/s", "gcra:rate=5/s,burst=5", "leaky-bucket:rate=5/s,burst=4"}

// TestSlowTargets (issue 29): serve behind 100 ms and 250 ms of latency,
// a token bucket of 5 at 5/s, with both cores busy: probe passes and the
// fingerprint names the bucket (or a model no arrival tells from it),
// run after run (20 with RATELIMIT_SOAK=1). Sent one after another, no
// burst was ever refused (latency x rate >= 1): "never limited", and a
// bucket of 15 at 15/s. The negative control: the same latency with
// serve --break over-admit fails probe's policy check.
func TestSlowTargets(t *testing.T) {
	burnCPU(t, 2)
	p := limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.MustParse("5/s")}
	for _, delay := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			t.Parallel()
			url, _ := startServe(t, p, delay, "")
			for run := range soakRuns() {
				if code, failed := probeFailed(t, url); code != exitcode.OK {
					t.Fatalf("run %d: probe behind %s = %d, failed %q", run, delay, code, failed)
				}
				code, fp := fingerprintOf(t, url)
				if code != exitcode.OK || len(fp.Fits) == 0 || !contains(bucketOf5, fp.Fits[0].Model) {
					t.Fatalf("run %d: fingerprint behind %s = %d, %s; want %s first", run, delay, code, fp.Checks[0].Message, bucketOf5[0])
				}
			}
		})
	}
	t.Run("over-admit behind 250ms", func(t *testing.T) {
		t.Parallel()
		url, _ := startServe(t, p, 250*time.Millisecond, serve.BreakOverAdmit)
		code, failed := probeFailed(t, url)
		if code != exitcode.Failed || !contains(ids(failed), probe.CheckPolicy) {
			t.Fatalf("probe of an over-admitting slow target = %d, failed %q; want 1 naming policy", code, failed)
		}
	})
}

// TestLargeQuota (issue 29): a token bucket of 1000 at 100/s, with both
// cores busy: probe passes, spending the quota in one burst in flight at
// once (20 runs with RATELIMIT_SOAK=1). With RATELIMIT_SOAK=1 the
// fingerprint must also name the bucket (or a model no arrival tells from
// it) within --max-time 60s every run: under two burners it does about 4
// runs in 5 (a burst of a thousand placed only approximately leaves the
// next single requests a unit off), so the default suite, which must not
// flake, does not assert it.
func TestLargeQuota(t *testing.T) {
	burnCPU(t, 2)
	url, _ := startServe(t, limiter.Params{Algo: limiter.TokenBucket, Capacity: 1000, Rate: rate.MustParse("100/s")}, 0, "")
	want := []string{"token-bucket:burst=1000,rate=100/s", "gcra:rate=100/s,burst=1000", "leaky-bucket:rate=100/s,burst=999"}
	for run := range soakRuns() {
		if code, failed := probeFailed(t, url); code != exitcode.OK {
			t.Fatalf("run %d: probe of a bucket of 1000 = %d, failed %q", run, code, failed)
		}
		if os.Getenv("RATELIMIT_SOAK") == "" {
			continue
		}
		start := time.Now()
		code, fp := fingerprintOf(t, url, "--max-time", "60s")
		took := time.Since(start)
		if code != exitcode.OK || len(fp.Fits) == 0 || !contains(want, fp.Fits[0].Model) {
			t.Fatalf("run %d: fingerprint of a bucket of 1000 = %d in %s: %s; want %s first", run, code, took.Round(time.Second), fp.Checks[0].Message, want[0])
		}
		t.Logf("run %d: fingerprint named %s in %s (%d requests)", run, fp.Fits[0].Model, took.Round(100*time.Millisecond), fp.Requests)
	}
}

// TestReplicasBehindOneAddress (issue 29 item 8): three serve replicas,
// each with its own store, round robin behind Debian's nginx: load, probe
// and the fingerprint fail, and each names the quota kept per instance
// with its evidence. The control: one replica behind the same proxy
// passes load and probe, and nothing says "per instance".
func TestReplicasBehindOneAddress(t *testing.T) {
	t.Parallel()
	p := limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.MustParse("5/s")}
	front := func(n int) string {
		var backends []string
		for range n {
			u, _ := startServe(t, p, 0, "")
			backends = append(backends, strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/hello"))
		}
		return limtest.NginxRoundRobin(t, backends) + "/hello"
	}
	loadOf := func(url string) (int, tally.Result) {
		return loadJSON(t, "--target", url, "--rate", "20/s", "--duration", "6s", "--expect", "auto")
	}
	three := front(3)
	code, res := loadOf(three)
	if code != exitcode.Failed || !counters(res.Notes) {
		t.Errorf("load against three replicas = %d, notes %q; want 1 and about 3 counters (2 when requests in flight together only bound it)", code, res.Notes)
	}
	if c := findCheck(res.CheckList(), "expect"); c == nil || !strings.Contains(c.Message, "kept per instance") {
		t.Errorf("the failed expectation does not name the replicas: %+v", c)
	}
	code, failed := probeFailed(t, three)
	if code != exitcode.Failed || !counters(failed) {
		t.Errorf("probe against three replicas = %d, failed %q; want 1 naming about 3 counters (2 when requests in flight together only bound it)", code, failed)
	}
	code, fp := fingerprintOf(t, three)
	if code != exitcode.Failed || !strings.Contains(fp.Checks[0].Message, "kept per instance") {
		t.Errorf("fingerprint against three replicas = %d: %s; want 1 naming the counters", code, fp.Checks[0].Message)
	}

	one := front(1)
	code, res = loadOf(one)
	if code != exitcode.OK || anyHas(res.Notes, "per instance") {
		t.Errorf("control, one replica: load = %d, notes %q", code, res.Notes)
	}
	if code, failed := probeFailed(t, one); code != exitcode.OK {
		t.Errorf("control, one replica: probe = %d, failed %q", code, failed)
	}
}

// TestUndecidedExit: a target that refuses nothing is UNDECIDED in probe
// --fingerprint and load, exit 1; --allow-undecided exits 0.
func TestUndecidedExit(t *testing.T) {
	t.Parallel()
	url, _ := startServe(t, limiter.Params{Algo: limiter.TokenBucket, Capacity: 1000, Rate: rate.MustParse("1000/s")}, 0, "")
	code, fp := fingerprintOf(t, url, "--budget", "50")
	if code != exitcode.Failed || fp.Verdict != doc.VerdictUndecided {
		t.Errorf("fingerprint = %d %s, want 1 undecided", code, fp.Verdict)
	}
	if code, _ := fingerprintOf(t, url, "--budget", "50", "--allow-undecided"); code != exitcode.OK {
		t.Errorf("fingerprint --allow-undecided = %d, want 0", code)
	}
	code, res := loadJSON(t, "--target", url, "--rate", "10/s", "--duration", "1s")
	if code != exitcode.Failed || res.Verdict != doc.VerdictUndecided {
		t.Errorf("load = %d %s, want 1 undecided", code, res.Verdict)
	}
	if code, _ := loadJSON(t, "--target", url, "--rate", "10/s", "--duration", "1s", "--allow-undecided"); code != exitcode.OK {
		t.Errorf("load --allow-undecided = %d, want 0", code)
	}
}

// counters reports whether one of xs names the three replicas' counters:
// about 3, or at least 2 where requests in flight together over a busy
// machine's long answers bound the count only from below; never more
// counters than there are.
func counters(xs []string) bool {
	return anyHas(xs, "about 3 independent counters") || anyHas(xs, "about 2 independent counters") && anyHas(xs, ": at least 2)")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func anyHas(xs []string, sub string) bool {
	for _, x := range xs {
		if strings.Contains(x, sub) {
			return true
		}
	}
	return false
}

func findCheck(cs []doc.Check, id string) *doc.Check {
	for i := range cs {
		if cs[i].ID == id {
			return &cs[i]
		}
	}
	return nil
}

// TestProbeExpectInModelTerms (issue 32 item 11): probe --expect states
// the model in its own terms (leaky-bucket:rate=5/s,burst=10), not only as
// the q=11 per 3s it is judged by.
func TestProbeExpectInModelTerms(t *testing.T) {
	t.Parallel()
	url, _ := startServe(t, limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")}, 0, "")
	tf := newTestFactory(t)
	tf.execute(t, "probe", url, "--expect", "leaky-bucket:rate=5/s,burst=10")
	if out := tf.Out.String(); !strings.Contains(out, "policy leaky-bucket:rate=5/s,burst=10 (") {
		t.Errorf("the card does not state the model as given:\n%s", out)
	}
	tf = newTestFactory(t)
	tf.execute(t, "probe", url, "--expect", "leaky-bucket:rate=5/s,burst=10", "-o", "json")
	var res probe.Result
	if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Policy.Model != "leaky-bucket:rate=5/s,burst=10" || res.Policy.Quota != 11 {
		t.Errorf("policy %+v, want the model as given and q=11", res.Policy)
	}
}
