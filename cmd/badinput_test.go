package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestBadInputs runs the bad inputs of the safety review through the whole
// command tree: each ends within its budget (no hang), with its documented
// exit code, one "error:" line on stderr (no panic, no stack trace) and no
// password anywhere in the output.
func TestBadInputs(t *testing.T) {
	const pw = "S3cr3tPW"
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	empty := writeFile(t, "empty.lua", "")
	one := writeFile(t, "one.lua", "return {1, 0}")
	dupKeys := writeFile(t, "dup.json", `{"kind":"race","kind":"load","version":1}`)
	closed := "127.0.0.1:1"

	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		want string // in stderr, when not empty
	}{
		// Redis URLs: no host, no scheme, passwords in malformed URLs
		{"empty host", []string{"eval", "--redis", "redis://", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "host"},
		{"empty host and port", []string{"eval", "--redis", "redis://:", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "host"},
		{"db only", []string{"eval", "--redis", "redis:///0", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "host"},
		{"opaque", []string{"eval", "--redis", "redis:x", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, ""},
		{"no scheme with password", []string{"eval", "--redis", "ops:" + pw + "@" + closed, "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, ""},
		{"no scheme in REDIS_URL", []string{"eval", "k", "--capacity", "5", "--rate", "1/s"}, map[string]string{"REDIS_URL": "ops:" + pw + "@" + closed}, exitcode.Usage, ""},
		{"one slash", []string{"eval", "--redis", "redis:/:" + pw + "@" + closed, "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, ""},
		{"keyslot json addr", []string{"keyslot", "--redis", "redis:" + pw + "@" + closed, "-o", "json", "k"}, nil, exitcode.Usage, ""},
		{"refused with password", []string{"eval", "--redis", "redis://u:" + pw + "@" + closed, "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Unreachable, ""},
		{"port 99999", []string{"eval", "--redis", "redis://127.0.0.1:99999", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, ""},
		{"negative timeout", []string{"eval", "--redis-timeout", "-1s", "--redis", "embedded", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, ""},
		// URLs the parser or go-redis refuses (issue 26): no query value,
		// unknown option name or userinfo in the error
		{"pwd query option", []string{"eval", "--redis", "redis://" + closed + "/0?pwd=" + pw, "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "not a go-redis option"},
		{"secret as option name", []string{"eval", "--redis", "redis://" + closed + "/0?" + pw + "=1", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "not a go-redis option"},
		{"secret as option name in REDIS_URL", []string{"eval", "k", "--capacity", "5", "--rate", "1/s"}, map[string]string{"REDIS_URL": "redis://" + closed + "/0?db=0&" + pw + "=1"}, exitcode.Usage, "REDIS_URL"},
		{"password with a space", []string{"eval", "--redis", "redis://u:" + pw + " AB@" + closed, "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "redis://xxxxx@"},
		{"password with a quote", []string{"eval", "--redis", "redis://u:" + pw + `"AB@` + closed, "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "redis://xxxxx@"},
		{"password with a <", []string{"eval", "--redis", "redis://u:" + pw + "<AB@" + closed, "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "redis://xxxxx@"},
		{"password with a backtick", []string{"keyslot", "--redis", "redis://u:" + pw + "`AB@" + closed, "k"}, nil, exitcode.Usage, "redis://xxxxx@"},
		{"fault-redis password with a space", []string{"load", "--target", "http://" + closed + "/", "--rate", "1/s", "--duration", "3s", "--fault", "pause:1s@1s", "--fault-redis", "redis://u:" + pw + " AB@" + closed}, nil, exitcode.Usage, ""},
		{"load target password with a space", []string{"load", "--target", "http://u:" + pw + " AB@" + closed + "/", "--rate", "1/s", "--duration", "1s"}, nil, exitcode.Usage, ""},
		{"probe target password with a space", []string{"probe", "http://u:" + pw + " AB@" + closed + "/"}, nil, exitcode.Usage, ""},
		{"probe target api_key with a space", []string{"probe", "http://" + closed + "/x?api_key=" + pw + " AB"}, nil, exitcode.Unreachable, ""},
		{"load target api_key", []string{"load", "--target", "http://" + closed + "/x?api_key=" + pw + "&sig=" + pw, "--rate", "1/s", "--duration", "1s"}, nil, exitcode.Unreachable, ""},
		// client options that would allocate without bound (issue 26)
		{"pool_size a billion", []string{"eval", "--redis", "redis://" + closed + "/0?pool_size=1000000000", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "ceiling of 10000"},
		{"min_idle_conns a million", []string{"race", "--redis", "redis://" + closed + "/0?min_idle_conns=1000000"}, nil, exitcode.Usage, "ceiling of 10000"},
		{"tls-ca /dev/zero", []string{"eval", "--redis", "rediss://" + closed, "--tls-ca", "/dev/zero", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "regular file"},
		{"tls-ca fifo", []string{"eval", "--redis", "rediss://" + closed, "--tls-ca", fifo, "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "regular file"},
		{"tls-cert fifo", []string{"eval", "--redis", "rediss://" + closed, "--tls-cert", fifo, "--tls-key", empty, "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "regular file"},
		{"tls-key /dev/zero", []string{"eval", "--redis", "rediss://" + closed, "--tls-cert", empty, "--tls-key", "/dev/zero", "k", "--capacity", "5", "--rate", "1/s"}, nil, exitcode.Usage, "regular file"},
		// files that never end or block
		{"eval script /dev/zero", []string{"eval", "--redis", "embedded", "--script", "/dev/zero", "k", ","}, nil, exitcode.Usage, "regular file"},
		{"eval script fifo", []string{"eval", "--redis", "embedded", "--script", fifo, "k", ","}, nil, exitcode.Usage, "regular file"},
		{"eval script empty", []string{"eval", "--redis", "embedded", "--script", empty, "k", ","}, nil, exitcode.Usage, "empty"},
		{"eval script -n 0", []string{"eval", "--redis", "embedded", "--script", one, "-n", "0", "k", ","}, nil, exitcode.Usage, ""},
		{"race script /dev/zero", []string{"race", "--redis", "embedded", "--script", "/dev/zero"}, nil, exitcode.Usage, "regular file"},
		{"race script fifo", []string{"race", "--redis", "embedded", "--script", fifo}, nil, exitcode.Usage, "regular file"},
		{"race script empty", []string{"race", "--redis", "embedded", "--script", empty}, nil, exitcode.Usage, "empty"},
		{"keyslot -f /dev/zero", []string{"keyslot", "-f", "/dev/zero"}, nil, exitcode.Usage, ""},
		{"keyslot -f fifo", []string{"keyslot", "-f", fifo}, nil, exitcode.Usage, "regular file"},
		{"keyslot --script fifo", []string{"keyslot", "--script", fifo}, nil, exitcode.Usage, "regular file"},
		{"keyslot --groups /dev/zero", []string{"keyslot", "--groups", "/dev/zero"}, nil, exitcode.Usage, ""},
		{"load body /dev/zero", []string{"load", "--target", "http://" + closed + "/", "--body", "@/dev/zero", "--rate", "1/s", "--duration", "1s"}, nil, exitcode.Usage, "regular file"},
		{"load body fifo", []string{"load", "--target", "http://" + closed + "/", "--body", "@" + fifo, "--rate", "1/s", "--duration", "1s"}, nil, exitcode.Usage, "regular file"},
		{"report /dev/zero", []string{"report", "/dev/zero"}, nil, exitcode.Usage, "regular file"},
		{"report fifo", []string{"report", fifo}, nil, exitcode.Usage, "regular file"},
		{"report duplicate keys", []string{"report", dupKeys}, nil, exitcode.Usage, "appears twice"},
		// resource bounds
		{"load huge duration", []string{"load", "--target", "http://" + closed + "/", "--rate", "20/s", "--duration", "2562047h"}, nil, exitcode.Usage, ""},
		{"load huge identities", []string{"load", "--target", "http://" + closed + "/", "--rate", "20/s", "--duration", "1s", "--identities", "2000000000"}, nil, exitcode.Usage, ""},
		{"load huge rate", []string{"load", "--target", "http://" + closed + "/", "--rate", "1e12/s", "--duration", "10s"}, nil, exitcode.Usage, ""},
		{"load out unwritable", []string{"load", "--target", "http://" + closed + "/", "--rate", "1/s", "--duration", "1s", "--out", "/nonexistent/x.json"}, nil, exitcode.Usage, ""},
		{"load empty method", []string{"load", "--target", "http://" + closed + "/", "--rate", "1/s", "--duration", "1s", "-X", ""}, nil, exitcode.Usage, ""},
		{"load no scheme", []string{"load", "--target", "127.0.0.1:38511/hello", "--rate", "1/s", "--duration", "1s"}, nil, exitcode.Usage, "http://"},
		{"load password in target", []string{"load", "--target", "http://u:" + pw + "@" + closed + "/", "--rate", "1/s", "--duration", "1s", "-X", ""}, nil, exitcode.Usage, ""},
		{"keyslot absurd rate", []string{"keyslot", "--split", "k", "--into", "4", "--rate", "1e308/ns"}, nil, exitcode.Usage, ""},
		// issue 26, second part: wrong codes and unbounded work
		{"load segment 0/0", []string{"load", "--target", "http://" + closed + "/", "--rate", "1/s", "--duration", "1s", "--segment", "0/0", "--run-id", "r"}, nil, exitcode.Usage, "the count 0 is out of range"},
		{"load segment k8s of 0", []string{"load", "--target", "http://" + closed + "/", "--rate", "1/s", "--duration", "1s", "--segment", "k8s", "--run-id", "r"}, map[string]string{"JOB_COMPLETION_INDEX": "0", "RATELIMIT_SEGMENTS": "0"}, exitcode.Usage, "the count 0 is out of range"},
		{"eval -n a billion", []string{"eval", "--redis", "embedded", "k", "--capacity", "5", "--rate", "1/s", "-n", "1000000000"}, nil, exitcode.Usage, "ceiling of 100,000 calls"},
		{"eval --interval 1000000h", []string{"eval", "--redis", "embedded", "k", "--capacity", "5", "--rate", "1/s", "-n", "2", "--interval", "1000000h"}, nil, exitcode.Usage, "ceiling of 1h"},
		{"eval -n by --interval past a day", []string{"eval", "--redis", "embedded", "k", "--capacity", "5", "--rate", "1/s", "-n", "100000", "--interval", "1s"}, nil, exitcode.Usage, "ceiling of 24h"},
		{"eval script -n a billion", []string{"eval", "--redis", "embedded", "--script", one, "-n", "1000000000", "k", ","}, nil, exitcode.Usage, "ceiling of 100,000 calls"},
		{"report --html fifo", []string{"report", empty, "--html", fifo}, nil, exitcode.Usage, "not a regular file"},
		{"report --from --html fifo", []string{"report", "--from", "vegeta", one, "--html", fifo}, nil, exitcode.Usage, "not a regular file"},
		{"report --from --out fifo", []string{"report", "--from", "vegeta", one, "--out", fifo}, nil, exitcode.Usage, "not a regular file"},
		{"probe budget above the ceiling", []string{"probe", "http://" + closed + "/", "--budget", "20001"}, nil, exitcode.Usage, "ceiling of 20000"},
		{"probe max-time above the ceiling", []string{"probe", "http://" + closed + "/", "--max-time", "2h"}, nil, exitcode.Usage, "--max-time"},
		// sandbox
		{"sandbox daemonize", []string{"sandbox", "--server-arg=--daemonize", "--server-arg=yes", "--for", "1s"}, nil, exitcode.Usage, "daemonize"},
		{"sandbox primaries without cluster", []string{"sandbox", "--primaries", "3", "--for", "1s"}, nil, exitcode.Usage, ""},
		{"sandbox too many primaries", []string{"sandbox", "--topology", "cluster", "--primaries", "1000", "--for", "1s"}, nil, exitcode.Usage, ""},
		{"sandbox too many replicas", []string{"sandbox", "--topology", "cluster", "--replicas", "100", "--for", "1s"}, nil, exitcode.Usage, ""},
		{"sandbox negative port base", []string{"sandbox", "--port-base", "-1", "--for", "1s"}, nil, exitcode.Usage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf := newTestFactory(t)
			for k, v := range tt.env {
				tf.Env[k] = v
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan int, 1)
			go func() { done <- run(ctx, tf.Factory, tt.args) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(90 * time.Second):
				t.Fatalf("ratelimit %q did not end", tt.args)
			}
			out, errOut := tf.Out.String(), tf.ErrOut.String()
			if code != tt.code {
				t.Errorf("ratelimit %q exit = %d, want %d (stderr %q)", tt.args, code, tt.code, errOut)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "error: ") {
				t.Errorf("ratelimit %q stderr ends with %q, want one 'error:' line", tt.args, last)
			}
			if tt.want != "" && !strings.Contains(last, tt.want) {
				t.Errorf("ratelimit %q error = %q, want it to mention %q", tt.args, last, tt.want)
			}
			for _, bad := range []string{pw, "panic", "goroutine "} {
				if strings.Contains(out+errOut, bad) {
					t.Errorf("ratelimit %q output contains %q:\n%s\n%s", tt.args, bad, out, errOut)
				}
			}
		})
	}
	_ = os.Remove(fifo)
}

// TestScriptsExportNeverFollowsLinks (issue 26): scripts --export DIR
// followed a symbolic link in DIR and overwrote its target outside DIR.
// Now a name that exists in DIR is refused (exit 2) before anything is
// written; --force replaces the link itself through a temporary file and
// a rename, and the link's target is never written.
func TestScriptsExportNeverFollowsLinks(t *testing.T) {
	scripts := limiter.Scripts()
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, scripts[0].File)
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, scripts[1].File)
	created := filepath.Join(outside, "created.txt")
	if err := os.Symlink(created, dangling); err != nil {
		t.Fatal(err)
	}
	untouched := func(when string) {
		t.Helper()
		if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
			t.Errorf("%s: the link's target outside DIR holds %.40q... (%v), want it untouched", when, b, err)
		}
		if _, err := os.Lstat(created); err == nil {
			t.Errorf("%s: a file was created outside DIR through a dangling link", when)
		}
	}

	tf := newTestFactory(t)
	if code := tf.execute(t, "scripts", "--export", dir); code != exitcode.Usage {
		t.Errorf("scripts --export DIR with links in it: exit %d, want 2 (stderr %q)", code, tf.ErrOut.String())
	}
	if msg := tf.ErrOut.String(); !strings.Contains(msg, "--force") || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Errorf("stderr %q, want one line pointing at --force", msg)
	}
	untouched("without --force")
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("DIR holds %d entries after the refusal, want only the 2 links (nothing written before refusing)", len(entries))
	}
	tf = newTestFactory(t)
	if code := tf.execute(t, "scripts", scripts[1].Name, "--export", dir); code != exitcode.Usage {
		t.Errorf("scripts NAME --export DIR onto a dangling link: exit %d, want 2", code)
	}
	untouched("one script onto a dangling link")

	tf = newTestFactory(t)
	if code := tf.execute(t, "scripts", "--export", dir, "--force"); code != exitcode.OK {
		t.Fatalf("scripts --export DIR --force: exit %d (stderr %q)", code, tf.ErrOut.String())
	}
	untouched("with --force")
	for _, sc := range scripts {
		p := filepath.Join(dir, sc.File)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s after --force: %v, %v; want a regular file (the link replaced)", p, fi, err)
			continue
		}
		if b, _ := os.ReadFile(p); string(b) != sc.Source {
			t.Errorf("%s does not hold the script", p)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != len(scripts) {
		t.Errorf("DIR holds %d entries, want the %d scripts (no temporary file left)", len(entries), len(scripts))
	}
	// a second export into the same DIR: refused, then replaced with --force
	if code := newTestFactory(t).execute(t, "scripts", "--export", dir); code != exitcode.Usage {
		t.Errorf("second scripts --export DIR: exit %d, want 2", code)
	}
	if code := newTestFactory(t).execute(t, "scripts", "--force"); code != exitcode.Usage {
		t.Errorf("scripts --force without --export: exit %d, want 2", code)
	}
}

// TestSandboxBadTMPDIR (issue 26): sandbox with TMPDIR pointing nowhere
// exited 4 (an internal bug); it is bad input, exit 2, naming TMPDIR.
func TestSandboxBadTMPDIR(t *testing.T) {
	redistest.Require(t)
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	t.Setenv("TMPDIR", missing)
	tf := newTestFactory(t)
	code := tf.execute(t, "sandbox", "--for", "1s")
	msg := strings.TrimSpace(tf.ErrOut.String())
	if code != exitcode.Usage || !strings.HasPrefix(msg, "error: TMPDIR "+missing) || strings.Contains(msg, "\n") {
		t.Errorf("sandbox with TMPDIR=%s: exit %d, stderr %q; want exit 2 and one line naming TMPDIR", missing, code, msg)
	}
	if tf.Out.Len() != 0 {
		t.Errorf("sandbox printed %q, want no URL", tf.Out.String())
	}
}
