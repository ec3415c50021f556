package cmd

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/serve"
)

// probeTarget is serve (a bucket of 10 at 5/s) on the harness's
// redis-server, broken with b.
func probeTarget(t *testing.T, b serve.Break) string {
	t.Helper()
	tg := redistest.Standalone(t)
	h, err := serve.New(serve.Config{
		Store: redislimit.NewStore(tg.Client), Params: limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")},
		KeyPrefix: "cmd-probe-" + uuid.NewString()[:8], RedisTimeout: 2 * time.Second, Break: b,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/hello"
}

// TestProbeCommand: plain serve is exit 0 with every check PASS; a broken
// one is exit 1 naming its check in text, JSON (--out) and JUnit alike.
func TestProbeCommand(t *testing.T) {
	t.Parallel()
	tf := newTestFactory(t)
	if code := tf.execute(t, "probe", probeTarget(t, "")); code != exitcode.OK {
		t.Fatalf("probe of plain serve = %d\n%s%s", code, tf.Out.String(), tf.ErrOut.String())
	}
	if out := tf.Out.String(); !strings.Contains(out, "verdict: PASS") || strings.Contains(out, "FAIL") {
		t.Errorf("probe of plain serve:\n%s", out)
	}

	url := probeTarget(t, serve.BreakRetryAfterZero)
	out := filepath.Join(t.TempDir(), "probe.json")
	tf = newTestFactory(t)
	if code := tf.execute(t, "probe", url, "-o", "junit", "--out", out); code != exitcode.Failed {
		t.Fatalf("probe of serve --break retry-after-zero = %d, want %d\n%s", code, exitcode.Failed, tf.ErrOut.String())
	}
	if j := tf.Out.String(); !strings.Contains(j, `failures="1"`) || !strings.Contains(j, `<failure message="1`) && !strings.Contains(j, "retry-after") {
		t.Errorf("junit:\n%s", j)
	}
	// Retry-After: 0 is valid syntax; the retry at once is refused
	if e := tf.ErrOut.String(); !strings.Contains(e, "retry-after-honest:") || strings.Count(e, "error:") != 1 {
		t.Errorf("stderr %q, want one error line naming retry-after-honest", e)
	}
	tf2 := newTestFactory(t)
	if code := tf2.execute(t, "report", out, "-o", "json"); code != exitcode.OK {
		t.Fatalf("report of the probe document = %d: %s", code, tf2.ErrOut.String())
	}
	var doc struct {
		Kind    string `json:"kind"`
		Verdict string `json:"verdict"`
		Checks  []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(tf2.Out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, c := range doc.Checks {
		if c.Status == "fail" {
			failed = append(failed, c.ID)
		}
	}
	if doc.Kind != "probe" || doc.Verdict != "fail" || strings.Join(failed, ",") != "retry-after-honest" {
		t.Errorf("document kind %q verdict %q failed %v, want probe, fail, [retry-after-honest]", doc.Kind, doc.Verdict, failed)
	}
}

func TestProbeBadInput(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"probe"}, exitcode.Usage, "give the URL"},
		{[]string{"probe", "127.0.0.1:8011/hello"}, exitcode.Usage, "want http://"},
		{[]string{"probe", "http://127.0.0.1:1/", "--skip", "nope"}, exitcode.Usage, "unknown check"},
		{[]string{"probe", "http://127.0.0.1:1/", "--expect", "auto"}, exitcode.Usage, "give a model"},
		{[]string{"probe", "http://127.0.0.1:1/", "--expect", "token-bucket:burst=0,rate=1/s"}, exitcode.Usage, ""},
		{[]string{"probe", "http://127.0.0.1:1/", "-o", "html"}, exitcode.Usage, "not supported"},
		{[]string{"probe", "http://u:S3cr3tPW@127.0.0.1:1/", "--timeout", "1s"}, exitcode.Unreachable, "could not be reached"},
	} {
		tf := newTestFactory(t)
		code := tf.execute(t, tt.args...)
		e := tf.ErrOut.String()
		if code != tt.code || !strings.Contains(e, tt.want) || strings.Contains(e, "S3cr3tPW") {
			t.Errorf("ratelimit %q = %d %q, want %d mentioning %q", tt.args, code, e, tt.code, tt.want)
		}
	}
}
