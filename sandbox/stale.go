package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dirPrefix names every sandbox directory under os.TempDir().
const dirPrefix = "ratelimit-sandbox-"

// ownerFile, in a sandbox directory, holds the pid of the process that
// started the sandbox; serverFile, in each node directory, the pid of
// that node's server.
const (
	ownerFile  = "owner.pid"
	serverFile = "server.pid"
)

func writePID(path string, pid int) error {
	return os.WriteFile(path, []byte(strconv.Itoa(pid)+"\n"), 0o600)
}

// readPID reads a pid file the sandbox wrote: a small regular file
// holding one positive number.
func readPID(path string) (int, bool) {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > 32 {
		return 0, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// alive reports whether a process with this pid runs (one of another
// user counts; a zombie, exited and waiting to be reaped, does not). When
// in doubt it says yes.
func alive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	return !zombie(pid)
}

// removeStale removes sandbox directories that a killed run left behind
// in dir (os.TempDir()) and returns their paths. A directory is removed
// only when all of these hold: its name starts with ratelimit-sandbox-, it
// is a real directory (not a symlink) of the current user, it holds the
// owner.pid the sandbox writes, that owner is dead, and no server.pid in
// it names a live process. Anything else, including a sandbox that is
// still being created and has no owner.pid yet, is left alone.
func removeStale(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), dirPrefix) || !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if !stale(path) {
			continue
		}
		if os.RemoveAll(path) == nil {
			removed = append(removed, path)
		}
	}
	return removed
}

func stale(path string) bool {
	st, err := os.Lstat(path)
	if err != nil || !st.IsDir() || st.Mode()&os.ModeSymlink != 0 {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Getuid() {
		return false
	}
	owner, ok := readPID(filepath.Join(path, ownerFile))
	if !ok || alive(owner) {
		return false
	}
	nodes, err := os.ReadDir(path)
	if err != nil {
		return false
	}
	for _, n := range nodes {
		if !n.IsDir() {
			continue
		}
		if pid, ok := readPID(filepath.Join(path, n.Name(), serverFile)); ok && alive(pid) {
			return false
		}
	}
	return true
}
