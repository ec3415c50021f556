//go:build linux && race

package wire

import "syscall"

// Under the race detector the wire reads and writes through the syscall
// package, whose calls tell the detector that bytes written on one side
// of a socket happen before they are read on the other (net.Conn's
// guarantee, which tests rely on); raw system calls would not.
func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func errnoOf(err error) syscall.Errno {
	if errno, ok := err.(syscall.Errno); ok { // what syscall returns, unwrapped
		return errno
	}
	if err != nil {
		return syscall.EIO
	}
	return 0
}
