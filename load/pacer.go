package load

import (
	"context"
	"time"

	"github.com/ratelimit-dev/ratelimit/rate"
)

// The schedule itself (when iteration i is due) is rate.Schedule, shared
// with eval --simulate so both plan the same arrivals. This file is the
// dispatcher that follows it: it asks Schedule.Pace how long to wait,
// waits on a Clock, and hands each iteration to a VU when it falls due.

// Clock is the dispatcher's time. The engine uses the real one (realClock);
// tests drive a fake one and check due times and drops without sleeping.
// It is the dispatcher's only: VUs time their requests on the monotonic
// clock.
type Clock interface {
	// Now is the current time; the dispatcher subtracts the start from it.
	Now() time.Time
	// Sleep waits d, or less when ctx ends first, and reports whether the
	// whole of d passed.
	Sleep(ctx context.Context, d time.Duration) bool
}

// realClock is time.Now and one timer, reused for every wait.
type realClock struct{ t *time.Timer }

func (*realClock) Now() time.Time { return time.Now() }

func (c *realClock) Sleep(ctx context.Context, d time.Duration) bool {
	if c.t == nil {
		c.t = time.NewTimer(d)
	} else {
		c.t.Reset(d)
	}
	select {
	case <-c.t.C:
		return true
	case <-ctx.Done():
		c.t.Stop()
		return false
	}
}

// dispatcher releases the iterations of sched as they fall due on clock,
// counted from start. It never fires a backlog in a burst: an iteration
// it reaches more than MaxLateness late is dropped together with every
// other one as late.
type dispatcher struct {
	sched rate.Schedule
	clock Clock
	start time.Time
	// hand gives iteration i, due at due and released late after it, to a
	// VU; false means no VU was idle and none could be added (the iteration
	// is dropped).
	hand func(i int64, due, late time.Duration) bool
	// dropped, when set, is told of every iteration dropped (no VU or late).
	dropped func(n int64)
}

// dispatchCounts is what the dispatcher did.
type dispatchCounts struct {
	sent, droppedNoVU, droppedLate int64
	// stopped: ctx ended before every planned iteration was released
	stopped bool
}

// run releases the iterations until all are released or ctx ends.
func (d *dispatcher) run(ctx context.Context) (c dispatchCounts) {
	planned := d.sched.Planned()
	done := ctx.Done()
	drop := func(n int64) {
		if d.dropped != nil {
			d.dropped(n)
		}
	}
	for i := int64(0); ; {
		select {
		case <-done:
			c.stopped = true
			return c
		default:
		}
		elapsed := d.clock.Now().Sub(d.start)
		wait, stop := d.sched.Pace(elapsed, i)
		if stop {
			return c
		}
		if wait > 0 {
			if !d.clock.Sleep(ctx, wait) {
				c.stopped = true
				return c
			}
			continue // read the clock again: a sleep may end early or late
		}
		late := -wait
		if late > MaxLateness {
			// Every iteration due before elapsed-MaxLateness is as late:
			// drop them all at once, so a rate the generator cannot follow
			// does not keep it spinning through its schedule long after
			// the end.
			next := min(max(d.sched.Expected(elapsed-MaxLateness), i+1), planned)
			c.droppedLate += next - i
			drop(next - i)
			i = next
			continue
		}
		if d.hand(i, elapsed+wait, late) {
			c.sent++
		} else {
			c.droppedNoVU++
			drop(1)
		}
		i++
	}
}
