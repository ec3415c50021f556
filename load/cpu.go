package load

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// cpuWatch tells the dispatcher whether the CPU is saturated, so that it
// stops adding VUs while it is: every VU is a goroutine and a connection
// to the target, and on a machine with no CPU to spare (the target often
// on the same cores) more of them add work, not throughput. Past its
// clean rate a generator that kept adding them fed its own collapse:
// latency rose, more VUs were added for the late iterations, and the run
// dropped a third of its plan with a p99 from due of ~350 ms.
//
// Saturated, over the last window (cpuWindow samples, cpuInterval apart): the generator used at least
// 90% of the processors it has (GOMAXPROCS), or the machine had under 10%
// of its CPU idle while the generator used at least a quarter of it. The
// second condition keeps a busy machine whose CPU goes to other programs
// (a CPU burner, a build) from holding VUs back from a slow target: the
// generator then uses little of the CPU, and the VUs it adds wait on the
// target, not on the CPU.
type cpuWatch struct {
	saturated atomic.Bool
	// held counts the iterations the dispatcher left to the VUs there
	// were, instead of adding one, because the CPU was saturated
	held atomic.Int64
	// heldAt is the offset of the first hold, in ns (-1: none)
	heldAt atomic.Int64
}

// cpuInterval is how often the watch samples, and cpuWindow how far back
// each judgement looks: a short step so that a run that saturates the CPU
// from its first second is seen within tens of milliseconds (before that
// it may add hundreds of VUs at a high rate), a window long enough for
// /proc/stat's 10 ms ticks to tell idle from busy.
// Once seen saturated, the CPU counts as saturated for cpuHold more: at
// the edge of saturation 100 ms windows flicker, and VUs added in the
// flickers (never retired) are what fed the collapse.
const (
	cpuInterval = 20 * time.Millisecond
	cpuWindow   = 5 // samples: 100 ms
	cpuHold     = time.Second
)

// watchCPU samples until ctx ends; judge, when set, replaces the
// samples' judgement (tests).
func watchCPU(ctx context.Context, judge func() bool) *cpuWatch {
	w := &cpuWatch{}
	w.heldAt.Store(-1)
	go func() {
		t := time.NewTicker(cpuInterval)
		defer t.Stop()
		var ring [cpuWindow]cpuSample
		ring[0] = sampleCPU()
		var seen time.Time // when the CPU was last seen saturated
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s := sampleCPU()
			old := ring[max(n-cpuWindow, 0)%cpuWindow] // the window's start (or the first sample)
			ring[n%cpuWindow] = s
			var sat bool
			if judge != nil {
				sat = judge()
			} else {
				sat = saturatedBetween(old, s, runtime.GOMAXPROCS(0))
			}
			if sat {
				seen = s.at
			}
			w.saturated.Store(sat || !seen.IsZero() && s.at.Sub(seen) < cpuHold)
		}
	}()
	return w
}

// hold records that an iteration at elapsed was left to the VUs there are.
func (w *cpuWatch) hold(elapsed time.Duration) {
	if w.held.Add(1) == 1 {
		w.heldAt.Store(int64(elapsed))
	}
}
