package load

import (
	"errors"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// vu is a virtual user: a goroutine that runs one iteration at a time and
// owns everything it records (its tally), so recording takes no lock. The
// engine merges the VUs when the run is over.
type vu struct {
	e    *engine
	id   int
	jobs chan job // capacity 1: the scheduler hands a job only to an idle VU

	conn conn // the VU's side of the engine's client

	t        *tally.Tally
	arrivals []judge.Arrival // only when the verdict needs them

	bytesIn, bytesOut atomic.Int64 // the lean client's connections
}

func newVU(e *engine, id int) *vu {
	v := &vu{e: e, id: id, jobs: make(chan job, 1), t: tally.New(e.st, e.maxLat)}
	if e.client != nil {
		v.conn = e.client.open(e.runCtx, &v.bytesIn, &v.bytesOut)
	}
	return v
}

func (v *vu) loop() {
	live := v.e.o.Live
	for j := range v.jobs {
		v.e.do(v, j)
		if live != nil {
			live.Done.Add(1)
		}
		v.e.idle.push(v)
	}
	if v.conn != nil {
		v.conn.close()
	}
}

// add records one finished iteration: send and done are offsets from the
// start; status 0 means a transport error of the given kind.
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
		n := max(len(v.e.reqs), 1)
		v.arrivals = append(v.arrivals, judge.Arrival{
			Identity: int(j.i % int64(n)),
			DueNs:    int64(j.due), SendNs: int64(send), DoneNs: int64(done), Status: status,
		})
	}
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
