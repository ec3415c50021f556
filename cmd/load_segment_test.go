package cmd

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/load"
)

// manifestArgs reads the container args of deploy/kubernetes/load-job.yaml
// (the "- --flag=value" lines under args:), with START_AT_PLACEHOLDER
// replaced by start.
func manifestArgs(t *testing.T, start time.Time) []string {
	t.Helper()
	data, err := os.ReadFile("../deploy/kubernetes/load-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	in := false
	for _, l := range strings.Split(string(data), "\n") {
		tl := strings.TrimSpace(l)
		switch {
		case tl == "args:":
			in = true
		case in && strings.HasPrefix(tl, "- "):
			args = append(args, strings.ReplaceAll(strings.TrimPrefix(tl, "- "), "START_AT_PLACEHOLDER", start.UTC().Format(time.RFC3339)))
		case in:
			in = false
		}
	}
	return args
}

// TestManifestArgsAreValid: the Job's command line is one ratelimit load
// accepts, and in pod 2 of 4 it is segment 2/4 starting at the shared
// instant.
func TestManifestArgsAreValid(t *testing.T) {
	start := testNow.Add(90 * time.Second)
	args := manifestArgs(t, start)
	if len(args) < 5 || args[0] != "load" {
		t.Fatalf("args %v", args)
	}
	tf := newTestFactory(t)
	tf.Env["JOB_COMPLETION_INDEX"] = "2"
	var got load.Options
	c := newLoadCmd(tf.Factory, func(o *loadOptions) error {
		var err error
		if got, err = o.loadOptions(); err != nil {
			return err
		}
		return got.Validate()
	})
	// --output is the root command's flag; the rest is load's
	var own []string
	for _, a := range args[1:] {
		if v, ok := strings.CutPrefix(a, "--output="); ok {
			if v != "json" {
				t.Errorf("--output=%s, want json", v)
			}
			continue
		}
		own = append(own, a)
	}
	c.SetArgs(own)
	if err := c.Execute(); err != nil {
		t.Fatalf("ratelimit %s: %v", strings.Join(args, " "), err)
	}
	if got.Segment != (load.Segment{Index: 2, Count: 4}) || !got.StartAt.Equal(start) {
		t.Errorf("segment %+v start %v", got.Segment, got.StartAt)
	}
}

func TestSegmentFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string // error text; "" for valid
	}{
		{[]string{"--segment", "1/4"}, nil, ""},
		{[]string{"--segment", "4/4"}, nil, "runs from 0 to 3"},
		{[]string{"--segment", "a/4"}, nil, "want I/N"},
		{[]string{"--segment", "k8s"}, nil, "JOB_COMPLETION_INDEX"},
		{[]string{"--segment", "k8s"}, map[string]string{"JOB_COMPLETION_INDEX": "1"}, "RATELIMIT_SEGMENTS"},
		{[]string{"--segment", "k8s"}, map[string]string{"JOB_COMPLETION_INDEX": "1", "RATELIMIT_SEGMENTS": "3"}, ""},
		{[]string{"--segments", "3"}, nil, "needs --segment k8s"},
		{[]string{"--start-at", "+10s"}, nil, ""},
		{[]string{"--start-at", "yesterday"}, nil, "RFC 3339"},
		{[]string{"--start-at", "2026-12-02T11:00:00Z"}, nil, "in the past"},
		{[]string{"--start-at", "2026-12-05T11:00:00Z"}, nil, "ahead"},
	} {
		tf := newTestFactory(t)
		for k, v := range tt.env {
			tf.Env[k] = v
		}
		c := newLoadCmd(tf.Factory, func(o *loadOptions) error {
			lo, err := o.loadOptions()
			if err != nil {
				return err
			}
			return lo.Validate()
		})
		c.SetArgs(append([]string{"--target", "http://127.0.0.1:1/x", "--rate", "20/s", "--duration", "2s"}, tt.args...))
		c.SilenceErrors, c.SilenceUsage = true, true
		err := c.Execute()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}
