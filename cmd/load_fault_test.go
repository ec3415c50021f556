package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
	"github.com/ratelimit-dev/ratelimit/serve"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// The fault tests run load against serve in this process, in front of a
// redis-server of the test's own (faults never reach a server another
// test shares), at 100/s against a bucket of 10 refilled at 10/s.

const faultExpect = "token-bucket:burst=10,rate=10/s"

type faultRig struct {
	sb     *sandbox.Sandbox
	redis  string // the sandbox's URL, for --fault-redis
	target string // serve's /hello
	ts     *httptest.Server
}

func startFaultRig(t *testing.T, fail serve.FailMode, timeout time.Duration) *faultRig {
	t.Helper()
	redistest.Require(t)
	logs := &redistest.Buffer{}
	sb, err := sandbox.Start(context.Background(), sandbox.Config{Log: logs})
	if err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
		if err := sb.Stop(); err != nil {
			t.Errorf("stop sandbox: %v", err)
		}
	})
	ro := &redis.Options{Addr: sb.Addrs[0], DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true}
	if timeout == serve.WaitForever {
		ro.ReadTimeout, ro.WriteTimeout, ro.PoolTimeout, ro.MaxRetries = -1, -1, time.Hour, -1
	}
	c := redis.NewClient(ro)
	t.Cleanup(func() { _ = c.Close() })
	h, err := serve.New(serve.Config{
		Store: redislimit.NewStore(c), Params: limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("10/s")},
		KeyPrefix: "cmd-fault-" + uuid.NewString()[:8], RedisTimeout: timeout, Fail: fail,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &faultRig{sb: sb, redis: sb.URL, target: ts.URL + "/hello", ts: ts}
}

// metric reads one series of serve's /metrics.
func (r *faultRig) metric(t *testing.T, series string) int64 {
	t.Helper()
	resp, err := http.Get(r.ts.URL + serve.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /metrics", series)
	return 0
}

// loadFault runs load with faults and returns the exit code and the document.
func loadFault(t *testing.T, tf *testFactory, r *faultRig, args ...string) (int, tally.Result) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run.json")
	base := []string{"load", "--target", r.target, "--rate", "100/s", "--expect", faultExpect, "--fault-redis", r.redis, "--out", out}
	code := tf.execute(t, append(base, args...)...)
	var res tally.Result
	if b, err := os.ReadFile(out); err == nil {
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("read %s: %v", out, err)
		}
	}
	return code, res
}

func faultOf(t *testing.T, res tally.Result) judge.FaultResult {
	t.Helper()
	if res.Faults == nil || len(res.Faults.Faults) != 1 {
		t.Fatalf("faults = %+v, want one", res.Faults)
	}
	return res.Faults.Faults[0]
}

func duringOf(res tally.Result) judge.FaultWindow {
	for _, w := range res.Faults.Windows {
		if w.Phase == "during" {
			return w
		}
	}
	return judge.FaultWindow{}
}

