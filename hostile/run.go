package hostile

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("hostile: no go command to build ratelimit with: %v", err)
		}
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
	// below the true peak (it also counts what the test held when the
	// child started). -1 where the platform does not say.
	PeakRSS, RSSBound int64
}

// MaxOfRSS is the larger of the two readings: at least the true peak.
func (o Outcome) MaxOfRSS() int64 { return max(o.PeakRSS, o.RSSBound) }

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
	stop, hwm := make(chan struct{}), make(chan int64, 1)
	go watchHWM(cmd.Process.Pid, stop, hwm)
	err = cmd.Wait()
	close(stop)
	o := Outcome{Elapsed: time.Since(start), Stdout: stdout.String(), Stderr: stderr.String(), PeakRSS: <-hwm, RSSBound: -1}
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
