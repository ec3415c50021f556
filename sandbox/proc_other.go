//go:build !linux

package sandbox

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// zombie is false where it cannot be told: such a process counts as alive.
func zombie(int) bool { return false }
