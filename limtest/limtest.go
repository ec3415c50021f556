// Package limtest starts real third-party rate limiters on free loopback
// ports for the project's tests: Debian's nginx (limit_req) and haproxy
// (stick tables), express-rate-limit (optionally with rate-limit-redis) and
// rate-limiter-flexible from the npm registry, go-chi/httprate built from
// the Go module proxy, and an in-process fake of slowapi / Flask-Limiter
// (which live on PyPI, out of reach here).
//
// Each starter returns the base URL (http://127.0.0.1:PORT) of a server
// that answers 200 "ok" to any path unless its limiter refuses, and stops
// that server when the test ends. Every server runs in its own temporary
// directory with its own configuration, never a system one, on a loopback
// port that the kernel picked. A process it starts gets SIGKILL from the
// kernel if the test binary dies (Pdeathsig on Linux), so none outlives it.
//
// When a dependency is missing (a binary, node/npm, a failed npm or go
// install), the test fails if the CI environment variable is set and is
// skipped otherwise, like package redistest. Only tests import limtest.
//
// docs/limiters.md says what each of these limiters does, exactly.
package limtest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartTimeout bounds how long a server may take to accept connections.
const StartTimeout = 20 * time.Second

// need fails the test under CI and skips it otherwise: what is missing is
// a dependency of the harness, not a defect of the code under test.
func need(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (required when CI is set; scripts/test installs it)", msg)
	}
	t.Skipf("skipping: %s", msg)
}

// lookBinary returns the path of the first name found as given or on PATH.
func lookBinary(names ...string) (string, error) {
	var errs []error
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err == nil {
			return p, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// freePort returns a loopback TCP port that was free a moment ago. Servers
// that cannot listen on port 0 and report it (nginx, haproxy) use it, and
// their starters retry on a fresh port if another process took it first.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free loopback port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// logBuffer keeps what a process wrote, for failure messages.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// process is one server process the harness started.
type process struct {
	name    string
	cmd     *exec.Cmd
	log     *logBuffer
	done    chan struct{}
	waitErr error
	// lines receives the process's stdout lines while someone reads them.
	lines chan string
}

// start runs cmd (its own process group, killed with the test binary) and
// stops it when the test ends: SIGTERM to the group, SIGKILL after 5 s.
// stdout lines go to the log and, until the channel fills, to lines.
func start(t testing.TB, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: name, cmd: cmd, log: &logBuffer{}, done: make(chan struct{}), lines: make(chan string, 64)}
	cmd.SysProcAttr = sysProcAttr()
	cmd.Stderr = p.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			_, _ = io.WriteString(p.log, line+"\n")
			select {
			case p.lines <- line:
			default:
			}
		}
	}()
	go func() {
		<-copied
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after 5 s.
func (p *process) stop() {
	if p.exited() {
		return
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.done
}

// failure describes why the process could not serve, with its log.
func (p *process) failure(what string) string {
	status := "still running"
	if p.exited() {
		status = fmt.Sprintf("exited: %v", p.waitErr)
	}
	return fmt.Sprintf("%s %s (%s); its output:\n%s", p.name, what, status, strings.TrimSpace(p.log.String()))
}

// waitListening waits until the process prints "LISTENING <port>" and
// returns the port.
func (p *process) waitListening(timeout time.Duration) (int, error) {
	deadline := time.After(timeout)
	for {
		select {
		case line := <-p.lines:
			if rest, ok := strings.CutPrefix(line, "LISTENING "); ok {
				port, err := strconv.Atoi(strings.TrimSpace(rest))
				if err != nil {
					return 0, fmt.Errorf("%s", p.failure("printed a bad port"))
				}
				return port, nil
			}
		case <-p.done:
			// drain what it printed before exiting
			return 0, fmt.Errorf("%s", p.failure("did not start"))
		case <-deadline:
			return 0, fmt.Errorf("%s", p.failure(fmt.Sprintf("did not listen within %s", timeout)))
		}
	}
}

// waitDial waits until the port accepts a TCP connection (which costs a
// limiter nothing) while the process runs.
func (p *process) waitDial(port int, timeout time.Duration) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(timeout)
	for {
		if p.exited() {
			return fmt.Errorf("%s", p.failure("did not start"))
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			// a server that lost the port to another process exits at once
			time.Sleep(20 * time.Millisecond)
			if p.exited() {
				return fmt.Errorf("%s", p.failure("did not start"))
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s", p.failure(fmt.Sprintf("did not accept connections on %s within %s", addr, timeout)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// portTaken reports whether a failed start says its port was in use.
func portTaken(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Address already in use")
}

func baseURL(port int) string {
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

// cacheRoot is the directory where installs are kept between test runs,
// keyed by what they install: os.UserCacheDir()/ratelimit-limtest, or a
// directory in os.TempDir() when there is no user cache directory.
func cacheRoot() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ratelimit-limtest")
	}
	return filepath.Join(os.TempDir(), "ratelimit-limtest-"+strconv.Itoa(os.Getuid()))
}

// hashOf returns a short hex digest of the parts, to key a cache entry.
func hashOf(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// runLogged runs a command with a timeout and returns its combined output
// in the error when it fails.
func runLogged(timeout time.Duration, cmd *exec.Cmd) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Dir, c.Env = cmd.Dir, cmd.Env
	c.SysProcAttr = sysProcAttr()
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	out, err := c.CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("%s timed out after %s: %s", strings.Join(c.Args, " "), timeout, tail(out))
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(c.Args, " "), err, tail(out))
	}
	return nil
}

// tail returns the last lines of out, for an error message.
func tail(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return s
}

// publish renames dir into place as final unless another run already
// did; either way final holds a complete copy afterwards.
func publish(dir, final string) error {
	err := os.Rename(dir, final)
	if err == nil {
		return nil
	}
	if _, statErr := os.Stat(filepath.Join(final, ".complete")); statErr == nil {
		_ = os.RemoveAll(dir)
		return nil
	}
	// a copy left incomplete by a run that died: replace it
	if rmErr := os.RemoveAll(final); rmErr != nil {
		return err
	}
	return os.Rename(dir, final)
}
