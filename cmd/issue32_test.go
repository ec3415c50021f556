package cmd

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/serve"
)

// TestLimitedStatusSameEverywhere (issue 32): --limited-status is read
// alike by load and report --from as by probe: a status that is not 4xx
// or 5xx (999, 100, 1xx, 200, 302) is bad input, exit 2, in one line.
func TestLimitedStatusSameEverywhere(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "k6.json")
	if err := os.WriteFile(rec, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"999", "100", "1xx", "200", "302", "503,600"} {
		for _, args := range [][]string{
			{"load", "--target", "http://127.0.0.1:1/", "--rate", "1/s", "--duration", "1s", "--limited-status", bad},
			{"report", "--from", "k6", rec, "--limited-status", bad},
			{"probe", "http://127.0.0.1:1/", "--limited-status", bad},
		} {
			tf := newTestFactory(t)
			if code := tf.execute(t, args...); code != exitcode.Usage {
				t.Errorf("ratelimit %s = %d, want %d\n%s", strings.Join(args, " "), code, exitcode.Usage, tf.ErrOut.String())
				continue
			}
			if e := tf.ErrOut.String(); !strings.Contains(e, "a refusal is a 4xx or 5xx status") || strings.Count(strings.TrimSpace(e), "\n") > 0 {
				t.Errorf("ratelimit %s: stderr %q, want one line saying a refusal is a 4xx or 5xx status", strings.Join(args, " "), e)
			}
		}
	}
}

// TestDeclaredRefusalNeverFailed (issue 32): load --limited-status 503
// against serve --break status-503 counts the 503s as refusals and not as
// failures, without --expect-status 200,503.
func TestDeclaredRefusalNeverFailed(t *testing.T) {
	t.Parallel()
	target := probeTarget(t, serve.BreakStatus503)
	tf := newTestFactory(t)
	code := tf.execute(t, "load", "--target", target, "--rate", "20/s", "--duration", "2s", "--limited-status", "503",
		"--expect", "token-bucket:burst=10,rate=5/s", "--headers", "off", "-o", "json")
	var d struct {
		Refused int64            `json:"refused"`
		Failed  int64            `json:"failed"`
		Status  map[string]int64 `json:"status"`
	}
	if err := json.Unmarshal(tf.Out.Bytes(), &d); err != nil {
		t.Fatalf("load = %d: %v\n%s%s", code, err, tf.Out.String(), tf.ErrOut.String())
	}
	if d.Status["503"] == 0 || d.Refused != d.Status["503"] || d.Failed != 0 {
		t.Errorf("503s %d, refused %d, failed %d; want every 503 refused and none failed", d.Status["503"], d.Refused, d.Failed)
	}
	if code != exitcode.OK {
		t.Errorf("load = %d, want 0\n%s", code, tf.ErrOut.String())
	}
}

// TestExpectAutoWithoutPolicy (issue 32): load --expect auto against a
// target that advertises no policy was exit 1, the code of a count the
// limiter got wrong; it is exit 2 (nothing to read), naming probe
// --fingerprint. Without --expect, the skipped expect check points there
// too.
func TestExpectAutoWithoutPolicy(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(ts.Close)
	tf := newTestFactory(t)
	code := tf.execute(t, "load", "--target", ts.URL+"/x", "--rate", "10/s", "--duration", "1s", "--expect", "auto")
	if e := tf.ErrOut.String(); code != exitcode.Usage || !strings.Contains(e, "probe --fingerprint") {
		t.Errorf("load --expect auto without a policy = %d, want %d naming probe --fingerprint\n%s", code, exitcode.Usage, e)
	}
	tf = newTestFactory(t)
	code = tf.execute(t, "load", "--target", ts.URL+"/x", "--rate", "10/s", "--duration", "1s")
	// nothing refused either: undecided (exit 1), still pointing there
	if out := tf.Out.String(); code != exitcode.Failed || !strings.Contains(out, "probe --fingerprint") || !strings.Contains(out, "UNDECIDED") {
		t.Errorf("load without --expect nor a policy = %d, want 1 (undecided) and a pointer to probe --fingerprint\n%s%s", code, out, tf.ErrOut.String())
	}
}