// TestLoadFaultPauseFailOpenClosed: a pause of 2 s under serve --fail open
// is fail-open (--during-fault open passes, closed fails naming the
// fault), and the requests it counts agree with serve's own fail_open
// count; --fail closed the other way round.
func TestLoadFaultPauseFailOpenClosed(t *testing.T) {
	for _, tt := range []struct {
		fail       serve.FailMode
		behaviour  string
		pass, deny string
		series     string
	}{
		{serve.FailOpen, judge.FailOpen, "open", "closed", `ratelimit_requests_total{decision="fail_open"}`},
		{serve.FailClosed, judge.FailClosed, "closed", "open", `ratelimit_requests_total{decision="fail_closed"}`},
	} {
		t.Run(string(tt.fail), func(t *testing.T) {
			r := startFaultRig(t, tt.fail, 300*time.Millisecond)
			before := r.metric(t, tt.series)
			tf := newTestFactory(t)
			code, res := loadFault(t, tf, r, "--duration", "7s", "--fault", "pause:2s@3s", "--during-fault", tt.pass)
			counted := r.metric(t, tt.series) - before
			if code != exitcode.OK {
				t.Fatalf("--during-fault %s against serve --fail %s = %d\n%s\n%s", tt.pass, tt.fail, code, tf.Out.String(), tf.ErrOut.String())
			}
			f := faultOf(t, res)
			w := duringOf(res)
			if f.Behaviour != tt.behaviour {
				t.Fatalf("behaviour %q, want %q: %s", f.Behaviour, tt.behaviour, f.Line)
			}
			if !strings.Contains(tf.ErrOut.String(), "faults for redis://127.0.0.1:") {
				t.Errorf("no statement of the faults before the run on stderr:\n%s", tf.ErrOut.String())
			}
			if !strings.Contains(tf.Out.String(), "pause:2s@3s at ") {
				t.Errorf("no fault line in the text report:\n%s", tf.Out.String())
			}
			// serve fails open (or closed) for every request of the
			// window, and for those in flight at its edges: the limiter's
			// deadline plus the baseline p99 at 100/s, and the tolerance
			var seen int64 = w.Admitted
			if tt.fail == serve.FailClosed {
				seen = w.ServerErrors
			}
			tol := int64(100*(0.05+2*res.Faults.BaselineP99Ms/1000)) + w.Tolerance + 5
			if d := seen - counted; d > tol || -d > tol {
				t.Errorf("the window counts %d, serve's /metrics %d (tolerance %d)", seen, counted, tol)
			}
			t.Logf("%s; /metrics %s +%d", f.Line, tt.series, counted)

			tf = newTestFactory(t)
			code, res = loadFault(t, tf, r, "--duration", "7s", "--fault", "pause:2s@3s", "--during-fault", tt.deny)
			if code != exitcode.Failed {
				t.Fatalf("--during-fault %s against serve --fail %s = %d, want 1\n%s", tt.deny, tt.fail, code, tf.ErrOut.String())
			}
			if e := tf.ErrOut.String(); !strings.Contains(e, "fault:pause:2s@3s") || !strings.Contains(e, tt.behaviour) {
				t.Errorf("the error line does not name the window and what it saw: %q", e)
			}
		})
	}
}

// TestLoadFaultStalled: serve --limiter-timeout 0 waits for Redis, so a
// pause stalls it: load says stalled, and --during-fault open fails.
func TestLoadFaultStalled(t *testing.T) {
	t.Parallel()
	r := startFaultRig(t, serve.FailOpen, serve.WaitForever)
	tf := newTestFactory(t)
	code, res := loadFault(t, tf, r, "--duration", "7s", "--fault", "pause:2s@3s", "--during-fault", "open")
	if code != exitcode.Failed {
		t.Fatalf("stalled target with --during-fault open = %d, want 1\n%s", code, tf.ErrOut.String())
	}
	f := faultOf(t, res)
	if f.Behaviour != judge.Stalled {
		t.Fatalf("behaviour %q, want stalled: %s", f.Behaviour, f.Line)
	}
	if w := duringOf(res); w.MaxMs < 1500 {
		t.Errorf("the longest wait in the window is %v ms, want about the pause", w.MaxMs)
	}
	t.Log(f.Line)
}

// TestLoadFaultScriptsAndClients: SCRIPT FLUSH and CLIENT KILL under load:
// serve keeps answering (every request has a status), and each fault is
// reported with what it measured.
func TestLoadFaultScriptsAndClients(t *testing.T) {
	t.Parallel()
	// serve waits up to 2 s for Redis: on a busy machine a 50 ms deadline
	// fails open in the baseline already, which this test is not about
	// (TestLoadFaultPauseFailOpenClosed is)
	r := startFaultRig(t, serve.FailOpen, 2*time.Second)
	tf := newTestFactory(t)
	code, res := loadFault(t, tf, r, "--duration", "6s", "--fault", "flush-scripts@2s", "--fault", "drop-clients@3500ms")
	if code != exitcode.OK {
		t.Fatalf("load = %d\n%s\n%s", code, tf.Out.String(), tf.ErrOut.String())
	}
	if res.Faults == nil || len(res.Faults.Faults) != 2 {
		t.Fatalf("faults %+v", res.Faults)
	}
	for _, f := range res.Faults.Faults {
		if f.Behaviour == judge.NotInjected || f.Behaviour == judge.Stalled || f.Behaviour == judge.FailClosed {
			t.Errorf("%s", f.Line)
		}
		t.Log(f.Line)
	}
	if res.Errors["connection reset"]+res.Errors["eof"] > 0 || res.Responses != res.Completed {
		t.Errorf("serve did not answer every request: %d responses of %d, errors %v", res.Responses, res.Completed, res.Errors)
	}
}

