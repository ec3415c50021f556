package fault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// startSandbox starts servers of the test's own, stopped at cleanup:
// faults never go to a server another test shares.
func startSandbox(t *testing.T, cfg sandbox.Config) *sandbox.Sandbox {
	t.Helper()
	redistest.Require(t)
	logs := &redistest.Buffer{}
	cfg.Log = logs
	sb, err := sandbox.Start(context.Background(), cfg)
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
	return sb
}

func nodeClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newInjector(t *testing.T, specs []string, opts Options) *Injector {
	t.Helper()
	plan, err := ParsePlan(specs)
	if err != nil {
		t.Fatal(err)
	}
	in, err := New(context.Background(), plan, opts)
	if err != nil {
		t.Fatalf("New(%v): %v", specs, err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

// fakeClock starts at a fixed time; Sleep moves it forward at once.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return nil
}

// holdClock is the wall clock, and tells when a fault is in force: Run
// sleeps for a timed fault's duration (at least `over`) only then.
type holdClock struct {
	Clock
	over time.Duration
	once sync.Once
	held chan struct{}
}

func newHoldClock(over time.Duration) *holdClock {
	return &holdClock{Clock: RealClock(), over: over, held: make(chan struct{})}
}

func (c *holdClock) Sleep(ctx context.Context, d time.Duration) error {
	if d >= c.over {
		c.once.Do(func() { close(c.held) })
	}
	return c.Clock.Sleep(ctx, d)
}

func (c *holdClock) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the fault never took effect")
	}
}

// undoneWithin bounds how soon a server whose pause or stop was undone
// answers: the faults these tests undo would hold it 20 s or more
// longer, so an answer within 5 s tells an undone fault from one that
// still holds however busy the machine is (a bound of 100 ms said the
// same on an idle machine and failed on a busy one).
const undoneWithin = 5 * time.Second

// answersWithin reports whether addr answers PING within d, on a new connection.
func answersWithin(t *testing.T, addr string, d time.Duration) bool {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: d, ReadTimeout: d, ContextTimeoutEnabled: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Ping(ctx).Err() == nil
}

// TestCancelDuringPauseUnpauses: Ctrl-C in the middle of a 30 s pause
// leaves the server answering at once, not after the 30 s.
func TestCancelDuringPauseUnpauses(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	clock := newHoldClock(10 * time.Second)
	in := newInjector(t, []string{"pause:30s@0s"}, Options{URL: sb.URL, Clock: clock})
	if s := in.Statement(); !strings.Contains(s, "pause:30s@0s holds every client's commands for 30s") || !strings.Contains(s, sb.URL) || strings.ContainsAny(s, "\n") {
		t.Errorf("Statement() = %q, want one line naming the pause and %s", s, sb.URL)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		out []Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := in.Run(ctx, time.Now())
		done <- result{out, err}
	}()
	clock.wait(t)
	if answersWithin(t, sb.Addrs[0], 400*time.Millisecond) {
		t.Fatal("the server answered PING during the pause: CLIENT PAUSE did not hold")
	}
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of the cancellation")
	}
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("Run error = %v, want context.Canceled", r.err)
	}
	if !answersWithin(t, sb.Addrs[0], undoneWithin) {
		t.Fatalf("the server did not answer PING within %s after Run returned: the pause still holds", undoneWithin)
	}
	if len(r.out) != 1 || r.out[0].End.IsZero() || r.out[0].End.Sub(r.out[0].Start) > 5*time.Second {
		t.Errorf("outcomes = %+v, want one pause ended soon after the cancellation", r.out)
	}
}

