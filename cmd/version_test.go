package cmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		tf := newTestFactory(t)
		if code := tf.execute(t, args...); code != exitcode.OK {
			t.Fatalf("ratelimit %v exit %d: %s", args, code, tf.ErrOut.String())
		}
		if out := tf.Out.String(); !strings.HasPrefix(out, "ratelimit ") || !strings.Contains(out, " go1.") || strings.Count(out, "\n") != 1 {
			t.Errorf("ratelimit %v = %q, want one line 'ratelimit VERSION ... goX'", args, out)
		}
	}
	tf := newTestFactory(t)
	if code := tf.execute(t, "version", "-o", "json"); code != exitcode.OK {
		t.Fatalf("version -o json exit %d", code)
	}
	var in struct{ Module, Version string }
	if err := json.Unmarshal(tf.Out.Bytes(), &in); err != nil || in.Module != "github.com/ratelimit-dev/ratelimit" || in.Version == "" {
		t.Errorf("version -o json = %q (%v)", tf.Out.String(), err)
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		tf := newTestFactory(t)
		if code := tf.execute(t, "completion", shell); code != exitcode.OK {
			t.Fatalf("completion %s exit %d: %s", shell, code, tf.ErrOut.String())
		}
		if !strings.Contains(tf.Out.String(), "ratelimit") {
			t.Errorf("completion %s does not mention ratelimit", shell)
		}
	}
	tf := newTestFactory(t)
	tf.execute(t, "completion", "bash")
	if out := tf.Out.String(); !strings.HasPrefix(out, "# bash completion") {
		t.Errorf("completion bash does not start as a bash script: %.60q", out)
	}
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		tf := newTestFactory(t)
		if code := tf.execute(t, args...); code != exitcode.Usage {
			t.Errorf("ratelimit %v exit %d, want 2", args, code)
		}
	}
}