// TestLoadFaultRestart: a restart of a server this process started (the
// test's sandbox, handed to the factory) is reported with its time to
// recover, and the killed process is gone.
func TestLoadFaultRestart(t *testing.T) {
	r := startFaultRig(t, serve.FailOpen, 300*time.Millisecond)
	oldPID := r.sb.Nodes[0].PID()
	tf := newTestFactory(t)
	tf.Sandboxes = []*sandbox.Sandbox{r.sb}
	code, res := loadFault(t, tf, r, "--duration", "6s", "--fault", "restart@2s", "--recover-within", "3s")
	if code != exitcode.OK {
		t.Fatalf("load = %d\n%s\n%s", code, tf.Out.String(), tf.ErrOut.String())
	}
	f := faultOf(t, res)
	if !f.Recovered || !f.RecoverPass {
		t.Errorf("not recovered: %s", f.Line)
	}
	if newPID := r.sb.Nodes[0].PID(); newPID == oldPID || !r.sb.Nodes[0].Running() {
		t.Errorf("pid %d before, %d after (running %v)", oldPID, newPID, r.sb.Nodes[0].Running())
	}
	if err := syscall.Kill(oldPID, 0); err == nil {
		t.Errorf("the killed server (pid %d) is still there", oldPID)
	}
	t.Log(f.Line)
	for _, w := range res.Faults.Windows {
		t.Logf("%+v", w)
	}

	// without the sandbox handed over, restart is refused before the run
	tf = newTestFactory(t)
	if code := tf.execute(t, "load", "--target", r.target, "--rate", "10/s", "--duration", "4s", "--expect", faultExpect,
		"--fault-redis", r.redis, "--fault", "restart@2s"); code != exitcode.Usage || !strings.Contains(tf.ErrOut.String(), "sandbox") {
		t.Errorf("restart of a server this process did not start = %d: %s", code, tf.ErrOut.String())
	}
}

// TestLoadFaultInterruptUnpauses: Ctrl-C during a pause ends the run and
// the server answers again at once.
func TestLoadFaultInterruptUnpauses(t *testing.T) {
	r := startFaultRig(t, serve.FailOpen, 300*time.Millisecond)
	tf := newTestFactory(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(2500*time.Millisecond, cancel) // the pause holds from 1s to 21s
	code := run(ctx, tf.Factory, []string{"load", "--target", r.target, "--rate", "20/s", "--duration", "30s", "--expect", faultExpect,
		"--fault-redis", r.redis, "--fault", "pause:20s@1s"})
	if code != exitcode.Interrupted {
		t.Fatalf("interrupted load = %d, want 130\n%s", code, tf.ErrOut.String())
	}
	// the pause would hold the write for 18 s more: an answer within 5 s
	// (the read timeout) is the undone pause's, however busy the machine
	c := redis.NewClient(&redis.Options{Addr: r.sb.Addrs[0], ReadTimeout: 5 * time.Second, MaxRetries: -1})
	defer c.Close()
	if err := c.Set(context.Background(), "cmd-fault-after-interrupt", "1", time.Minute).Err(); err != nil {
		t.Fatalf("the server does not answer a write within 5s of Ctrl-C (the pause holds until 21s): %v", err)
	}
	c.Del(context.Background(), "cmd-fault-after-interrupt")
}

// TestLoadFaultRefusals: faults go only where the user said, decided from
// the URL before anything is dialled (names under .invalid never resolve;
// the socket path belongs to no server of this test).
func TestLoadFaultRefusals(t *testing.T) {
	target := "http://127.0.0.1:1/hello" // never reached: every case is refused first
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--fault", "pause:1s@2s", "--fault-redis", "redis://cache.example.invalid:6379"}, "--allow-faults-on-remote"},
		{[]string{"--fault", "pause:1s@2s", "--fault-redis", "unix:///var/run/redis/redis-server.sock"}, "--allow-faults-on-remote"},
		{[]string{"--fault", "pause:1s@2s"}, "--fault-redis"},
		{[]string{"--fault-redis", "redis://127.0.0.1:1"}, "needs --fault"},
		{[]string{"--fault", "pause:1s@2s", "--fault-redis", "redis://127.0.0.1:1", "--during-fault", "sometimes"}, "--during-fault"},
		{[]string{"--fault", "pause:1s@0s", "--fault-redis", "redis://127.0.0.1:1"}, "baseline"},
		{[]string{"--fault", "pause:9s@2s", "--fault-redis", "redis://127.0.0.1:1"}, "too late"},
		{[]string{"--fault", "explode@2s", "--fault-redis", "redis://127.0.0.1:1"}, "invalid fault"},
	} {
		tf := newTestFactory(t)
		args := append([]string{"load", "--target", target, "--rate", "10/s", "--duration", "10s", "--expect", faultExpect}, tt.args...)
		code := tf.execute(t, args...)
		e := tf.ErrOut.String()
		if code != exitcode.Usage || !strings.Contains(e, tt.want) || strings.Count(strings.TrimSpace(e), "\n") > 0 {
			t.Errorf("%v = %d %q, want exit 2 in one line naming %q", tt.args, code, e, tt.want)
		}
	}
	tf := newTestFactory(t)
	code := tf.execute(t, "load", "--target", target, "--rate", "10/s", "--duration", "10s", "--fault", "pause:1s@2s", "--fault-redis", "redis://127.0.0.1:1")
	if code != exitcode.Usage || !strings.Contains(tf.ErrOut.String(), "--expect") {
		t.Errorf("--fault without --expect = %d %q", code, tf.ErrOut.String())
	}
}

