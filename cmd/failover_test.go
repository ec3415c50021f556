package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/failover"
	"github.com/ratelimit-dev/ratelimit/fault"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

func TestFailoverFlags(t *testing.T) {
	defaults := failoverOptions{
		Algo: "token-bucket", Capacity: 20, LimiterRate: rate.MustParse("250/s"), Limit: 250, Window: time.Second, Burst: 20, Cost: 1,
		Rate: rate.MustParse("500/s"), Clients: 1, Trials: 5, Before: time.Second, After: time.Second, Mode: "force",
		WaitTimeout: 100 * time.Millisecond,
	}
	five := int64(5)
	zero := int64(0)
	tests := []struct {
		args []string
		edit func(*failoverOptions)
	}{
		{nil, func(*failoverOptions) {}},
		{
			[]string{"--rate", "1000/s", "--clients", "4", "--trials", "2", "--before", "300ms", "--after", "2s", "--mode", "takeover",
				"--wait", "1", "--wait-timeout", "50ms", "--max-extra", "5", "--allow-faults-on-remote", "--out", "f.json"},
			func(o *failoverOptions) {
				o.Rate, o.Clients, o.Trials, o.Before, o.After, o.Mode = rate.MustParse("1000/s"), 4, 2, 300*time.Millisecond, 2*time.Second, "takeover"
				o.Wait, o.WaitTimeout, o.MaxExtra, o.AllowRemote, o.Out = 1, 50*time.Millisecond, &five, true, "f.json"
			},
		},
		{
			// --max-extra 0 is a judgement (no extra admission at all), not report only
			[]string{"--algo", "gcra", "--limiter-rate", "100/s", "--burst", "5", "--cost", "2", "--max-extra", "0"},
			func(o *failoverOptions) {
				o.Algo, o.LimiterRate, o.Burst, o.Cost, o.MaxExtra = "gcra", rate.MustParse("100/s"), 5, 2, &zero
			},
		},
	}
	for _, tt := range tests {
		tf := newTestFactory(t)
		var got *failoverOptions
		c := newFailoverCmd(tf.Factory, func(o *failoverOptions) error { got = o; return nil })
		c.SetArgs(tt.args)
		if err := c.Execute(); err != nil {
			t.Fatalf("failover %v: %v", tt.args, err)
		}
		want := defaults
		tt.edit(&want)
		got.f, got.ctx, got.Changed = nil, nil, nil
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("failover %v options = %+v, want %+v", tt.args, *got, want)
		}
	}
}

