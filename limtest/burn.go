package limtest

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// BurnCPU keeps cores busy with a shell busy loop each (a busy machine,
// as CI's often is), stopped by PID when the test ends.
func BurnCPU(t testing.TB, cores int) {
	t.Helper()
	for range cores {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatalf("start the CPU burner: %v", err)
		}
		t.Cleanup(func() {
			_ = c.Process.Kill()
			_ = c.Wait()
		})
	}
}

// SoakRuns is how many runs an acceptance test makes under the burner:
// 1, or 20 with RATELIMIT_SOAK=1.
func SoakRuns() int {
	if os.Getenv("RATELIMIT_SOAK") != "" {
		return 20
	}
	return 1
}
