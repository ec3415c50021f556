package load

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// vu is a virtual user: a goroutine with its own connection that claims
// the next iteration of the schedule itself (engine.claim), waits for its
// due time and runs it, then claims the next. It records into one of the
// engine's shards, never into memory of its own, so a run that needs
// thousands of VUs does not pay for thousands of histograms.
type vu struct {
	e  *engine
	id int

	conn conn // the VU's side of the engine's client

	sh *shard       // where the VU records
	t  *tally.Tally // sh.t

	timer *time.Timer // waits for the due time of a claimed iteration
	sent  int64       // requests this VU started; read once it has stopped

	bytesIn, bytesOut atomic.Int64 // the lean client's connections
}

// shard is one of the run's accumulators: its tally (statuses, errors,
// timeline, latency histograms, header checks), its scheduling lateness
// and, when the verdict needs them, its arrivals. VU n records into shard
// n mod len(shards) under the shard's lock, held for the recording only
// (never during a request); with a few shards per CPU the lock is almost
// never contended.
type shard struct {
	mu       sync.Mutex
	t        *tally.Tally
	late     *hdrhistogram.Histogram // µs from the due time to the send
	arrivals []judge.Arrival         // only when the verdict needs them
	// answers are the first admissions that reported a remaining quota,
	// by identity, for the per-instance finding (at most maxAnswers)
	answers []answer
	_       [64]byte // keep shards' locks off one cache line
}

// answer is one admission of identity id and the remaining it reported.
type answer struct {
	id int
	judge.Answer
}

// maxAnswers bounds the admissions a shard keeps for the per-instance
// finding: enough to see counters take turns, never the whole run.
const maxAnswers = 4096

func newShard(e *engine) *shard {
	return &shard{t: tally.New(e.st, e.maxLat), late: tally.NewHistogram(e.maxLat)}
}

// shardsPerRun is how many shards a run records into: a few per CPU, so
// that two VUs running at once rarely share one, and never more than VUs.
func shardsPerRun(maxVUs, procs int) int {
	return max(1, min(maxVUs, 4*procs))
}

func newVU(e *engine, id int) *vu {
	v := &vu{e: e, id: id}
	if len(e.shards) > 0 {
		v.sh = e.shards[id%len(e.shards)]
	} else {
		v.sh = newShard(e) // a VU on its own (tests, benchmarks)
	}
	v.t = v.sh.t
	if e.client != nil {
		v.conn = e.client.open(e.runCtx, &v.bytesIn, &v.bytesOut)
	}
	return v
}

// loop runs first (when set), then claims and runs iterations until the
// plan is exhausted or the run ends.
func (v *vu) loop(first *job) {
	e := v.e
	live := e.o.Live
	if first != nil {
		e.do(v, *first)
		if live != nil {
			live.Done.Add(1)
		}
	}
	for {
		j, ok := e.claim(v)
		if !ok {
			break
		}
		e.do(v, j)
		if live != nil {
			live.Done.Add(1)
		}
	}
	if v.timer != nil {
		v.timer.Stop()
	}
	if v.conn != nil {
		v.conn.close()
	}
}

// claim takes the first iteration no VU has claimed yet and waits for its
// due time. It drops, as late, every iteration more than MaxLateness
// behind (as the dispatcher does: a stalled generator never fires its
// backlog in a burst). ok is false once every iteration is claimed or the
// run ends; an iteration claimed but not yet due when the run ends is
// never sent (the result counts it as not started).
func (e *engine) claim(v *vu) (job, bool) {
	ctx := e.runCtx
	for {
		i := e.next.Load()
		if i >= e.planned || ctx.Err() != nil {
			return job{}, false
		}
		due, _ := e.sched.Due(i)
		elapsed := time.Since(e.start)
		if elapsed-due > MaxLateness {
			n := min(max(e.sched.Expected(elapsed-MaxLateness), i+1), e.planned)
			if e.next.CompareAndSwap(i, n) {
				e.dropLate(n - i)
			}
			continue
		}
		if !e.next.CompareAndSwap(i, i+1) {
			continue // another VU (or the dispatcher) took it
		}
		if wait := e.wake(due) - elapsed; wait > 0 {
			if !v.sleep(ctx, wait) {
				return job{}, false
			}
			// a wait that overslept by more than the lateness bound (the
			// machine stalled) drops the iteration rather than send it late
			if time.Since(e.start)-due > MaxLateness {
				e.dropLate(1)
				continue
			}
		}
		return job{i: e.sched.Global(i), n: i, due: due}, true
	}
}

// dropLate counts n iterations dropped as late by a VU.
func (e *engine) dropLate(n int64) {
	e.droppedLate.Add(n)
	if live := e.o.Live; live != nil {
		live.Dropped.Add(n)
	}
}

// sleep waits d on the VU's timer, or less when ctx ends first, and
// reports whether the whole of d passed.
func (v *vu) sleep(ctx context.Context, d time.Duration) bool {
	if v.timer == nil {
		v.timer = time.NewTimer(d)
	} else {
		v.timer.Reset(d)
	}
	select {
	case <-v.timer.C:
		return true
	case <-ctx.Done():
		v.timer.Stop()
		return false
	}
}

// add records one finished iteration: send and done are offsets from the
// start; status 0 means a transport error of the given kind. The caller
// holds the shard's lock (or owns the shard).
func (v *vu) add(j job, send, done time.Duration, status int, kind string) {
	if kind == errInterrupted {
		v.t.Interrupted() // cut off by Ctrl-C: neither a success nor the target's failure
		return
	}
	if status != 0 && !tally.ValidStatus(status) {
		status, kind = 0, "malformed response" // never an index out of range
	}
	outcome, failed := v.t.Count(status, kind, done-send, done-j.due)
	if v.e.watchLat {
		v.e.observeDue(tally.Us(done - j.due))
	}
	v.t.Tick(int64(send/time.Second), status)
	if live := v.e.o.Live; live != nil {
		if failed {
			live.Failed.Add(1)
		}
		switch outcome {
		case tally.OutcomeLimited:
			live.Limited.Add(1)
		case tally.OutcomeAllowed:
			live.OK.Add(1)
		}
	}
	if v.e.record {
		n := v.e.ids.n
		v.sh.arrivals = append(v.sh.arrivals, judge.Arrival{
			Identity: int(j.i % int64(n)),
			DueNs:    int64(j.due), SendNs: int64(send), DoneNs: int64(done), Status: status,
		})
	}
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// wake is when a VU that claimed an iteration due at due wakes to send it:
// the due time itself, or, when several iterations fall due within a
// wakeGrid (a rate above 1000/s), the next line of that grid, so the VUs
// whose iterations fall due within the same millisecond wake together
// (as wrk2's event loop does). Each is then late by less than the grid,
// and its latency from due counts it.
func (e *engine) wake(due time.Duration) time.Duration {
	if e.grid <= 0 {
		return due
	}
	return (due + e.grid - 1) / e.grid * e.grid
}
