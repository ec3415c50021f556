package fault

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// childURL names, in a re-executed test binary, the server the child
// plays its fault on (a server the parent test started).
const childURL = "RATELIMIT_FAULT_TEST_CHILD_URL"

// announceClock is the wall clock, and prints "held" on stdout when Run
// sleeps through a timed fault (the fault is in force).
type announceClock struct{ Clock }

func (c announceClock) Sleep(ctx context.Context, d time.Duration) error {
	if d >= 5*time.Second {
		fmt.Println("held")
	}
	return c.Clock.Sleep(ctx, d)
}

// writeWithin reports whether a SET on a new connection is answered
// within d.
func writeWithin(addr, key string, d time.Duration) bool {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: d, ReadTimeout: d, WriteTimeout: d, ContextTimeoutEnabled: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Set(ctx, key, "1", time.Minute).Err() == nil
}

// TestPauseWriteReleasedWhenToolKilled (issue 26): a process playing
// pause-write:20s that is killed with SIGKILL (no undo can run) leaves
// the server taking writes again within one slice, not after the 20 s a
// single CLIENT PAUSE 20000 WRITE would hold them.
func TestPauseWriteReleasedWhenToolKilled(t *testing.T) {
	if url := os.Getenv(childURL); url != "" {
		// the child: play the fault until killed
		plan, err := ParsePlan([]string{"pause-write:20s@0s"})
		if err != nil {
			t.Fatal(err)
		}
		in, err := New(context.Background(), plan, Options{URL: url, Clock: announceClock{RealClock()}})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		_, err = in.Run(context.Background(), time.Now())
		t.Fatalf("the child's Run returned (%v); it should have been killed", err)
	}
	sb := startSandbox(t, sandbox.Config{})
	addr := sb.Addrs[0]
	key := redistest.Key(t, "pause-write-killed")
	redistest.Cleanup(t, nodeClient(t, addr), key)

	child := exec.Command(os.Args[0], "-test.run=^TestPauseWriteReleasedWhenToolKilled$", "-test.count=1")
	child.Env = append(os.Environ(), childURL+"="+sb.URL)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	held := make(chan bool, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if s.Text() == "held" {
				held <- true
				return
			}
		}
		held <- false
	}()
	select {
	case ok := <-held:
		if !ok {
			t.Fatal("the child ended without holding the pause")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not hold the pause within 30s")
	}
	if writeWithin(addr, key, 300*time.Millisecond) {
		t.Fatal("a write was answered during pause-write: the pause does not hold")
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed := time.Now()
	// generous against a busy machine, far below the old 18+ s
	const bound = 2 * time.Second
	for !writeWithin(addr, key, 100*time.Millisecond) {
		if time.Since(killed) > 5*time.Second {
			t.Fatalf("writes still refused %s after the tool was killed, want within %s (one %s slice plus the server's tick)", time.Since(killed).Round(time.Millisecond), bound, pauseSlice)
		}
	}
	took := time.Since(killed)
	t.Logf("writes accepted again %s after SIGKILL", took.Round(time.Millisecond))
	if took > bound {
		t.Errorf("writes accepted again %s after SIGKILL, want within %s", took.Round(time.Millisecond), bound)
	}
}

// TestForeignPauseRefused (issue 26): a pause fault is refused (exit 2,
// one line naming the server) while another client's CLIENT PAUSE is in
// force, whether it was there before New or began before the fault is
// played, and that pause is never ended by the tool.
func TestForeignPauseRefused(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	addr := sb.Addrs[0]
	ctx := context.Background()
	other := nodeClient(t, addr)
	key := redistest.Key(t, "foreign-pause")
	redistest.Cleanup(t, other, key)
	unpause := func() {
		if err := other.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Fatalf("CLIENT UNPAUSE: %v", err)
		}
	}
	wantRefusal := func(err error, what string) {
		t.Helper()
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "another client's CLIENT PAUSE is in force on "+sb.URL) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (exit %d), want one exit-2 line saying another client's CLIENT PAUSE is in force on %s", what, err, exitcode.Code(err), sb.URL)
		}
		if writeWithin(addr, key, 300*time.Millisecond) {
			t.Errorf("%s: a write was answered: the other client's pause was ended", what)
		}
	}

	// in force before New
	for _, spec := range []string{"pause-write:500ms@0s", "pause:500ms@0s"} {
		if err := other.Do(ctx, "CLIENT", "PAUSE", 30000, "WRITE").Err(); err != nil {
			t.Fatal(err)
		}
		plan, _ := ParsePlan([]string{spec})
		in, err := New(ctx, plan, Options{URL: sb.URL})
		if err == nil {
			_, err = in.Run(ctx, time.Now())
			_ = in.Close()
		}
		wantRefusal(err, "New("+spec+")")
		unpause()
	}

	// begun after New, before the fault is played
	for _, spec := range []string{"pause-write:500ms@0s", "pause:500ms@0s"} {
		in := newInjector(t, []string{spec}, Options{URL: sb.URL})
		if err := other.Do(ctx, "CLIENT", "PAUSE", 30000, "WRITE").Err(); err != nil {
			t.Fatal(err)
		}
		out, err := in.Run(ctx, time.Now())
		wantRefusal(err, "Run("+spec+")")
		if len(out) != 1 || out[0].Err == nil {
			t.Errorf("Run(%s) outcomes %+v, want the refused fault with its error", spec, out)
		}
		_ = in.Close()
		if writeWithin(addr, key, 300*time.Millisecond) {
			t.Errorf("Close after Run(%s): a write was answered: the other client's pause was ended", spec)
		}
		unpause()
	}
	if !writeWithin(addr, key, time.Second) {
		t.Fatal("writes still held after CLIENT UNPAUSE")
	}
}

// TestSecondRunSeesFirstPause (issue 26): while one injector holds a
// pause, a second one against the same server says another pause is in
// force (exit 2), with a pause in its plan or not, instead of timing out
// (exit 3 "i/o timeout").
func TestSecondRunSeesFirstPause(t *testing.T) {
	sb := startSandbox(t, sandbox.Config{})
	clock := newHoldClock(time.Second)
	first := newInjector(t, []string{"pause:6s@0s"}, Options{URL: sb.URL, Clock: clock})
	done := make(chan error, 1)
	go func() {
		_, err := first.Run(context.Background(), time.Now())
		done <- err
	}()
	clock.wait(t)
	for _, spec := range []string{"pause:1s@0s", "pause-write:1s@0s", "flush-scripts@0s"} {
		plan, _ := ParsePlan([]string{spec})
		start := time.Now()
		in, err := New(context.Background(), plan, Options{URL: sb.URL, Timeout: 500 * time.Millisecond})
		if err == nil {
			_ = in.Close()
		}
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "another client's CLIENT PAUSE is in force on "+sb.URL+" (every command held)") {
			t.Errorf("second New(%s) during the first's pause = %v (exit %d), want exit 2 saying another pause is in force", spec, err, exitcode.Code(err))
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("second New(%s) took %s", spec, d)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("the first run: %v", err)
	}
	if !answersWithin(t, sb.Addrs[0], undoneWithin) {
		t.Errorf("the server does not answer within %s after the first run", undoneWithin)
	}
}
