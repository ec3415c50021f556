package cmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/schematest"
	"github.com/ratelimit-dev/ratelimit/serve"
	"github.com/ratelimit-dev/ratelimit/suite"
)

// initEntry runs `ratelimit init URL --file FILE args...` and returns
// the file it wrote.
//
// The fingerprint's document (--fingerprint-out) must fit its schema;
// when init fails, the test prints its requests, so a model the search
// missed on a busy machine can be replayed (probe/replay_test.go).
func initEntry(t *testing.T, file, url string, args ...string) string {
	t.Helper()
	tf := newTestFactory(t)
	fpFile := filepath.Join(t.TempDir(), "fingerprint.json")
	if code := tf.execute(t, append([]string{"init", url, "--file", file, "--fingerprint-out", fpFile}, args...)...); code != exitcode.OK {
		if b, err := os.ReadFile(fpFile); err == nil {
			t.Logf("the fingerprint's document:\n%s", b)
		}
		t.Fatalf("init %s: exit %d\n%s%s", url, code, tf.Out.String(), tf.ErrOut.String())
	}
	if b, err := os.ReadFile(fpFile); slices.Contains(args, "--expect") {
		// no fingerprint ran
	} else if err != nil {
		t.Errorf("init --fingerprint-out wrote nothing: %v", err)
	} else {
		schematest.Validate(t, "init --fingerprint-out", b)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// commented reports whether every line of the entries in text that holds
// a value (or opens a section) carries a comment saying where it came
// from.
func commented(t *testing.T, text string) {
	t.Helper()
	in := false
	for l := range strings.Lines(text) {
		l = strings.TrimRight(l, "\n")
		if strings.HasPrefix(l, "entries:") {
			in = true
			continue
		}
		if !in || strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if !strings.Contains(l, "  # ") {
			t.Errorf("line without a comment saying where its value came from: %q", l)
		}
	}
}

// TestInitThenCheck: init against each of the three targets
// writes an entry into one file (created by the first, added to after)
// with the model its fingerprint found, a comment on every line; check
// then passes the whole file. nginx sends neither Retry-After nor
// RateLimit headers, defects by probe's rules, so its entry is written
// with --accept-current (warnings, commented with what was found).
func TestInitThenCheck(t *testing.T) {
	t.Parallel()
	bucket, _ := startServe(t, checkBucket, 0, "")
	window, _ := startServe(t, checkWindow, 0, "")
	nginx := limtest.Nginx(t, checkNginx)
	file := filepath.Join(t.TempDir(), "ratelimit.yaml")

	text := initEntry(t, file, bucket)
	if !strings.Contains(text, "expect: token-bucket:burst=10,rate=5/s") || !strings.Contains(text, "name: hello ") {
		t.Fatalf("init against serve's token bucket wrote:\n%s", text)
	}
	text = initEntry(t, file, window, "--name", "window")
	if !strings.Contains(text, "expect: sliding-window:limit=10,window=2s") {
		t.Fatalf("init against serve's sliding window wrote:\n%s", text)
	}
	text = initEntry(t, file, nginx+"/", "--name", "nginx", "--accept-current")
	// a token bucket of 10 at 5/s, GCRA and nginx's leaky bucket of burst
	// 9 admit alike: the fingerprint names the first and says so
	equivalent := false
	for _, m := range []string{"token-bucket:burst=10,rate=5/s", "gcra:rate=5/s,burst=10", "leaky-bucket:rate=5/s,burst=9"} {
		equivalent = equivalent || strings.Contains(text, "expect: "+m+"  ")
	}
	if !equivalent || !strings.Contains(text, "warn_only: [") || !strings.Contains(text, "headers: warn") {
		t.Fatalf("init --accept-current against nginx wrote:\n%s", text)
	}
	commented(t, text)
	f, err := suite.Parse(file, []byte(text), suiteVocabulary())
	if err != nil || len(f.Entries) != 3 {
		t.Fatalf("the file init wrote: %v, %d entries\n%s", err, len(f.Entries), text)
	}
	code, res, tf := checkJSON(t, file)
	if code != exitcode.OK {
		t.Fatalf("check of the file init wrote: exit %d\n%s\n%s\n%s", code, strings.Join(res.Failed(), "\n"), tf.ErrOut.String(), text)
	}
}

// TestInitAcceptCurrent: against serve --break retry-after-zero init
// writes an entry that check fails (exit 1, retry-after-honest named),
// and says so; with --accept-current the entry check passes, the check
// a warning commented with what the probe found.
func TestInitAcceptCurrent(t *testing.T) {
	t.Parallel()
	broken, _ := startServe(t, checkBucket, 0, serve.BreakRetryAfterZero)
	dir := t.TempDir()
	file := filepath.Join(dir, "ratelimit.yaml")
	tf := newTestFactory(t)
	if code := tf.execute(t, "init", broken, "--file", file); code != exitcode.OK || !strings.Contains(tf.ErrOut.String(), "--accept-current") {
		t.Fatalf("init of a defect: exit %d\n%s", code, tf.ErrOut.String())
	}
	code, res, tf := checkJSON(t, file)
	if code != exitcode.Failed || res.Entries[0].Passed || !strings.Contains(res.Checks[0].Message, "retry-after-honest") {
		t.Fatalf("check of the entry init wrote for a defect: exit %d, %s\n%s", code, res.Checks[0].Message, tf.ErrOut.String())
	}

	file = filepath.Join(dir, "accepted.yaml")
	text := initEntry(t, file, broken, "--accept-current", "--workflow", "github")
	if !strings.Contains(text, "retry-after-honest") || !strings.Contains(text, "# --accept-current: failed when init probed it: retry-after-honest:") {
		t.Fatalf("init --accept-current wrote:\n%s", text)
	}
	commented(t, text)
	code, res, tf = checkJSON(t, file)
	if code != exitcode.OK {
		t.Fatalf("check after --accept-current: exit %d, %v\n%s", code, res.Failed(), tf.ErrOut.String())
	}
	wf, err := os.ReadFile(filepath.Join(dir, ".github", "workflows", "ratelimit.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(wf), "uses: ratelimit-dev/ratelimit@") || !strings.Contains(string(wf), "command: check accepted.yaml") {
		t.Errorf("workflow:\n%s", wf)
	}
	// never overwritten
	tf = newTestFactory(t)
	if code := tf.execute(t, "init", broken, "--file", file, "--workflow", "github"); code != exitcode.Usage {
		t.Errorf("init --workflow over an existing workflow: exit %d, want 2", code)
	}
}

// TestInitRefuses: a URL with a password, a literal credential header,
// an unknown --workflow and a malformed existing file are exit 2 before
// any request, and nothing is written.
func TestInitRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nentries:\n  - name: a\n    urll: http://127.0.0.1:1/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"http://ops:hunter2@127.0.0.1:1/x"}, "holds a password"},
		{[]string{"http://127.0.0.1:1/x", "-H", "Authorization: Bearer hunter2"}, "Authorization carries a credential"},
		{[]string{"http://127.0.0.1:1/x", "-H", "Authorization: Bearer ${RL_INIT_UNSET}"}, "${RL_INIT_UNSET} is not set"},
		{[]string{"http://127.0.0.1:1/x", "--workflow", "gitlab"}, "--workflow gitlab"},
		{[]string{"http://127.0.0.1:1/x", "--fingerprint-out", dir}, "--fingerprint-out " + dir + " is not a regular file"},
		{[]string{"http://127.0.0.1:1/x", "--file", bad}, "bad.yaml:4: entries[0].urll: unknown field"},
	} {
		tf := newTestFactory(t)
		args := append([]string{"init"}, tt.args...)
		if !strings.Contains(strings.Join(tt.args, " "), "--file") {
			args = append(args, "--file", filepath.Join(dir, "new.yaml"))
		}
		code := tf.execute(t, args...)
		if e := tf.ErrOut.String(); code != exitcode.Usage || !strings.Contains(e, tt.want) || strings.Contains(e, "hunter2") {
			t.Errorf("init %v: exit %d %q; want 2 with %q", tt.args, code, e, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.yaml")); err == nil {
		t.Error("a refused init wrote the file")
	}
}
