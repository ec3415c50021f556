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
		// sandbox
		{"sandbox daemonize", []string{"sandbox", "--server-arg=--daemonize", "--server-arg=yes", "--for", "1s"}, nil, exitcode.Usage, "daemonize"},
		{"sandbox primaries without cluster", []string{"sandbox", "--primaries", "3", "--for", "1s"}, nil, exitcode.Usage, ""},
		{"sandbox too many primaries", []string{"sandbox", "--cluster", "--primaries", "1000", "--for", "1s"}, nil, exitcode.Usage, ""},
		{"sandbox too many replicas", []string{"sandbox", "--cluster", "--replicas", "100", "--for", "1s"}, nil, exitcode.Usage, ""},
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
