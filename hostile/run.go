package hostile

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// MaxRSS is the memory bound every hostile case holds the command to.
const MaxRSS = 200 << 20

// Tool returns the ratelimit command to run: $RATELIMIT_TOOL when set (a
// build to hold to the same bounds, e.g. an older one as the negative
// control), else the module's main package built once into a temporary
// directory of t.
func Tool(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("RATELIMIT_TOOL"); p != "" {
		return p
	}
	// go test puts the go command that runs the tests first in PATH
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("hostile: no go command to build ratelimit with: %v", err)
	}
	out := filepath.Join(t.TempDir(), "ratelimit")
	cmd := exec.Command(goBin, "build", "-o", out, "github.com/ratelimit-dev/ratelimit")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hostile: go build ratelimit: %v\n%s", err, b)
	}
	return out
}

// Outcome is how one run of the command ended.
type Outcome struct {
	// Code is the exit code; -1 when the command was killed at the bound.
	Code           int
	Stdout, Stderr string
	Elapsed        time.Duration
	// PeakRSS is the child's peak resident set in bytes, as its VmHWM
	// read every 10 ms from /proc (the last moments may be missed);
	// RSSBound is getrusage's ru_maxrss of the child, which cannot be
	// below the true peak but also counts the test process's own peak
	// (the child runs in the test's memory until it execs: os/exec
	// starts it with CLONE_VM); TestRSS is that peak of the test process
	// (its VmHWM) read just after the child execed. -1 where the
	// platform does not say.
	PeakRSS, RSSBound, TestRSS int64
}

// Peak is the child's peak resident set as well as it is known:
// RSSBound when it is above the test process's own peak, for then it is
// the child's own (and exact); else the sampled VmHWM. A test process
// grown big by other tests running beside it (go test runs a package's
// parallel tests in one process) thus never counts as the child's.
func (o Outcome) Peak() int64 {
	if o.TestRSS < 0 || o.RSSBound > o.TestRSS {
		return max(o.PeakRSS, o.RSSBound)
	}
	return o.PeakRSS
}

// Run runs tool with args (stdin from in when not nil) and kills it after
// kill, so a command that hangs fails its test instead of the suite.
func Run(t testing.TB, tool string, kill time.Duration, in io.Reader, args ...string) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kill)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.Stdin = in
	var stdout, stderr capped
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Start()
	if err != nil {
		t.Fatalf("hostile: start %s: %v", tool, err)
	}
	// Start returns once the child has execed: the test's peak now is at
	// least what the child's ru_maxrss counts of it
	testRSS := selfHWM()
	stop, hwm := make(chan struct{}), make(chan int64, 1)
	go watchHWM(cmd.Process.Pid, stop, hwm)
	err = cmd.Wait()
	close(stop)
	o := Outcome{Elapsed: time.Since(start), Stdout: stdout.String(), Stderr: stderr.String(), PeakRSS: <-hwm, RSSBound: -1, TestRSS: testRSS}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		o.Code = -1
	case errors.As(err, &ee):
		o.Code = ee.ExitCode()
	case err != nil:
		t.Fatalf("hostile: run %s: %v", tool, err)
	}
	if cmd.ProcessState != nil {
		o.RSSBound = peakRSS(cmd.ProcessState)
	}
	return o
}

// LastLine is the last non-empty line of s.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// capped keeps the first MiB written to it.
type capped struct {
	mu sync.Mutex
	b  strings.Builder
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := 1<<20 - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
