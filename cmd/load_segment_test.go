package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/tally"
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
		{[]string{"--segment", "1/4", "--start-at", "2026-12-02T12:00:10Z"}, nil, ""},
		{[]string{"--segment", "1/4", "--start-at", "+5s"}, nil, "from now"},
		{[]string{"--segment", "1/4", "--run-id", "shared"}, nil, ""},
		{[]string{"--segment", "1/4"}, nil, "needs --start-at"},
		{[]string{"--segment", "1/4", "--run-id", "a b"}, nil, "--run-id"},
		{[]string{"--segment", "4/4", "--start-at", "2026-12-02T12:00:10Z"}, nil, "runs from 0 to 3"},
		{[]string{"--segment", "a/4"}, nil, "want I/N"},
		{[]string{"--segment", "k8s"}, nil, "JOB_COMPLETION_INDEX"},
		{[]string{"--segment", "k8s"}, map[string]string{"JOB_COMPLETION_INDEX": "1"}, "RATELIMIT_SEGMENTS"},
		{[]string{"--segment", "k8s", "--start-at", "2026-12-02T12:00:10Z"}, map[string]string{"JOB_COMPLETION_INDEX": "1", "RATELIMIT_SEGMENTS": "3"}, ""},
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

// TestSegmentProcessesMerge: four segments of one plan, each a separate
// ratelimit process, against one serve (a bucket of 10 at 5/s) at 20/s
// for 6 s, merged: planned and sent equal the whole plan's, and the merged
// verdict on the admitted count is the one a single process gets for the
// same plan.
func TestSegmentProcessesMerge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ratelimit")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	url := probeTarget(t, "")
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	plan := []string{"load", "--target", url, "--rate", "20/s", "--duration", "6s", "--expect", "token-bucket:burst=10,rate=5/s", "--start-at", start, "-o", "json"}
	files := make([]string, 4)
	var wg sync.WaitGroup
	for k := range 4 {
		files[k] = filepath.Join(dir, fmt.Sprintf("seg%d.json", k))
		wg.Go(func() {
			out, err := os.Create(files[k])
			if err != nil {
				t.Error(err)
				return
			}
			defer out.Close()
			var stderr strings.Builder
			cmd := exec.Command(bin, append(plan, "--segment", fmt.Sprintf("%d/4", k))...)
			cmd.Stdout, cmd.Stderr = out, &stderr
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			if err := cmd.Run(); err != nil {
				t.Errorf("segment %d: %v\n%s", k, err, stderr.String())
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	merged := filepath.Join(dir, "run.json")
	tf := newTestFactory(t)
	if code := tf.execute(t, "merge", files[0], files[1], files[2], files[3], "--out", merged); code != exitcode.OK {
		t.Fatalf("merge = %d\n%s\n%s", code, tf.Out.String(), tf.ErrOut.String())
	}
	var m tally.Result
	b, _ := os.ReadFile(merged)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	// a starved segment drops what it cannot send in time (its own check
	// says so): the plan is whole, what was sent is judged
	if m.Planned != 120 || m.Sent+m.Dropped != 120 || m.Sent == 0 || m.Segment == nil || len(m.Segment.Merged) != 4 {
		t.Fatalf("merged planned %d sent %d dropped %d segment %+v", m.Planned, m.Sent, m.Dropped, m.Segment)
	}
	if m.Expect == nil || !m.Expect.Pass {
		t.Fatalf("merged verdict: %+v", m.Expect)
	}

	tf = newTestFactory(t)
	one := filepath.Join(dir, "one.json")
	if code := tf.execute(t, "load", "--target", probeTarget(t, ""), "--rate", "20/s", "--duration", "6s", "--expect", "token-bucket:burst=10,rate=5/s", "--out", one); code != exitcode.OK {
		t.Fatalf("single-process load = %d\n%s", code, tf.ErrOut.String())
	}
	var w tally.Result
	b, _ = os.ReadFile(one)
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if w.Planned != m.Planned || w.Expect.Pass != m.Expect.Pass || w.Verdict != m.Verdict {
		t.Errorf("single process: %d planned, %s; merged: %d planned, %s", w.Planned, w.Expect.Line(), m.Planned, m.Expect.Line())
	}
	if d := m.Expect.Observed - w.Expect.Observed; d > m.Expect.Tolerance || -d > m.Expect.Tolerance {
		t.Errorf("merged admitted %d, single process %d (tolerance %d)", m.Expect.Observed, w.Expect.Observed, m.Expect.Tolerance)
	}
	t.Logf("merged: %s (first lateness %.2f ms); single process: %s", m.Expect.Line(), m.Segment.FirstLatenessMs, w.Expect.Line())

	// a duplicate segment and a segment of another plan are refused
	tf = newTestFactory(t)
	if code := tf.execute(t, "merge", files[0], files[0]); code != exitcode.Usage || !strings.Contains(tf.ErrOut.String(), "twice") {
		t.Errorf("duplicate = %d %q", code, tf.ErrOut.String())
	}
	tf = newTestFactory(t)
	if code := tf.execute(t, "merge", files[0], one); code != exitcode.Usage || !strings.Contains(tf.ErrOut.String(), "not a segment") {
		t.Errorf("a whole run merged = %d %q", code, tf.ErrOut.String())
	}
	tf = newTestFactory(t)
	if code := tf.execute(t, "merge", files[0], files[1], files[2]); code != exitcode.Failed || !strings.Contains(tf.ErrOut.String(), "missing") {
		t.Errorf("three of four = %d %q", code, tf.ErrOut.String())
	}
}