// TestReportHTMLHeadlineAndGate (issue 32): report --html FILE printed only
// "wrote FILE"; it prints the headline verdict too. report exited 0 on a
// failed document; --exit-code makes it exit 1, as CI needs, and report
// --help says so and points to docs/load.md, where the k6 and vegeta
// section moved.
func TestReportHTMLHeadlineAndGate(t *testing.T) {
	dir := t.TempDir()
	pass, fail := filepath.Join("..", "report", "testdata", "failover.json"), filepath.Join("..", "report", "testdata", "failover_fail.json")
	page := filepath.Join(dir, "report.html")
	tf := newTestFactory(t)
	if code := tf.execute(t, "report", pass, fail, "--html", page); code != exitcode.OK {
		t.Fatalf("report --html = %d\n%s", code, tf.ErrOut.String())
	}
	if e := tf.ErrOut.String(); !strings.Contains(e, "verdict FAIL: 1 of 2 failed") || !strings.Contains(e, "failover_fail.json") {
		t.Errorf("report --html stderr %q, want the headline verdict naming the failed document", e)
	}
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"report", pass, fail, "--exit-code"}, exitcode.Failed},
		{[]string{"report", pass, fail, "--html", page, "--exit-code"}, exitcode.Failed},
		{[]string{"report", pass, "--exit-code"}, exitcode.OK},
		{[]string{"report", pass, fail}, exitcode.OK},
	} {
		tf := newTestFactory(t)
		if code := tf.execute(t, tt.args...); code != tt.code {
			t.Errorf("ratelimit %s = %d, want %d\n%s", strings.Join(tt.args, " "), code, tt.code, tf.ErrOut.String())
		}
	}
	tf = newTestFactory(t)
	tf.execute(t, "report", "--help")
	help := tf.Out.String()
	if !strings.Contains(help, "--exit-code") || !strings.Contains(help, "in CI") || !strings.Contains(help, "docs/load.md") || strings.Contains(help, "(README:") {
		t.Errorf("report --help does not name --exit-code for CI and docs/load.md:\n%s", help)
	}
}

// TestLoadHelpListsEveryModelParameter (issue 32): load --help did not
// list align=, offset=, count-refused=, round= or delay=, while the README
// says it lists every model parameter. The list is generated from the
// limiter registry: every algorithm, parameter and option of it appears.
func TestLoadHelpListsEveryModelParameter(t *testing.T) {
	tf := newTestFactory(t)
	tf.execute(t, "load", "--help")
	help := tf.Out.String()
	for _, a := range limiter.Algos() {
		e := limiter.Lookup(a)
		if !strings.Contains(help, "  "+string(a)+":") {
			t.Errorf("load --help does not list the model %s", a)
		}
		for _, p := range e.Params {
			if !strings.Contains(help, p.Key+"=") {
				t.Errorf("load --help does not list %s's parameter %s=", a, p.Key)
			}
		}
		for _, o := range e.Options {
			if !strings.Contains(help, "      "+o.Key+"=") {
				t.Errorf("load --help does not list %s's option %s=", a, o.Key)
			}
		}
	}
}

// TestNoticesOnce (issue 32): the embedded server's caveat ("results show
// the scripts' logic, not a real server's behaviour") was printed on
// stderr and again in the report's server line; it is said once. A failed
// verdict's one stderr line no longer ends ": check failed" after the
// verdict's own words (the exit code says it).
func TestNoticesOnce(t *testing.T) {
	tf := newTestFactory(t)
	if code := tf.execute(t, "eval", "k", "--capacity", "5", "--rate", "1/s"); code != exitcode.OK {
		t.Fatalf("eval on the embedded server = %d\n%s", code, tf.ErrOut.String())
	}
	all := tf.Out.String() + tf.ErrOut.String()
	if n := strings.Count(all, "not a real server's behaviour"); n != 1 || !strings.Contains(tf.ErrOut.String(), "embedded") {
		t.Errorf("the embedded caveat appears %d times, want once (and a notice on stderr):\n%s", n, all)
	}
	tf = newTestFactory(t)
	if code := tf.execute(t, "keyslot", "--same-slot", "rl:user:42:minute", "rl:user:42:day"); code != exitcode.Failed {
		t.Fatalf("keyslot of two slots = %d", code)
	}
	if e := strings.TrimSpace(tf.ErrOut.String()); strings.Count(e, "\n") != 0 || strings.HasSuffix(e, "check failed") || !strings.Contains(e, "CROSSSLOT") {
		t.Errorf("stderr %q, want one line naming the failure without \": check failed\"", e)
	}
}

// TestReadmeJourneysSayWhatTheyWrite (issue 32): the recording journey
// needs vegeta and gave no install line; the journeys leave files in the
// clone without saying so. Every file or directory a recipe writes (a
// redirection, --export, --html) is named in the Journeys section, and the
// recipe that runs vegeta says how to install it.
func TestReadmeJourneysSayWhatTheyWrite(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start, end := strings.Index(text, "## Journeys"), strings.Index(text, "## Contents")
	if start < 0 || end < start {
		t.Fatal("README has no Journeys section before Contents")
	}
	journeys := text[start:end]
	var prose strings.Builder
	for _, block := range strings.Split(journeys, "```") {
		if !strings.HasPrefix(block, "sh\n") {
			prose.WriteString(block)
		}
	}
	written := regexp.MustCompile(`(?:>|--export|--html)\s+([A-Za-z0-9_./-]+)`)
	n := 0
	for _, r := range readmeRecipes(t, filepath.Join("..", "README.md")) {
		for _, line := range r.lines {
			for _, m := range written.FindAllStringSubmatch(line, -1) {
				if m[1] == "&1" || strings.HasPrefix(m[1], "/dev/") {
					continue
				}
				n++
				if !strings.Contains(prose.String(), "`"+m[1]+"`") && !strings.Contains(prose.String(), "`"+m[1]+"/`") {
					t.Errorf("recipe %s writes %s, which the Journeys text does not name", r.name, m[1])
				}
			}
			if strings.Contains(line, "vegeta attack") && !regexp.MustCompile(`go install github\.com/tsenart/vegeta/v12@v\d+\.\d+\.\d+`).MatchString(prose.String()) {
				t.Errorf("recipe %s runs vegeta without an install line", r.name)
			}
		}
	}
	if n < 4 {
		t.Errorf("found %d written files in the recipes, want at least 4 (lua, keyslot.xml, results.bin, report.html)", n)
	}
}

