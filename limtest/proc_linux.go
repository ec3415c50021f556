//go:build linux

package limtest

import "syscall"

// sysProcAttr puts a server in its own process group (so cleanup reaches
// every process it forks) and asks the kernel to kill it if the test binary
// dies without cleaning up, as package sandbox does for redis-server.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