// TestFailoverBadInput: every bad input is exit 2 with one line, decided
// before any connection: the factory's Redis fails the test if called, so
// a URL that is not loopback is refused without a dial.
func TestFailoverBadInput(t *testing.T) {
	const loop = "redis://127.0.0.1:1"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--redis", "redis://cache.example.invalid:6380"}, "refusing to inject faults into redis://cache.example.invalid:6380: cache.example.invalid is not a loopback address or a sandbox this process started; pass " + fault.AllowRemoteFlag},
		{[]string{"--redis", "redis://10.0.0.5:7000"}, fault.AllowRemoteFlag},
		{[]string{"--redis", "redis://ops:hunter2@cache.example.invalid:6380"}, "redis://ops:xxxxx@cache.example.invalid:6380"},
		{[]string{"--redis", "unix:///tmp/ratelimit-none.sock"}, fault.AllowRemoteFlag},
		{nil, "failover needs the URL of a cluster with replicas (--redis)"},
		{[]string{"--redis", "embedded"}, "not the embedded server"},
		{[]string{"--redis", loop, "--trials", "0"}, "--trials 0 is out of range; use 1 to 100"},
		{[]string{"--redis", loop, "--trials", "101"}, "--trials 101"},
		{[]string{"--redis", loop, "--clients", "0"}, "--clients 0"},
		{[]string{"--redis", loop, "--clients", "65"}, "--clients 65"},
		{[]string{"--redis", loop, "--rate", "20000/s"}, "--rate 20000/s is out of range"},
		{[]string{"--redis", loop, "--rate", "0"}, "--rate"},
		{[]string{"--redis", loop, "--before", "1ms"}, "--before 1ms"},
		{[]string{"--redis", loop, "--after", "0s"}, "--after 0 is out of range"},
		{[]string{"--redis", loop, "--wait", "6"}, "--wait 6"},
		{[]string{"--redis", loop, "--wait", "1", "--wait-timeout", "1500us"}, "--wait-timeout 1.5ms is out of range"},
		{[]string{"--redis", loop, "--wait", "1", "--wait-timeout", "0"}, "--wait-timeout 0"},
		{[]string{"--redis", loop, "--wait-timeout", "50ms"}, "--wait-timeout goes with --wait N"},
		{[]string{"--redis", loop, "--max-extra", "-1"}, "--max-extra -1 is negative"},
		{[]string{"--redis", loop, "--mode", "sideways"}, "unknown failover mode"},
		{[]string{"--redis", loop, "--mode", "graceful"}, "nothing to measure"},
		{[]string{"--redis", loop, "--algo", "leaky-bucket"}, "leaky-bucket"},
		{[]string{"--redis", loop, "--algo", "sliding-window", "--capacity", "5"}, "--capacity does not apply to sliding-window; it uses --limit and --window"},
		{[]string{"--redis", loop, "--window", "1s"}, "--window does not apply to token-bucket; it uses --capacity and --limiter-rate"},
		{[]string{"--redis", loop, "--algo", "fixed-window", "--limiter-rate", "5/s"}, "--limiter-rate does not apply to fixed-window"},
		{[]string{"--redis", loop, "--capacity", "0"}, "token-bucket needs --capacity from 1"},
		{[]string{"--redis", loop, "--cost", "50"}, "--cost 50 exceeds --capacity 20"},
		{[]string{"--redis", loop, "--cost", "0"}, "--cost 0 must be at least 1"},
		{[]string{"--redis", loop, "--algo", "gcra", "--burst", "0"}, "--burst"},
		{[]string{"--redis", loop, "-o", "yaml"}, "--output"},
		{[]string{"--redis", loop, "-o", "html"}, "--output"},
		{[]string{"--redis", loop, "--out", "/nonexistent/dir/f.json"}, "/nonexistent/dir"},
		{[]string{"--redis", loop, "extra"}, "unknown command"},
	}
	for _, tt := range tests {
		tf := newTestFactory(t)
		tf.Redis = func(context.Context) (*redisconn.Conn, error) {
			t.Errorf("failover %v connected to Redis before refusing its input", tt.args)
			return nil, errors.New("no connection in this test")
		}
		args := append([]string{"failover"}, tt.args...)
		if code := tf.execute(t, args...); code != exitcode.Usage {
			t.Errorf("ratelimit %v exit = %d, want 2 (stderr %q)", args, code, tf.ErrOut.String())
		}
		if e := tf.ErrOut.String(); !strings.Contains(e, tt.want) || strings.Count(e, "\n") != 1 || strings.Contains(e, "hunter2") {
			t.Errorf("ratelimit %v stderr = %q, want one line with %q", args, e, tt.want)
		}
		if tf.Out.Len() != 0 {
			t.Errorf("ratelimit %v wrote %q to stdout", args, tf.Out.String())
		}
	}
}

// TestFailoverNotACluster: a standalone server and a cluster without
// replicas are exit 2, with what to run instead, and no document (no
// trial was measured).
func TestFailoverNotACluster(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, url, want string
	}{
		{"standalone", redistest.StandaloneSandbox(t).URL, "the server is standalone; run it against 'ratelimit sandbox --cluster --replicas 1'"},
		{"no replicas", redistest.ClusterSandbox(t).URL, "has no replica: failover needs a cluster with replicas"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tf := newTestFactory(t)
			if code := tf.execute(t, "failover", "--redis", tt.url, "--trials", "1", "-o", "json"); code != exitcode.Usage {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, tf.ErrOut.String())
			}
			if e := tf.ErrOut.String(); !strings.Contains(e, tt.want) || strings.Count(e, "\n") != 1 {
				t.Errorf("stderr %q, want one line with %q", e, tt.want)
			}
			if tf.Out.Len() != 0 {
				t.Errorf("a run without a trial wrote a document: %s", tf.Out.String())
			}
		})
	}
}

