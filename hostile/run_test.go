package hostile

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// hogEnv, when set in the environment, makes the test binary a child that
// touches that many MiB and exits: a child with a known peak.
const hogEnv = "HOSTILE_TEST_HOG_MIB"

func TestMain(m *testing.M) {
	if os.Getenv(hogEnv) != "" {
		b := make([]byte, 240<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		runtime.KeepAlive(b)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// touch holds n bytes resident in the test process.
func touch(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return b
}

// TestPeakIgnoresTheTestsOwnMemory: ru_maxrss of a child counts the
// test process's own peak (the child starts in the test's memory); a
// small child run from a test process holding more than MaxRSS is still
// measured small, and a child that really grows past MaxRSS is still
// measured past it.
func TestPeakIgnoresTheTestsOwnMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("skipping: the peak is read from /proc and getrusage on Linux only")
	}
	held := touch(MaxRSS + 40<<20)
	defer runtime.KeepAlive(held)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	small := Run(t, exe, time.Minute, nil, "-test.run=^$")
	t.Logf("small child: VmHWM %d MiB, ru_maxrss %d MiB, test process %d MiB, peak %d MiB", small.PeakRSS>>20, small.RSSBound>>20, small.TestRSS>>20, small.Peak()>>20)
	if small.Code != 0 {
		t.Fatalf("small child exit %d: %s", small.Code, small.Stderr)
	}
	if small.RSSBound < MaxRSS {
		t.Logf("ru_maxrss %d MiB does not count the test's %d MiB on this kernel", small.RSSBound>>20, small.TestRSS>>20)
	}
	if p := small.Peak(); p >= MaxRSS || p <= 0 {
		t.Errorf("a small child measured %d MiB, want its own few MiB (the test process holds %d MiB)", p>>20, small.TestRSS>>20)
	}

	t.Setenv(hogEnv, "1")
	big := Run(t, exe, time.Minute, nil, "-test.run=^$")
	t.Logf("big child: VmHWM %d MiB, ru_maxrss %d MiB, test process %d MiB, peak %d MiB", big.PeakRSS>>20, big.RSSBound>>20, big.TestRSS>>20, big.Peak()>>20)
	if big.Code != 0 {
		t.Fatalf("big child exit %d: %s", big.Code, big.Stderr)
	}
	if p := big.Peak(); p < 240<<20 {
		t.Errorf("a child that touched 240 MiB measured %d MiB", p>>20)
	}
}
