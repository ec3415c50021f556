package load

import (
	"math"
	"net/url"
	"os"
	"runtime"
)

// ProcsPerRate is how many requests a second of the plan one processor
// carries with the lean client: measured on a 2-core machine, one
// processor sends 40,000 a second clean (p99 from due ~3 ms) with the
// target on the other core, so this leaves it half idle.
const ProcsPerRate = 25000

// Procs is how many processors (GOMAXPROCS) a run of o should use: with
// the lean client, one per ProcsPerRate requests a second of its plan
// (a segment's share), at least one and at most what the process has;
// otherwise, and when the GOMAXPROCS variable is set, what the process
// has. Fewer processors than the machine's are cheaper for a generator
// whose work is mostly waiting: every time an answer wakes a goroutine,
// the scheduler wakes a second thread to look for more work, finds none
// and puts it back to sleep; at 10,000 requests a second on two
// processors that cost a context switch per request, a third of the
// generator's CPU.
func Procs(o Options) int {
	have := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") != "" || have <= 1 {
		return have
	}
	u, err := url.Parse(o.Target)
	if err != nil {
		return have
	}
	if name, err := chooseClient(&o, u); err != nil || name != HTTPClientLean {
		return have
	}
	perS := o.Rate.PerSecond()
	if o.Segment.Count > 1 {
		perS /= float64(o.Segment.Count)
	}
	return max(1, min(have, int(math.Ceil(perS/ProcsPerRate))))
}

// UseProcs sets GOMAXPROCS to Procs(o) for a run and returns the function
// that sets it back. A process runs one load at a time (cmd load), since
// GOMAXPROCS is the whole process's.
func UseProcs(o Options) (restore func()) {
	n := Procs(o)
	if n == runtime.GOMAXPROCS(0) {
		return func() {}
	}
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }
}
