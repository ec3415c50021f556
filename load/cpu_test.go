package load

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/rate"
)

func TestSaturatedBetween(t *testing.T) {
	s := func(at time.Duration, total, idle float64, own time.Duration) cpuSample {
		return newCPUSample(time.Unix(0, 0).Add(at), total, idle, own)
	}
	base := s(0, 1000, 500, 0)
	for _, tt := range []struct {
		name string
		b    cpuSample
		want bool
	}{
		// 100 ms on 2 CPUs = 20 ticks of machine time
		{"the generator uses both its processors", s(100*time.Millisecond, 1020, 510, 190*time.Millisecond), true},
		{"no idle CPU, the generator uses half", s(100*time.Millisecond, 1020, 501, 100*time.Millisecond), true},
		{"no idle CPU, the generator uses a quarter", s(100*time.Millisecond, 1020, 501, 50*time.Millisecond), true},
		{"no idle CPU, all of it another program's", s(100*time.Millisecond, 1020, 500, 5*time.Millisecond), false},
		{"half the CPU idle, the generator uses half", s(100*time.Millisecond, 1020, 510, 100*time.Millisecond), false},
		{"no time passed", s(0, 1000, 500, 0), false},
	} {
		got := saturatedBetween(base, tt.b, 2)
		if runtimeJudgesCPU && got != tt.want {
			t.Errorf("%s: saturated %v, want %v", tt.name, got, tt.want)
		}
		if !runtimeJudgesCPU && got {
			t.Errorf("%s: saturated where the CPU is not judged", tt.name)
		}
	}
}

// A slow target needs more VUs than were started: they are added, even
// with every core busy with other programs (two CPU burners), since the
// CPU is not the generator's to saturate; with the CPU judged saturated
// (the negative control) none is added and the run says why.
func TestGrowthAndTheSaturatedCPU(t *testing.T) {
	run := func(t *testing.T, saturated func() bool) (added int64, notes []string, sent, planned int64) {
		pt := newPlainTarget(t, 200, 200*time.Millisecond)
		res := runLoad(t, Options{Target: pt.URL, Rate: rate.MustParse("100/s"), Duration: 2 * time.Second,
			PreAllocatedVUs: 5, MaxVUs: 200, saturated: saturated})
		return res.VUs.Added, res.Notes, res.Sent, res.Planned
	}
	t.Run("burners", func(t *testing.T) {
		limtest.BurnCPU(t, 2)
		added, notes, sent, planned := run(t, nil)
		if added < 10 {
			t.Errorf("%d VUs added; a 200 ms target at 100/s needs about 20 (notes %q)", added, notes)
		}
		for _, n := range notes {
			if strings.Contains(n, "CPU was saturated") {
				t.Errorf("the burners' CPU held VUs back: %q", n)
			}
		}
		t.Logf("sent %d of %d, %d VUs added", sent, planned, added)
	})
	t.Run("saturated", func(t *testing.T) {
		added, notes, sent, planned := run(t, func() bool { return true })
		// the first sample comes after cpuInterval: VUs added before it
		// are the iterations of those 100 ms at most
		if added > 10 {
			t.Errorf("%d VUs added while the CPU was saturated", added)
		}
		found := false
		for _, n := range notes {
			found = found || strings.Contains(n, "no VU was added for") && strings.Contains(n, "CPU was saturated")
		}
		if !found {
			t.Errorf("no note says VUs were held back: %q", notes)
		}
		if sent == planned {
			t.Errorf("sent the whole plan (%d) with 5 VUs on a 200 ms target at 100/s", sent)
		}
	})
}
