package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/serve"
	"github.com/ratelimit-dev/ratelimit/suite"
)

// The three targets of the issue: serve's token bucket and sliding
// window (10 per 2s) on the harness's redis-server, and Debian's nginx
// limit_req (5r/s, burst 9, nodelay, keyed by X-API-Key, 429), which
// sends neither Retry-After nor RateLimit headers.
var (
	checkBucket = limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")}
	checkWindow = limiter.Params{Algo: limiter.SlidingWindow, Limit: 10, Window: 2 * time.Second}
	checkNginx  = limtest.NginxLimit{Rate: "5r/s", Burst: 9, NoDelay: true, Key: "$http_x_api_key", Status: 429}
)

// writeSuite writes a test file into a temporary directory.
func writeSuite(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ratelimit.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkJSON runs `ratelimit check -o json` with args and decodes the
// suite document (validated against docs/schema/suite.json by execute).
func checkJSON(t *testing.T, args ...string) (int, suite.Result, *testFactory) {
	t.Helper()
	tf := newTestFactory(t)
	code := tf.execute(t, append([]string{"check", "-o", "json"}, args...)...)
	var res suite.Result
	if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
		t.Fatalf("exit %d, stdout is not a suite document: %v\n%s\n%s", code, err, tf.Out.String(), tf.ErrOut.String())
	}
	return code, res, tf
}

// threeEntries is the file: serve's token bucket, serve's sliding
// window and nginx, each with its model; nginx's defects by probe's
// rules (no Retry-After, no RateLimit headers, requests without the
// X-API-Key its zone is keyed by never limited) are accepted as warnings
// (probe warn_only, load headers: warn).
func threeEntries(bucket, window, nginx string) string {
	return fmt.Sprintf(`version: 1
defaults:
  rate: 20/s
  duration: 3s
entries:
  - name: bucket
    url: %s
    expect: token-bucket:burst=10,rate=5/s
  - name: window
    url: %s
    expect: sliding-window:limit=10,window=2s
  - name: nginx
    url: %s
    expect: leaky-bucket:rate=5/s,burst=9
    probe:
      warn_only: [retry-after, ratelimit-headers, identity-isolation]
    load:
      headers: warn
`, bucket, window, nginx)
}

