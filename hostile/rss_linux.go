//go:build linux

package hostile

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// peakRSS is the child's ru_maxrss, which Linux gives in KiB. It is an
// upper bound of the child's own peak: the child shares the test's memory
// until it execs (os/exec starts it with CLONE_VM), and the kernel counts
// that too.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return -1
}

// hwm is the VmHWM (peak resident set) in a /proc status file, in
// bytes, or -1.
func hwm(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	if i := bytes.Index(b, []byte("VmHWM:")); i >= 0 {
		f := bytes.Fields(b[i+len("VmHWM:"):])
		if len(f) > 0 {
			if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

// selfHWM is the test process's own peak resident set (VmHWM), or -1.
func selfHWM() int64 { return hwm("/proc/self/status") }

// watchHWM reads the child's VmHWM (its peak resident set since exec)
// from /proc every 10 ms until stop is closed, and sends the largest.
func watchHWM(pid int, stop <-chan struct{}, out chan<- int64) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	var peak int64 = -1
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		peak = max(peak, hwm(path))
		select {
		case <-stop:
			out <- peak
			return
		case <-t.C:
		}
	}
}