// TestFailoverHelp: the help says what is measured, the safety rule and
// the exit codes.
func TestFailoverHelp(t *testing.T) {
	tf := newTestFactory(t)
	if code := tf.execute(t, "failover", "--help"); code != exitcode.OK {
		t.Fatalf("--help exit %d", code)
	}
	help := tf.Out.String()
	for _, want := range []string{
		"extra admissions", "lost writes", "takeover", "no answer", "WAIT N --wait-timeout", "replica of the key's primary",
		"loopback", fault.AllowRemoteFlag, "Exit codes: 0", "1 a check failed", "2 bad input", "3 Redis unreachable",
		"--limiter-rate", "--max-extra", "Output formats (-o, --output): text, json, markdown, junit, github",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("failover --help lacks %q", want)
		}
	}
}

// startFailoverCluster starts the test's own cluster of 3 primaries with
// a replica each, as package failover's tests do: full syncs without the
// diskless delay and a node timeout of 1 s, so a failed-over primary is a
// replica in sync again soon.
func startFailoverCluster(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	redistest.Require(t)
	logs := &redistest.Buffer{}
	sb, err := sandbox.Start(context.Background(), sandbox.Config{Primaries: 3, Replicas: 1,
		Args: []string{"--repl-diskless-sync-delay", "0", "--cluster-node-timeout", "1000"}, Log: logs})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
		if err := sb.Stop(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	return sb
}

// TestFailoverCommand runs one trial end to end on a cluster with
// replicas: exit 0, a failover document with the trial on stdout and in
// --out, which 'ratelimit report' renders again; the run's keys are gone.
func TestFailoverCommand(t *testing.T) {
	sb := startFailoverCluster(t)
	out := filepath.Join(t.TempDir(), "failover.json")
	tf := newTestFactory(t)
	if code := tf.execute(t, "failover", "--redis", sb.URL, "--trials", "1", "--before", "200ms", "--after", "200ms", "-o", "json", "--out", out); code != exitcode.OK {
		t.Fatalf("exit %d, stderr %q\n%s", code, tf.ErrOut.String(), tf.Out.String())
	}
	if tf.ErrOut.Len() != 0 {
		t.Errorf("stderr is not empty without a terminal: %q", tf.ErrOut.String())
	}
	var res failover.Result
	if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
		t.Fatalf("decode -o json: %v\n%s", err, tf.Out.String())
	}
	if saved, err := os.ReadFile(out); err != nil || string(saved) != tf.Out.String() {
		t.Errorf("--out file differs from -o json output (read error %v)", err)
	}
	if res.Kind != failover.Kind || res.Version != failover.Version || res.Verdict != "pass" || res.Trials != 1 {
		t.Errorf("document kind %q version %d verdict %q trials %d", res.Kind, res.Version, res.Verdict, res.Trials)
	}
	if len(res.Variants) != 1 || res.Variants[0].Name != failover.VariantNoWait || len(res.Variants[0].Trials) != 1 {
		t.Fatalf("variants %+v, want no-wait with 1 trial", res.Variants)
	}
	tr := res.Variants[0].Trials[0]
	if tr.Decisions < 50 || tr.OldPrimary == "" || tr.NewPrimary == "" || tr.OldPrimary == tr.NewPrimary {
		t.Errorf("trial %+v, want decisions from one primary to another", tr)
	}
	if res.Server == nil || res.Server.Mode != "cluster" || !res.ClusterOK || !res.KeysDeleted {
		t.Errorf("server %+v, cluster ok %v, keys deleted %v", res.Server, res.ClusterOK, res.KeysDeleted)
	}
	if len(res.Command) < 2 || res.Command[1] != "failover" {
		t.Errorf("command %q", res.Command)
	}
	conn, err := redisconn.Open(context.Background(), redisconn.Options{URL: sb.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if left := redistest.ScanKeys(t, conn.Client, "failover:{"+res.RunID+"}:*"); len(left) != 0 {
		t.Errorf("keys left behind: %v", left)
	}
	if _, err := uuid.Parse(res.RunID); err != nil {
		t.Errorf("run id %q: %v", res.RunID, err)
	}

	tf2 := newTestFactory(t)
	if code := tf2.execute(t, "report", out); code != exitcode.OK {
		t.Fatalf("report of the failover document = %d: %s", code, tf2.ErrOut.String())
	}
	text := tf2.Out.String()
	for _, want := range []string{"failover force of the key's primary: 1 trial, without WAIT", tr.OldPrimary + " -> " + tr.NewPrimary, "verdict: PASS"} {
		if !strings.Contains(text, want) {
			t.Errorf("report text lacks %q:\n%s", want, text)
		}
	}
}
