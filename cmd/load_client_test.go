package cmd

import (
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/load"
)

// --http-client reaches load.Options (auto when not given), each stack
// carries a run against the same target, and a choice that cannot work
// is exit 2 before anything is sent.
func TestLoadHTTPClientFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, load.HTTPClientAuto},
		{[]string{"--http-client", "std"}, load.HTTPClientStd},
		{[]string{"--http-client", "lean"}, load.HTTPClientLean},
	} {
		tf := newTestFactory(t)
		var got *loadOptions
		c := newLoadCmd(tf.Factory, func(o *loadOptions) error { got = o; return nil })
		c.SetArgs(append([]string{"--target", "http://x.test/", "--rate", "1/s"}, tt.args...))
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		o, err := got.loadOptions()
		if err != nil || got.HTTPClient != tt.want || o.HTTPClient != tt.want {
			t.Errorf("%v: flag %q, option %q, %v; want %q", tt.args, got.HTTPClient, o.HTTPClient, err, tt.want)
		}
	}

	ct := newCountingTarget(t)
	for _, name := range []string{"lean", "std"} {
		before := ct.hits()
		tf := newTestFactory(t)
		if code := tf.execute(t, "load", "--target", ct.URL, "--rate", "10/s", "--duration", "500ms", "--http-client", name, "--allow-undecided"); code != 0 {
			t.Fatalf("--http-client %s: exit %d\n%s%s", name, code, tf.Out.String(), tf.ErrOut.String())
		}
		if n := ct.hits() - before; n != 5 {
			t.Errorf("--http-client %s: target saw %d requests, want 5", name, n)
		}
	}

	for _, tt := range []struct{ target, choice, msg string }{
		{"https://127.0.0.1:1/", "lean", "--http-client lean: it speaks plain http:// only, not https://; use --http-client std or auto"},
		{ct.URL, "h2", `--http-client "h2": want auto, lean or std`},
	} {
		before := ct.hits()
		tf := newTestFactory(t)
		code := tf.execute(t, "load", "--target", tt.target, "--rate", "10/s", "--duration", "300ms", "--http-client", tt.choice)
		if code != 2 || !strings.Contains(tf.ErrOut.String(), tt.msg) || ct.hits() != before {
			t.Errorf("--http-client %s for %s: exit %d, stderr %q, %d requests; want exit 2 saying %q, none sent",
				tt.choice, tt.target, code, tf.ErrOut.String(), ct.hits()-before, tt.msg)
		}
	}
}
