//go:build linux

package sandbox

import "syscall"

// sysProcAttr asks the kernel to kill a server if the process that started
// it dies without calling Stop (a test binary killed by a timeout, say), so
// no server outlives its owner.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