// TestPauseHoldsForItsDuration: a 1 s pause holds a client's PING until
// it ends, and the outcome's window is the pause's.
func TestPauseHoldsForItsDuration(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	clock := newHoldClock(500 * time.Millisecond)
	in := newInjector(t, []string{"pause:1s@0s"}, Options{URL: sb.URL, Clock: clock})
	c := nodeClient(t, sb.Addrs[0])
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan []Outcome, 1)
	go func() {
		out, err := in.Run(context.Background(), time.Now())
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- out
	}()
	clock.wait(t)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING during the pause: %v", err)
	}
	answered := time.Now()
	out := <-done
	if len(out) != 1 {
		t.Fatalf("outcomes = %+v, want 1", out)
	}
	o := out[0]
	if held := answered.Sub(o.Start); held < 900*time.Millisecond {
		t.Errorf("PING answered %s after the pause started, want about 1s", held)
	}
	if d := o.End.Sub(o.Start); d < time.Second || d > 1500*time.Millisecond {
		t.Errorf("pause window %s, want 1s to 1.5s (the last slice lapses within %s plus the server's tick)", d, pauseSlice)
	}
	if o.Err != nil {
		t.Errorf("outcome error: %v", o.Err)
	}
}

// TestCloseUndoesPause: Close from another goroutine ends the pause and
// the plan.
func TestCloseUndoesPause(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	clock := newHoldClock(10 * time.Second)
	in := newInjector(t, []string{"pause:30s@0s", "flush-scripts@40s"}, Options{URL: sb.URL, Clock: clock})
	done := make(chan error, 1)
	go func() {
		_, err := in.Run(context.Background(), time.Now())
		done <- err
	}()
	clock.wait(t)
	if err := in.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !answersWithin(t, sb.Addrs[0], undoneWithin) {
		t.Fatalf("the server did not answer within %s of Close: the pause still holds", undoneWithin)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Run error = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	if _, err := in.Run(context.Background(), time.Now()); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
}

// TestPauseWriteHoldsWritesOnly: reads answer during pause-write, a write
// waits until CLIENT UNPAUSE.
func TestPauseWriteHoldsWritesOnly(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	clock := newHoldClock(500 * time.Millisecond)
	in := newInjector(t, []string{"pause-write:800ms@0s"}, Options{URL: sb.URL, Clock: clock})
	c := nodeClient(t, sb.Addrs[0])
	key := redistest.Key(t, "pause-write")
	redistest.Cleanup(t, c, key)
	done := make(chan []Outcome, 1)
	go func() {
		out, err := in.Run(context.Background(), time.Now())
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- out
	}()
	clock.wait(t)
	ctx := context.Background()
	t0 := time.Now()
	if err := c.Get(ctx, key).Err(); err != redis.Nil {
		t.Fatalf("GET during pause-write = %v, want redis.Nil", err)
	}
	if d := time.Since(t0); d > 300*time.Millisecond {
		t.Errorf("GET took %s during pause-write, want no wait", d)
	}
	if err := c.Set(ctx, key, "1", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	wrote := time.Now()
	o := (<-done)[0]
	if wrote.Before(o.Start.Add(700 * time.Millisecond)) {
		t.Errorf("SET answered %s after the pause started, want it held about 800ms", wrote.Sub(o.Start))
	}
	if o.End.Sub(o.Start) < 800*time.Millisecond {
		t.Errorf("pause-write window %s, want at least 800ms", o.End.Sub(o.Start))
	}
}

// TestInstantFaultsOnFakeClock: offsets are kept exactly on an injected
// clock, drop-clients closes other clients but not the injector's, and
// flush-scripts empties the script cache.
func TestInstantFaultsOnFakeClock(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &fakeClock{now: start}
	in := newInjector(t, []string{"flush-scripts@10s", "drop-clients@1m", "pause:5s@2m"}, Options{URL: sb.URL, Clock: clock})
	ctx := context.Background()
	c := nodeClient(t, sb.Addrs[0])
	sha, err := c.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	out, err := in.Run(ctx, start)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []struct {
		kind       Kind
		start, end time.Duration
	}{{FlushScripts, 10 * time.Second, 10 * time.Second}, {DropClients, time.Minute, time.Minute}, {Pause, 2 * time.Minute, 2*time.Minute + 5*time.Second}}
	if len(out) != len(want) {
		t.Fatalf("outcomes = %+v, want %d", out, len(want))
	}
	for i, w := range want {
		o := out[i]
		if o.Spec.Kind != w.kind || !o.Start.Equal(start.Add(w.start)) || !o.End.Equal(start.Add(w.end)) || o.Err != nil {
			t.Errorf("outcome %d = %s %s..%s (%v), want %s at +%s..+%s", i, o.Spec, o.Start.Sub(start), o.End.Sub(start), o.Err, w.kind, w.start, w.end)
		}
	}
	if out[1].Detail != "closed 1 client connection" {
		t.Errorf("drop-clients detail = %q, want the test's one connection closed", out[1].Detail)
	}
	exists, err := c.ScriptExists(ctx, sha).Result()
	if err != nil {
		t.Fatal(err)
	}
	if exists[0] {
		t.Error("the script is still cached after flush-scripts")
	}
	after, err := c.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Errorf("CLIENT ID %d unchanged: drop-clients did not close the test's connection", after)
	}
}

// TestStopFreezesOwnedServer: stop freezes the sandbox process and a
// cancellation in the middle thaws it at once.
func TestStopFreezesOwnedServer(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	clock := newHoldClock(10 * time.Second)
	in := newInjector(t, []string{"stop:30s@0s"}, Options{URL: sb.URL, Sandboxes: []*sandbox.Sandbox{sb}, Clock: clock})
	if tg := in.Target(); tg.Node != sb.Nodes[0] || !strings.Contains(in.Statement(), "sandbox node, pid") {
		t.Errorf("target = %+v, statement %q; want the sandbox's node", tg, in.Statement())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := in.Run(ctx, time.Now())
		done <- err
	}()
	clock.wait(t)
	if answersWithin(t, sb.Addrs[0], 300*time.Millisecond) {
		t.Fatal("a stopped server answered PING")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run error = %v, want context.Canceled", err)
	}
	if !answersWithin(t, sb.Addrs[0], undoneWithin) {
		t.Fatalf("the server did not answer within %s of the cancellation: SIGCONT missing", undoneWithin)
	}
}

// TestRestartOwnedServer: restart starts a new process on the same port;
// the old one is gone and the data with it.
func TestRestartOwnedServer(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	ctx := context.Background()
	c := nodeClient(t, sb.Addrs[0])
	key := redistest.Key(t, "restart")
	if err := c.Set(ctx, key, "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	oldPID := sb.Nodes[0].PID()
	in := newInjector(t, []string{"restart@0s"}, Options{URL: sb.URL, Sandboxes: []*sandbox.Sandbox{sb}})
	out, err := in.Run(ctx, time.Now())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	newPID := sb.Nodes[0].PID()
	if newPID == oldPID {
		t.Fatalf("pid %d unchanged after restart", newPID)
	}
	if err := syscall.Kill(oldPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("old server pid %d still exists (kill 0: %v)", oldPID, err)
	}
	if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s after restart = %d, %v; want 0 (persistence is off)", key, n, err)
	}
	if o := out[0]; o.End.Before(o.Start) || !strings.Contains(o.Detail, "killed") {
		t.Errorf("outcome = %+v, want a restart window and detail", o)
	}
}

// TestFailoverOnCluster: a failover promotes the replica of the key's
// primary; a graceful failover brings the old primary back.
// awaitEpochs waits until every node of sb lists every node with the same
// configuration epoch and the primaries' epochs differ: a cluster just
// made resolves its epoch collisions for a while, and a replica that
// still takes its primary's epoch for 0 is refused every vote ("slot
// epoch (2) > reqEpoch (0)") and its failover times out.
func awaitEpochs(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	ctx := context.Background()
	clients := map[string]*redis.Client{}
	for _, addr := range sb.Addrs {
		clients[addr] = nodeClient(t, addr)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		why := ""
		seen := map[string]int64{}
		for _, addr := range sb.Addrs {
			nodes, err := Nodes(ctx, clients[addr])
			if err != nil {
				why = err.Error()
				break
			}
			for _, n := range nodes {
				e, ok := seen[n.ID]
				if ok && e != n.Epoch && n.PrimaryID == "" {
					why = fmt.Sprintf("%s lists %s with epoch %d, another node %d", addr, n.ID, n.Epoch, e)
				}
				if n.PrimaryID == "" {
					seen[n.ID] = n.Epoch
				}
			}
			for _, n := range nodes {
				if n.PrimaryID != "" {
					if e, ok := seen[n.PrimaryID]; !ok || e != n.Epoch {
						why = fmt.Sprintf("%s lists replica %s with its primary's epoch %d, the primary's is %d", addr, n.ID, n.Epoch, e)
					}
				}
			}
		}
		epochs := map[int64]bool{}
		for _, e := range seen {
			if epochs[e] {
				why = fmt.Sprintf("two primaries share epoch %d", e)
			}
			epochs[e] = true
		}
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's epochs did not settle in 30s: %s", why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestFailoverOnCluster(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{Primaries: 3, Replicas: 1, Args: []string{"--repl-diskless-sync-delay", "0"}})
	ctx := context.Background()
	key := "fault:{" + strings.ReplaceAll(t.Name(), "/", "-") + "}:k"
	seed := nodeClient(t, sb.Addrs[0])
	// a replica attached a moment ago may not be known to every node yet
	var before Shard
	for deadline := time.Now().Add(10 * time.Second); ; {
		var err error
		before, err = FindShard(ctx, seed, key)
		if err == nil && len(before.Replicas) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shard %+v, %v; want one replica", before, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	awaitEpochs(t, sb)
	// on a cluster the key decides the shard: without one, exit 2
	plan, _ := ParsePlan([]string{"failover@0s"})
	if _, err := New(ctx, plan, Options{URL: sb.URL}); err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "needs the key") {
		t.Errorf("failover on a cluster without a key: %v, want exit 2", err)
	}
	for i, mode := range []FailoverMode{FailoverForce, FailoverGraceful} {
		in := newInjector(t, []string{"failover@0s"}, Options{URL: sb.URL, Key: key, Failover: mode, Sandboxes: []*sandbox.Sandbox{sb}})
		out, err := in.Run(ctx, time.Now())
		if err != nil {
			t.Fatalf("failover %s: %v", mode, err)
		}
		o := out[0]
		wantNew, wantOld := before.Replicas[0].Addr, before.Primary.Addr
		if i == 1 {
			wantNew, wantOld = wantOld, wantNew
		}
		if o.NewPrimary != wantNew || o.OldPrimary != wantOld {
			t.Errorf("failover %s: %s -> %s, want %s -> %s", mode, o.OldPrimary, o.NewPrimary, wantOld, wantNew)
		}
		if d := o.End.Sub(o.Start); d < 0 || d > promoteWait {
			t.Errorf("failover %s took %s", mode, d)
		}
		_ = in.Close()
	}
	// the cluster is whole again
	deadline := time.Now().Add(10 * time.Second)
	for _, addr := range sb.Addrs {
		c := nodeClient(t, addr)
		for {
			ok, state, err := ClusterOK(ctx, c)
			if err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: %s, %v; want cluster_state:ok", addr, state, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestFailoverNeedsACluster: on a standalone server the failover fault is
// exit 2, said after connecting.
// TestFailoverStandaloneNeedsAReplica: a standalone primary without a
// replica has nothing to promote (exit 2, before anything is changed).
func TestFailoverStandaloneNeedsAReplica(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	plan, err := ParsePlan([]string{"failover@0s"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), plan, Options{URL: sb.URL})
	if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "without one") {
		t.Errorf("New(failover on a lone standalone) error = %v, want exit 2 saying it has no replica", err)
	}
}

// awaitReplica waits until c, just made a replica, has its link to its
// primary up (master_link_status:up, no sync in progress): REPLICAOF
// answers at once and connects later, and until then the primary lists
// no replica at all.
func awaitReplica(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		ok, err := InSync(ctx, c)
		if err == nil && ok {
			return
		}
		select {
		case <-ctx.Done():
			m, _ := replication(context.Background(), c)
			t.Fatalf("the replica's link is not up after a minute (master_link_status:%s, %v)", m["master_link_status"], err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestFailoverStandalonePair: on a primary with a replica (two servers of
// the test's own), the replica is promoted and the old primary made its
// replica: a write to the old primary then meets READONLY, and the
// promoted server has the data written before.
func TestFailoverStandalonePair(t *testing.T) {
	t.Parallel()
	primary := startSandbox(t, sandbox.Config{})
	replica := startSandbox(t, sandbox.Config{})
	pc, rc := nodeClient(t, primary.Addrs[0]), nodeClient(t, replica.Addrs[0])
	ctx := context.Background()
	host, port, _ := net.SplitHostPort(primary.Addrs[0])
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	// the failover is refused (no replica) until the link is up, and a
	// write is the replica's only once acknowledged (WAIT)
	awaitReplica(t, rc)
	if err := pc.Set(ctx, "fault:{pair}:before", "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := pc.Do(ctx, "WAIT", 1, 30000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v: the replica did not acknowledge the write", n, err)
	}
	in := newInjector(t, []string{"failover@0s"}, Options{URL: primary.URL})
	if !strings.Contains(in.Statement(), "REPLICAOF NO ONE") {
		t.Errorf("statement %q does not say what will be done", in.Statement())
	}
	out, err := in.Run(ctx, time.Now())
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, out)
	}
	if len(out) != 1 || out[0].NewPrimary != replica.Addrs[0] || out[0].OldPrimary != primary.Addrs[0] || out[0].Start.IsZero() {
		t.Fatalf("outcome %+v", out)
	}
	if role := roleOf(t, rc); role != "master" {
		t.Errorf("the replica is a %s after the failover", role)
	}
	if role := roleOf(t, pc); role != "slave" {
		t.Errorf("the old primary is a %s after the failover", role)
	}
	if err := pc.Set(ctx, "fault:{pair}:after", "1", time.Minute).Err(); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("a write to the old primary = %v, want READONLY", err)
	}
	if v, err := rc.Get(ctx, "fault:{pair}:before").Result(); err != nil || v != "1" {
		t.Errorf("the promoted replica lost the write made before: %q %v", v, err)
	}
	rc.Del(ctx, "fault:{pair}:before")
}

func roleOf(t *testing.T, c *redis.Client) string {
	t.Helper()
	m, err := replication(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return m["role"]
}

// panicClock panics in the Sleep that holds a timed fault: Run's own
// crash path must still undo the fault.
type panicClock struct {
	Clock
	over time.Duration
}

func (c panicClock) Sleep(ctx context.Context, d time.Duration) error {
	if d >= c.over {
		panic("clock broke during the fault")
	}
	return c.Clock.Sleep(ctx, d)
}

func TestPanicDuringPauseUnpauses(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	in := newInjector(t, []string{"pause:30s@0s"}, Options{URL: sb.URL, Clock: panicClock{Clock: RealClock(), over: 10 * time.Second}})
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		_, _ = in.Run(context.Background(), time.Now())
	}()
	select {
	case r := <-recovered:
		if r == nil {
			t.Fatal("Run returned without the clock's panic")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not panic and return")
	}
	if !answersWithin(t, sb.Addrs[0], undoneWithin) {
		t.Fatalf("the server did not answer within %s of the panic: the pause still holds", undoneWithin)
	}
}

// TestPasswordNeverShown: a server behind a password is paused through
// the raw connection's AUTH, and neither the statement nor an outcome
// nor an error shows the password.
func TestPasswordNeverShown(t *testing.T) {
	const pw = "pw-secret-4711"
	sb := startSandbox(t, sandbox.Config{Password: pw})
	url := "redis://:" + pw + "@" + sb.Addrs[0]
	clock := newHoldClock(200 * time.Millisecond)
	in := newInjector(t, []string{"pause:300ms@0s", "drop-clients@1s"}, Options{URL: url, Clock: clock})
	out, err := in.Run(context.Background(), time.Now())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, s := range []string{in.Statement(), out[0].Server, out[1].Server, out[0].Detail} {
		if strings.Contains(s, pw) {
			t.Errorf("%q shows the password", s)
		}
	}
	if d := out[0].End.Sub(out[0].Start); d < 300*time.Millisecond {
		t.Errorf("pause window %s, want at least 300ms (AUTH on the pause connection failed?)", d)
	}
	bad := "redis://:wrong-" + pw + "@" + sb.Addrs[0]
	plan, _ := ParsePlan([]string{"flush-scripts@0s"})
	if _, err := New(context.Background(), plan, Options{URL: bad}); err == nil || strings.Contains(err.Error(), pw) {
		t.Errorf("New with a wrong password: %v; want an error without the password", err)
	}
}
