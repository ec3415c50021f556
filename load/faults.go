package load

import (
	"context"
	"sort"
	"time"

	"github.com/ratelimit-dev/ratelimit/judge"
)

// Faults is what a run injects into the Redis behind its target, and how
// the run is judged (judge.FaultPlan).
type Faults struct {
	judge.FaultPlan
	// Run plays the faults; the engine calls it in a goroutine of its own
	// when the clock starts and waits for it when the requests are done.
	// ctx ends on Ctrl-C and on --abort-on-fail; Run must have undone
	// every fault by the time it returns.
	Run func(ctx context.Context, start time.Time) []judge.Disruption
}

// judgeFaults judges the faults of the run over its arrivals. The model
// is --expect's; under --expect auto, the reading of RateLimit-Policy
// that fits the run before the first fault best (the faults disturb the
// rest).
func (e *engine) judgeFaults(arrivals []judge.Arrival, policy string, p99 float64) *judge.FaultReport {
	f := e.o.Faults
	in := judge.FaultInput{Arrivals: arrivals, Identities: max(e.o.Identities, 1), StartMs: e.startWall.UnixMilli(),
		Duration: e.o.Duration, Rule: e.st.Rule, Expected: e.st.Expected}
	x := e.o.Expect
	if !x.Auto {
		in.Model = x
	} else {
		first := f.Specs[0].At
		if len(e.disruptions) > 0 && !e.disruptions[0].Start.IsZero() {
			first = e.disruptions[0].Start.Sub(e.start)
		}
		before := make([]judge.Arrival, 0, len(arrivals))
		for _, a := range arrivals {
			if a.SendNs < int64(first) {
				before = append(before, a)
			}
		}
		sort.Slice(before, func(i, j int) bool { return before[i].SendNs < before[j].SendNs })
		j := judge.Judge(*x, judge.Input{Arrivals: before, Identities: in.Identities, StartMs: in.StartMs, JitterMs: p99, Policy: policy})
		in.Model = j.Against()
	}
	return judge.JudgeFaults(f.FaultPlan, e.disruptions, e.start, in)
}
