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
// Saturated, over the last sample interval: the generator used at least
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

// cpuInterval is how often the watch samples.
const cpuInterval = 100 * time.Millisecond

// watchCPU samples until ctx ends; judge, when set, replaces the
// samples' judgement (tests).
func watchCPU(ctx context.Context, judge func() bool) *cpuWatch {
	w := &cpuWatch{}
	w.heldAt.Store(-1)
	go func() {
		t := time.NewTicker(cpuInterval)
		defer t.Stop()
		last := sampleCPU()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s := sampleCPU()
			if judge != nil {
				w.saturated.Store(judge())
			} else {
				w.saturated.Store(saturatedBetween(last, s, runtime.GOMAXPROCS(0)))
			}
			last = s
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