// TestConnectionFlagsOnlyWhereUsed (issue 32): probe, load and report
// accepted --redis and --tls-*, which they never use (probe --redis
// embedded URL ran without a word); sandbox's --cluster (start a cluster)
// shared its name with the global --cluster (force a cluster client). The
// commands that connect to no Redis do not offer the connection flags (a
// one-line exit 2 naming the flag), their help does not list them, and
// sandbox starts a cluster with --topology cluster; its old --cluster
// still does, with a notice, so no script breaks silently.
func TestConnectionFlagsOnlyWhereUsed(t *testing.T) {
	for _, args := range [][]string{
		{"load", "--target", "http://127.0.0.1:1/", "--rate", "1/s", "--duration", "1s"},
		{"report", filepath.Join("..", "report", "testdata", "failover.json")},
		{"probe", "http://127.0.0.1:1/"},
		{"merge", filepath.Join("..", "report", "testdata", "load.json")},
		{"scripts"},
		{"sandbox", "--for", "1ms"},
	} {
		for _, flag := range [][]string{{"--redis", "embedded"}, {"--tls-ca", "ca.pem"}, {"--tls-skip-verify"}, {"--redis-timeout", "1s"}, {"--cluster=false"}} {
			if args[0] == "sandbox" && strings.HasPrefix(flag[0], "--cluster") {
				continue // sandbox's own, deprecated --cluster
			}
			tf := newTestFactory(t)
			full := append(append([]string{}, args...), flag...)
			code := tf.execute(t, full...)
			name := strings.SplitN(strings.TrimPrefix(flag[0], "--"), "=", 2)[0]
			if e := tf.ErrOut.String(); code != exitcode.Usage || strings.Count(e, "\n") != 1 || !strings.Contains(e, "--"+name) || !strings.Contains(e, "drop") {
				t.Errorf("ratelimit %s = %d, stderr %q; want exit 2 in one line saying to drop --%s", strings.Join(full, " "), code, e, name)
			}
		}
		tf := newTestFactory(t)
		tf.execute(t, args[0], "--help")
		h := tf.Out.String()
		if i := strings.Index(h, "\nFlags:"); i >= 0 {
			h = h[i:] // the flags the command offers, not its prose
		}
		if strings.Contains(h, "--redis ") || strings.Contains(h, "--tls-ca") || strings.Contains(h, "--redis-timeout") {
			t.Errorf("%s --help offers the connection flags:\n%s", args[0], h)
		}
	}
	for _, c := range redisCommands {
		tf := newTestFactory(t)
		tf.execute(t, c, "--help")
		if h := tf.Out.String(); !strings.Contains(h, "--redis ") || !strings.Contains(h, "--tls-ca") || !strings.Contains(h, "--cluster") {
			t.Errorf("%s --help does not offer the connection flags:\n%s", c, h)
		}
	}
	for _, tt := range []struct {
		args    []string
		cluster bool
		notice  bool
		code    int
	}{
		{nil, false, false, exitcode.OK},
		{[]string{"--topology", "cluster"}, true, false, exitcode.OK},
		{[]string{"--cluster"}, true, true, exitcode.OK},
		{[]string{"--topology", "standalone", "--cluster"}, false, true, exitcode.Usage},
		{[]string{"--topology", "ring"}, false, false, exitcode.Usage},
	} {
		tf := newTestFactory(t)
		var got *sandboxOptions
		c := newSandboxCmd(tf.Factory, func(o *sandboxOptions) error { got = o; return nil })
		c.SetArgs(tt.args)
		c.SetOut(tf.Out)
		c.SetErr(tf.ErrOut)
		err := c.Execute()
		if code := exitcode.Code(err); code != tt.code || code == exitcode.OK && (got == nil || got.Cluster != tt.cluster) {
			t.Errorf("sandbox %v: exit %d (%v), options %+v; want exit %d, cluster %v", tt.args, code, err, got, tt.code, tt.cluster)
		}
		if n := strings.Contains(tf.ErrOut.String(), "--topology cluster"); n != tt.notice && tt.code == exitcode.OK {
			t.Errorf("sandbox %v: notice %v, want %v: %q", tt.args, n, tt.notice, tf.ErrOut.String())
		}
	}
}
