package cmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/version"
)

func TestVersion(t *testing.T) {
	tf := newTestFactory(t)
	if code := tf.execute(t, "--version"); code != exitcode.OK {
		t.Fatalf("ratelimit --version exit %d: %s", code, tf.ErrOut.String())
	}
	if out := tf.Out.String(); !strings.HasPrefix(out, "ratelimit ") || !strings.Contains(out, " go1.") || strings.Count(out, "\n") != 1 {
		t.Errorf("ratelimit --version = %q, want one line 'ratelimit VERSION ... goX'", out)
	}
	oneLine := tf.Out.String()
	tf = newTestFactory(t)
	if code := tf.execute(t, "version"); code != exitcode.OK {
		t.Fatalf("ratelimit version exit %d: %s", code, tf.ErrOut.String())
	}
	out := tf.Out.String()
	if !strings.HasPrefix(out, oneLine) {
		t.Errorf("ratelimit version does not start with the --version line %q:\n%s", oneLine, out)
	}
	for _, want := range []string{"\nmodule:   github.com/ratelimit-dev/ratelimit\n", "\nversion:  ", "\nrevision: ", "\ngo:       go1."} {
		if !strings.Contains(out, want) {
			t.Errorf("ratelimit version lacks %q:\n%s", want, out)
		}
	}
	tf = newTestFactory(t)
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

func TestVersionText(t *testing.T) {
	for _, tt := range []struct {
		in   version.Info
		want string
	}{
		{version.Info{Module: "github.com/ratelimit-dev/ratelimit", Version: "(devel)", GoVersion: "go1.26.0"},
			"revision: unknown (not stamped into this build; go build -buildvcs=true stamps it)\n"},
		{version.Info{Module: "m", Version: "v1.2.0", Revision: "0123456789abcdef0123", Time: "2026-12-02T18:00:00Z", Modified: true, GoVersion: "go1.26.0"},
			"revision: 0123456789abcdef0123 (2026-12-02T18:00:00Z, modified)\n"},
		{version.Info{Module: "m", Version: "v1.2.0", Revision: "0123456789abcdef0123", GoVersion: "go1.26.0"},
			"revision: 0123456789abcdef0123\n"},
	} {
		got := versionText(tt.in)
		if !strings.Contains(got, tt.want) || !strings.HasPrefix(got, tt.in.String()+"\n") || !strings.Contains(got, "module:   "+tt.in.Module+"\n") {
			t.Errorf("versionText(%+v) =\n%s\nwant the --version line, the module and %q", tt.in, got, tt.want)
		}
	}
}

// TestCompletionCompletes: the scripts call 'ratelimit __complete', which
// must list the commands and a command's flags.
func TestCompletionCompletes(t *testing.T) {
	tf := newTestFactory(t)
	if code := tf.execute(t, "__complete", ""); code != exitcode.OK {
		t.Fatalf("__complete exit %d: %s", code, tf.ErrOut.String())
	}
	root := NewRootCmd(newTestFactory(t).Factory)
	for _, c := range root.Commands() {
		if !c.Hidden && !strings.Contains(tf.Out.String(), c.Name()+"\t") {
			t.Errorf("__complete '' does not offer %s:\n%s", c.Name(), tf.Out.String())
		}
	}
	tf = newTestFactory(t)
	tf.execute(t, "__complete", "race", "--con")
	if !strings.Contains(tf.Out.String(), "--concurrency\t") {
		t.Errorf("__complete race --con = %q, want --concurrency", tf.Out.String())
	}
	tf = newTestFactory(t)
	if code := tf.execute(t, "completion", "bash", "-o", "json"); code != exitcode.Usage {
		t.Errorf("completion bash -o json exit %d, want 2", code)
	}
}
