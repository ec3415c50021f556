package load

import (
	"context"
	"sync/atomic"
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
//
// In a run, VUs claim iterations themselves from next, the counter the
// dispatcher shares with them (engine.claim): the dispatcher only sees to
// an iteration no VU claimed within grace of its due time (every VU was
// busy), handing it to a VU it adds or dropping it when none can be
// added. Alone (next nil, no VU claiming), it hands every iteration at
// its due time.
type dispatcher struct {
	sched rate.Schedule
	clock Clock
	start time.Time
	// next is the first iteration not yet claimed (nil: the dispatcher's
	// own counter); claims are compare-and-swaps on it.
	next *atomic.Int64
	// grace is how long past its due time an unclaimed iteration is left
	// for a VU that is finishing its request to claim.
	grace time.Duration
	// leave, when set, is asked about an iteration no VU claimed within
	// grace, at elapsed; true leaves it to the VUs, however late, rather
	// than hand it to a VU added for it or drop it as finding none.
	// overslept is how much later than asked the dispatcher's last wait
	// ended: a machine too slow to run the VUs there are is not helped by
	// many more of them.
	leave func(elapsed, overslept time.Duration) bool
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

// run releases the iterations until all are released (or claimed) or ctx
// ends.
func (d *dispatcher) run(ctx context.Context) (c dispatchCounts) {
	planned := d.sched.Planned()
	next := d.next
	if next == nil {
		next = new(atomic.Int64)
	}
	done := ctx.Done()
	drop := func(n int64) {
		if d.dropped != nil {
			d.dropped(n)
		}
	}
	var overslept time.Duration // how late the last wait ended
	sleep := func(elapsed, w time.Duration) bool {
		if !d.clock.Sleep(ctx, w) {
			return false
		}
		overslept = max(d.clock.Now().Sub(d.start)-elapsed-w, 0)
		return true
	}
	for {
		select {
		case <-done:
			c.stopped = true
			return c
		default:
		}
		i := next.Load()
		elapsed := d.clock.Now().Sub(d.start)
		wait, stop := d.sched.Pace(elapsed, i)
		if stop {
			return c
		}
		if wait+d.grace > 0 {
			if !sleep(elapsed, wait+d.grace) {
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
			n := min(max(d.sched.Expected(elapsed-MaxLateness), i+1), planned)
			if next.CompareAndSwap(i, n) {
				c.droppedLate += n - i
				drop(n - i)
			}
			continue
		}
		if d.leave != nil && d.leave(elapsed, overslept) {
			if !sleep(elapsed, max(d.grace, time.Microsecond)) {
				c.stopped = true
				return c
			}
			continue
		}
		if !next.CompareAndSwap(i, i+1) {
			continue // a VU claimed it
		}
		if d.hand(i, elapsed+wait, late) {
			c.sent++
		} else {
			c.droppedNoVU++
			drop(1)
		}
	}
}
