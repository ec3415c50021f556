package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// This file lets the process that started a sandbox play faults on its
// own servers (package fault): freeze a node, thaw it, kill it and start
// it again. Nothing here reaches a process the sandbox did not start.

// ErrNotRunning marks an operation on a node whose process has exited.
var ErrNotRunning = errors.New("sandbox node is not running")

// Suspend stops the node's process with SIGSTOP: it keeps its port and its
// connections but answers nothing until Resume.
func (n *Node) Suspend() error { return n.signal(syscall.SIGSTOP, "suspend") }

// Resume continues a suspended node's process with SIGCONT. Resuming a
// node that is not suspended does nothing.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT, "resume") }

func (n *Node) signal(sig syscall.Signal, what string) error {
	if !n.Running() {
		return fmt.Errorf("%s server on %s: %w", what, n.Addr, ErrNotRunning)
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s server on %s (pid %d): %w", what, n.Addr, n.PID(), err)
	}
	return nil
}

// Node returns the node of s listening on addr (host:port as in
// Node.Addr), or nil when s has none there.
func (s *Sandbox) Node(addr string) *Node {
	for _, n := range s.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// Owns reports whether path lies inside the sandbox's directory, read as
// written (no symlinks followed): a socket or file there belongs to s.
func (s *Sandbox) Owns(path string) bool {
	if s.Dir == "" || !filepath.IsAbs(path) {
		return false
	}
	rel, err := filepath.Rel(s.Dir, filepath.Clean(path))
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// restartWait bounds how long Restart waits for the killed process to exit.
const restartWait = 5 * time.Second

// Restart kills n's process (SIGKILL, as a crash would; a suspended node
// dies too) and starts it again with the same binary, arguments, port and
// directory, then waits until it answers and is the process just started.
// A cluster node keeps its nodes.conf and so its identity; its data is
// gone (persistence is off). The wait for the new process is bounded by
// ctx and by Config.StartTimeout (DefaultStartTimeout when 0); once the
// old process is dead the new one is started even if ctx is done, so an
// interrupted restart never leaves the node down. Restart must not run
// concurrently with Stop or with another Restart of the same node.
func (s *Sandbox) Restart(ctx context.Context, n *Node) error {
	if s.Node(n.Addr) != n {
		return configErr("node %s is not part of this sandbox", n.Addr)
	}
	if n.Running() {
		_ = n.cmd.Process.Kill()
	}
	select {
	case <-n.done:
	case <-time.After(restartWait):
		return fmt.Errorf("restart server on %s: pid %d did not exit within %s of SIGKILL", n.Addr, n.PID(), restartWait)
	}
	old := n.cmd
	cmd := exec.Command(old.Path, old.Args[1:]...)
	cmd.Dir = old.Dir
	cmd.Stdout = n.log
	cmd.Stderr = n.log
	cmd.WaitDelay = old.WaitDelay
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("restart %s on port %d: %w", n.bin, n.Port, err)
	}
	done := make(chan struct{})
	n.cmd, n.done, n.waitErr = cmd, done, nil
	go func() {
		err := cmd.Wait()
		n.waitErr = err
		close(done)
	}()
	if err := writePID(filepath.Join(n.dir, serverFile), cmd.Process.Pid); err != nil {
		return fmt.Errorf("record server pid: %w", err)
	}
	timeout := s.cfg.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	quiet()
	if err := waitReady(wctx, n, s.cfg); err != nil {
		return fmt.Errorf("restart server on %s: %w", n.Addr, err)
	}
	return nil
}