// TestCheckThreeEntries: the file passes (exit 0, every entry
// and both steps of each PASS, one JUnit suite per entry); the same file
// with the sliding window's serve broken (--break over-admit) fails that
// entry alone, exit 1, in JSON, text and JUnit alike.
func TestCheckThreeEntries(t *testing.T) {
	t.Parallel()
	bucket, _ := startServe(t, checkBucket, 0, "")
	window, _ := startServe(t, checkWindow, 0, "")
	broken, _ := startServe(t, checkWindow, 0, serve.BreakOverAdmit)
	nginx := limtest.Nginx(t, checkNginx)
	file := writeSuite(t, threeEntries(bucket, window, nginx))

	code, res, tf := checkJSON(t, file)
	if code != exitcode.OK || res.Verdict != doc.VerdictPass || len(res.Entries) != 3 {
		t.Fatalf("check of three good targets: exit %d, verdict %s\n%s\n%s", code, res.Verdict, strings.Join(res.Failed(), "\n"), tf.ErrOut.String())
	}
	for _, e := range res.Entries {
		if !e.Passed || len(e.Steps) != 2 || e.Steps[0].Verdict != doc.VerdictPass || e.Steps[1].Verdict != doc.VerdictPass {
			t.Errorf("entry %s: passed %v, steps %+v", e.Name, e.Passed, e.Steps)
		}
	}

	file = writeSuite(t, threeEntries(bucket, broken, nginx))
	tf = newTestFactory(t)
	out := filepath.Join(t.TempDir(), "suite.json")
	code = tf.execute(t, "check", file, "--out", out)
	if code != exitcode.Failed {
		t.Fatalf("check with the window broken: exit %d, want 1\n%s%s", code, tf.Out.String(), tf.ErrOut.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Entries {
		if e.Passed != (e.Name != "window") {
			t.Errorf("entry %s passed %v; only window (over-admit) should fail\n%s", e.Name, e.Passed, e.Summary())
		}
	}
	if text := tf.Out.String(); !strings.Contains(text, "verdict: FAIL  1 of 3 entries did not pass: window") {
		t.Errorf("text does not name the failed entry:\n%s", text)
	}
	if e := tf.ErrOut.String(); strings.Count(e, "error:") != 1 || !strings.Contains(e, "window:") || strings.Contains(e, "bucket:") {
		t.Errorf("stderr %q: want one error line naming window only", e)
	}
	tf = newTestFactory(t)
	if code := tf.execute(t, "report", out, "-o", "junit"); code != exitcode.OK {
		t.Fatalf("report -o junit of the suite document: exit %d %s", code, tf.ErrOut.String())
	}
	j := tf.Out.String()
	if strings.Count(j, "<testsuite ") != 3 || !strings.Contains(j, `name="ratelimit check: window" tests="`) {
		t.Errorf("junit: want three testsuites, one per entry:\n%s", j)
	}
}

// TestCheckMalformed: a file with an unknown field, a bad model, a URL
// with a password, a literal credential, a check probe does not have or
// an unset ${VAR} is refused before any request: exit 2, one error line
// naming the line and the field.
func TestCheckMalformed(t *testing.T) {
	t.Parallel()
	head := "version: 1\ndefaults:\n  rate: 20/s\nentries:\n  - name: a\n"
	tests := []struct {
		name, body, want string
	}{
		{"unknown field", "    url: http://127.0.0.1:1/x\n    expcet: token-bucket:burst=10,rate=5/s\n", "ratelimit.yaml:7: entries[0].expcet: unknown field"},
		{"bad model", "    url: http://127.0.0.1:1/x\n    expect: token-bucket:burst=10,rate=fast\n", "ratelimit.yaml:7: entries[0].expect:"},
		{"unknown model", "    url: http://127.0.0.1:1/x\n    expect: bogus:rate=5/s\n", `ratelimit.yaml:7: entries[0].expect: "bogus:rate=5/s": unknown model`},
		{"password in the URL", "    url: http://ops:hunter2@127.0.0.1:1/x\n", "ratelimit.yaml:6: entries[0].url: http://ops:xxxxx@127.0.0.1:1/x holds a password"},
		{"credential in the query", "    url: http://127.0.0.1:1/x?api_key=abc123\n", "ratelimit.yaml:6: entries[0].url:"},
		{"literal token", "    url: http://127.0.0.1:1/x\n    headers:\n      Authorization: Bearer abc123\n", "ratelimit.yaml:8: entries[0].headers.Authorization: Authorization carries a credential"},
		{"unknown check", "    url: http://127.0.0.1:1/x\n    probe:\n      skip: [retry-afterr]\n", `ratelimit.yaml:8: entries[0].probe.skip: "retry-afterr" is not a probe check`},
		{"bad rate", "    url: http://127.0.0.1:1/x\n    load:\n      rate: fast\n", `ratelimit.yaml:8: entries[0].load.rate: "fast"`},
		{"unset variable", "    url: http://127.0.0.1:1/x\n    headers:\n      Authorization: Bearer ${RL_TEST_UNSET_TOKEN}\n", "ratelimit.yaml:8: headers.Authorization: ${RL_TEST_UNSET_TOKEN} is not set"},
		{"not YAML", "    url: [http://127.0.0.1:1/x\n", "ratelimit.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeSuite(t, head+tt.body)
			tf := newTestFactory(t)
			code := tf.execute(t, "check", file)
			e := tf.ErrOut.String()
			if code != exitcode.Usage || !strings.Contains(e, tt.want) || strings.Count(e, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, e, tt.want)
			}
			if strings.Contains(e, "hunter2") || strings.Contains(e, "abc123") {
				t.Errorf("the credential is printed: %q", e)
			}
		})
	}
	tf := newTestFactory(t)
	if code := tf.execute(t, "check", filepath.Join(t.TempDir(), "missing.yaml")); code != exitcode.Usage || !strings.Contains(tf.ErrOut.String(), "ratelimit init URL") {
		t.Errorf("a missing file: exit %d %q", code, tf.ErrOut.String())
	}
	tf = newTestFactory(t)
	file := writeSuite(t, head+"    url: http://127.0.0.1:1/x\n")
	if code := tf.execute(t, "check", file, "--only", "b"); code != exitcode.Usage || !strings.Contains(tf.ErrOut.String(), "--only b") {
		t.Errorf("--only of a name the file lacks: exit %d %q", code, tf.ErrOut.String())
	}
}

// TestCheckUnreachableAndOnly: an entry whose target refuses connections
// is an error (its load skipped), the other entries still run; --only
// runs the named one alone; exit 3 when nothing failed a check but a
// target was unreachable, and the credential of ${VAR} never shows.
func TestCheckUnreachableAndOnly(t *testing.T) {
	t.Parallel()
	bucket, _ := startServe(t, checkBucket, 0, "")
	file := writeSuite(t, fmt.Sprintf(`version: 1
defaults: {rate: 20/s, duration: 2s}
entries:
  - name: down
    url: http://127.0.0.1:1/hello
    headers:
      Authorization: Bearer ${RL_TOKEN}
  - name: up
    url: %s
    expect: token-bucket:burst=10,rate=5/s
    headers:
      Authorization: Bearer ${RL_TOKEN}
    probe: {run: false}
`, bucket))
	tf := newTestFactory(t)
	tf.Env["RL_TOKEN"] = "s3cr3t-token"
	code := tf.execute(t, "check", file, "-o", "json")
	var res suite.Result
	if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if code != exitcode.Unreachable || len(res.Entries) != 2 || res.Entries[0].Steps[0].Verdict != suite.VerdictError ||
		res.Entries[0].Steps[1].Verdict != suite.VerdictSkipped || !res.Entries[1].Passed || len(res.Entries[1].Steps) != 1 {
		t.Fatalf("exit %d, entries %+v\n%s", code, res.Entries, tf.ErrOut.String())
	}
	if strings.Contains(tf.Out.String()+tf.ErrOut.String(), "s3cr3t-token") {
		t.Error("the token from the environment is in the output")
	}
	tf = newTestFactory(t)
	tf.Env["RL_TOKEN"] = "s3cr3t-token"
	code = tf.execute(t, "check", file, "--only", "up")
	if code != exitcode.OK || strings.Contains(tf.Out.String(), "127.0.0.1:1/") {
		t.Errorf("--only up: exit %d\n%s", code, tf.Out.String())
	}
}
