package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestHelpListsCommandsWithExamples(t *testing.T) {
	tf := newTestFactory(t)
	root := NewRootCmd(tf.Factory)
	if len(root.Commands()) == 0 {
		t.Fatal("no subcommands registered")
	}
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			continue
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("ratelimit %s has no Example in its --help", c.Name())
		}
		if c.Short == "" {
			t.Errorf("ratelimit %s has no short description", c.Name())
		}
	}
	if code := tf.execute(t, "--help"); code != exitcode.OK {
		t.Fatalf("--help exit = %d", code)
	}
	for _, c := range root.Commands() {
		if !c.Hidden && !strings.Contains(tf.Out.String(), "  "+c.Name()+" ") {
			t.Errorf("ratelimit --help does not list %s:\n%s", c.Name(), tf.Out.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"no-such-command"},
		{"sandbox", "--no-such-flag"},
		{"sandbox", "extra-arg"},
		{"sandbox", "--for", "abc"},
		{"-o", "yaml", "sandbox"},
		{"sandbox", "--cluster", "--primaries", "2"},
	} {
		tf := newTestFactory(t)
		code := tf.execute(t, args...)
		if code != exitcode.Usage {
			t.Errorf("ratelimit %v exit = %d, want 2 (stderr %q)", args, code, tf.ErrOut.String())
		}
		if lines := strings.Count(tf.ErrOut.String(), "\n"); lines != 1 || !strings.HasPrefix(tf.ErrOut.String(), "error: ") {
			t.Errorf("ratelimit %v stderr = %q, want one 'error:' line", args, tf.ErrOut.String())
		}
	}
}

func TestColor(t *testing.T) {
	tf := newTestFactory(t)
	if tf.Color() {
		t.Error("Color() on a buffer = true, want false")
	}
	tf.IO.OutTTY = true
	if !tf.Color() {
		t.Error("Color() on a terminal = false, want true")
	}
	tf.Env["NO_COLOR"] = "1"
	if tf.Color() {
		t.Error("Color() with NO_COLOR = true, want false")
	}
	delete(tf.Env, "NO_COLOR")
	tf.Global.NoColor = true
	if tf.Color() {
		t.Error("Color() with --no-color = true, want false")
	}
}

func TestRedisFromEnvAndFlag(t *testing.T) {
	sb := redistest.StandaloneSandbox(t)
	tf := newTestFactory(t)
	tf.Env["REDIS_URL"] = sb.URL
	c, err := tf.Redis(t.Context())
	if err != nil {
		t.Fatalf("Redis() with REDIS_URL: %v", err)
	}
	if c.Server.Embedded || !strings.Contains(c.Server.Addr, sb.Addrs[0]) {
		t.Errorf("Redis() = %+v, want the server from REDIS_URL %s", c.Server, sb.URL)
	}
	tf2 := newTestFactory(t)
	tf2.Env["REDIS_URL"] = "redis://127.0.0.1:1"
	tf2.Global.RedisURL = "embedded"
	c2, err := tf2.Redis(t.Context())
	if err != nil || !c2.Server.Embedded {
		t.Errorf("--redis embedded must win over REDIS_URL: %+v, %v", c2, err)
	}
}

func TestInterruptedExitCode(t *testing.T) {
	redistest.Require(t)
	tf := newTestFactory(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C before the servers are up
	if code := run(ctx, tf.Factory, []string{"sandbox", "--cluster"}); code != exitcode.Interrupted {
		t.Errorf("sandbox interrupted while starting: exit = %d, want 130 (stderr %q)", code, tf.ErrOut.String())
	}
	if !strings.Contains(tf.ErrOut.String(), "interrupted") {
		t.Errorf("stderr = %q, want it to say interrupted", tf.ErrOut.String())
	}
}