// TestLoadFaultStandaloneFailover: a failover of a standalone pair (the
// test's two servers, the second a replica of the first) leaves serve's
// server a read-only replica: its writes meet READONLY, so serve --fail
// open fails open until the run ends.
func TestLoadFaultStandaloneFailover(t *testing.T) {
	r := startFaultRig(t, serve.FailOpen, 300*time.Millisecond)
	replica, err := sandbox.Start(context.Background(), sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Stop() })
	rc := redis.NewClient(&redis.Options{Addr: replica.Addrs[0], MaxRetries: -1})
	defer rc.Close()
	host, port, _ := strings.Cut(r.sb.Addrs[0], ":")
	if err := rc.Do(context.Background(), "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, _ := rc.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not sync: %s", info)
		}
	}
	tf := newTestFactory(t)
	code, res := loadFault(t, tf, r, "--duration", "6s", "--fault", "failover@2s", "--during-fault", "open")
	if code != exitcode.OK {
		t.Fatalf("load = %d\n%s\n%s", code, tf.Out.String(), tf.ErrOut.String())
	}
	f := faultOf(t, res)
	if f.Behaviour != judge.FailOpen || !strings.Contains(f.Detail, "promoted") {
		t.Errorf("%s (%s)", f.Line, f.Detail)
	}
	if f.Recovered {
		t.Errorf("recovered, but serve's server stays a replica: %s", f.Line)
	}
	t.Log(f.Line)
}

// TestLoadFaultNotBehindTarget: a pause of a Redis the target does not
// use changes nothing the target does: unaffected, and --during-fault
// unaffected passes (the fault window judged with the baseline's terms,
// so neither the pause nor a busy machine inflates or fakes a failure).
func TestLoadFaultNotBehindTarget(t *testing.T) {
	t.Parallel()
	r := startFaultRig(t, serve.FailOpen, 2*time.Second)
	other, err := sandbox.Start(context.Background(), sandbox.Config{})
	if err != nil {
		t.Fatalf("start the other sandbox: %v", err)
	}
	t.Cleanup(func() { _ = other.Stop() })
	r.redis = other.URL
	tf := newTestFactory(t)
	code, res := loadFault(t, tf, r, "--duration", "7s", "--fault", "pause:2s@3s", "--during-fault", "unaffected")
	if code != exitcode.OK {
		t.Fatalf("a pause of another Redis = %d, want 0\n%s", code, tf.ErrOut.String())
	}
	if f := faultOf(t, res); f.Behaviour != judge.Unaffected {
		t.Fatalf("behaviour %q, want unaffected: %s", f.Behaviour, f.Line)
	}
}
