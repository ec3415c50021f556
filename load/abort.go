package load

import (
	"fmt"
	"time"

	"github.com/ratelimit-dev/ratelimit/judge"
)

// watchEvery is how often --abort-on-fail looks at the live counters.
const watchEvery = 20 * time.Millisecond

// startWatch starts the --abort-on-fail watch (when asked for) and returns
// the function that stops it. The watch reads the live counters every
// watchEvery and stops the run at the first threshold that can no longer
// be met (Threshold.lost).
func (e *engine) startWatch(planned int64) (stop func()) {
	if !e.watch {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-e.abortCh:
				return
			case <-t.C:
				if e.checkLost(planned) {
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// checkLost aborts the run if a threshold is lost, reporting whether it did.
func (e *engine) checkLost(planned int64) bool {
	live := e.o.Live
	w := judge.Progress{
		Planned: planned,
		Dropped: live.Dropped.Load(), Failed: live.Failed.Load(),
		Allowed: live.OK.Load(), Limited: live.Limited.Load(),
		MaxDueUs: e.dueMaxUs.Load(), MinDueUs: e.dueMinUs.Load(),
	}
	for i, t := range e.checks {
		if lost, why := t.Lost(w); lost {
			e.abort(i, fmt.Sprintf("threshold %s can no longer be met after %s: %s", t, time.Since(e.start).Round(time.Millisecond), why))
			return true
		}
	}
	return false
}

// abort stops the run once: no more iterations are scheduled and the
// requests in flight are cut (counted as interrupted, not completed).
func (e *engine) abort(idx int, why string) {
	e.abortOnce.Do(func() {
		e.abortIdx, e.abortWhy = idx, why
		e.aborted.Store(true)
		close(e.abortCh)
		e.cancelRun()
	})
}

// observeDue records a latency from the due time for the watch's max and
// min thresholds.
func (e *engine) observeDue(us int64) {
	for {
		cur := e.dueMaxUs.Load()
		if us <= cur || e.dueMaxUs.CompareAndSwap(cur, us) {
			break
		}
	}
	for {
		cur := e.dueMinUs.Load()
		if cur >= 0 && us >= cur || e.dueMinUs.CompareAndSwap(cur, us) {
			break
		}
	}
}
