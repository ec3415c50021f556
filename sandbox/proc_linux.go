//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr asks the kernel to kill a server if the process that started
// it dies without calling Stop (a test binary killed by a timeout, say), so
// no server outlives its owner.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// zombie reports whether pid has exited and only waits to be reaped (a
// server whose killed owner's parent never reaps it, say).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
