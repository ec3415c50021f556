package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// engine is one run in progress.
type engine struct {
	o      Options
	sched  rate.Schedule
	clock  Clock       // the dispatcher's time (nil: the real clock)
	ids    *identities // each identity's request, built when first sent (identities.go)
	client client      // lean (h1.go) or net/http (std.go)
	// clientName is the stack in use: HTTPClientLean or HTTPClientStd
	clientName string

	start     time.Time // monotonic origin of every offset
	startWall time.Time // Options.Now() at the start
	parent    context.Context
	runCtx    context.Context // cancelled by an interrupt or the hard deadline

	// The iterations: next is the first not yet claimed (VUs claim them
	// themselves, engine.claim); planned is how many the schedule holds.
	next    atomic.Int64
	planned int64
	shards  []*shard      // where the VUs record (vu.go)
	grid    time.Duration // VUs wake on this grid (0: at each due time; vu.go wake)
	// droppedLate: iterations VUs dropped as more than MaxLateness late
	droppedLate atomic.Int64
	// busy: VUs in a request now; maxBusy: the most at once
	busy, maxBusy atomic.Int64

	st     *tally.Statuses // which statuses are refusals and which are not failures
	zeros  *tally.Zeros    // what each identity's Retry-After: 0 was worth
	record bool            // keep every arrival (for the verdict)
	maxLat int64           // histogram ceiling, µs

	// bytes on net/http's connections (the lean client counts per VU)
	bytesIn, bytesOut atomic.Int64

	// thresholds: --max-failed and every --threshold, in that order
	checks []judge.Threshold
	// --abort-on-fail: the watch stops the run once a threshold is lost
	watch              bool
	watchLat           bool         // some threshold aborts on max or min latency
	dueMaxUs, dueMinUs atomic.Int64 // latency from due extremes (-1: none yet)
	aborted            atomic.Bool
	abortOnce          sync.Once
	abortCh            chan struct{}
	abortIdx           int // index in checks of the threshold that stopped the run
	abortWhy           string
	cancelRun          context.CancelFunc

	// cpu says when the CPU is saturated, so VUs are not added (cpu.go);
	// nil when the run can add none
	cpu *cpuWatch

	disruptions []judge.Disruption // the faults as played (Options.Faults)
	firstLate   time.Duration      // lateness of the first iteration
}

// job is one iteration a VU runs: i its index in the whole plan, n in
// the schedule (a segment's own), due its due time.
type job struct {
	i, n int64
	due  time.Duration
}

// Run executes the load test described by o and returns its result. Bad
// options are exit-2 errors; a target that refuses the connection before the
// clock starts is an exit-3 error. When ctx is cancelled (Ctrl-C) Run stops
// scheduling, cuts the requests in flight and returns the result of what
// ran with Interrupted set and a nil error.
func Run(ctx context.Context, o Options) (*tally.Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	sched, _ := rate.NewSchedule(o.Rate, o.Duration) // validated by withDefaults
	if o.Segment.Count > 1 {
		sched, _ = sched.Segment(int64(o.Segment.Index), int64(o.Segment.Count))
	}
	rule, _ := judge.NewRule(o.LimitedStatus) // checked by withDefaults
	e := &engine{o: o, sched: sched, parent: ctx, record: o.Expect.Judges() || o.Faults != nil,
		st: tally.NewStatuses(rule, o.ExpectStatus), zeros: tally.NewZeros(o.Identities)}
	e.maxLat = int64((o.Timeout + MaxLateness + 5*time.Second) / time.Microsecond)
	if !o.NoMaxFailed {
		e.checks = append(e.checks, judge.MaxFailed(o.MaxFailed))
	}
	e.checks = append(e.checks, o.Thresholds...)
	if o.AbortOnFail && len(e.checks) > 0 {
		e.watch = true
		e.abortCh = make(chan struct{})
		e.dueMaxUs.Store(-1)
		e.dueMinUs.Store(-1)
		for _, t := range e.checks {
			if t.Metric == "max" || t.Metric == "min" {
				e.watchLat = true
			}
		}
		if e.o.Live == nil {
			e.o.Live = &Live{}
		}
	}
	if err := e.prepare(); err != nil {
		return nil, err
	}
	if err := e.preflight(ctx); err != nil {
		return nil, err
	}
	return e.run(ctx), nil
}

// prepare builds the requests and the HTTP client, once.
func (e *engine) prepare() error {
	o := e.o
	u, _ := url.Parse(o.Target)
	ids, err := newIdentities(&e.o, u)
	if err != nil {
		return err
	}
	e.ids = ids
	name, err := chooseClient(&e.o, u)
	if err != nil {
		return err
	}
	e.clientName = name
	if name == HTTPClientLean {
		e.client = newLeanClient(&e.o, u, e.ids)
	} else {
		e.client = newStdClient(&e.o, e.ids, &e.bytesIn, &e.bytesOut)
	}
	return nil
}

// preflight dials the target once before the clock starts, so a target
// that is down gives exit 3 at once instead of a run of refused requests.
func (e *engine) preflight(ctx context.Context) error {
	if e.o.Transport != nil {
		return nil
	}
	u, _ := url.Parse(e.o.Target)
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	if proxy, _ := http.ProxyFromEnvironment(e.ids.template); proxy != nil {
		return nil // the proxy decides; requests will tell
	}
	d := net.Dialer{Timeout: min(e.o.Timeout, 5*time.Second)}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return exitcode.UnreachableError(fmt.Errorf("target %s is unreachable: %w; start it or check --target", host, err))
	}
	defer c.Close()
	if u.Scheme == "https" {
		return checkTLS(c, host, u.Hostname(), d.Timeout)
	}
	return nil
}

func (e *engine) run(ctx context.Context) *tally.Result {
	o := e.o
	// The run's context ends on Ctrl-C (ctx) or at the hard deadline: the
	// duration, the lateness bound and one timeout for the last requests.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.runCtx = runCtx
	e.cancelRun = cancel
	e.planned = e.sched.Planned()
	if d, ok := e.sched.Due(1); ok && d < wakeGrid {
		e.grid = wakeGrid
	}
	e.shards = make([]*shard, shardsPerRun(o.MaxVUs, runtime.GOMAXPROCS(0)))
	for k := range e.shards {
		e.shards[k] = newShard(e)
	}
	var wg sync.WaitGroup
	var vus []*vu
	newVUs := func(n int) []*vu {
		for range n {
			vus = append(vus, newVU(e, len(vus)))
		}
		return vus[len(vus)-n:]
	}
	pre := newVUs(o.PreAllocatedVUs)
	conns := make([]conn, len(pre))
	for k, v := range pre {
		conns[k] = v.conn
	}
	e.client.warm(conns)

	clock := e.clock
	if clock == nil {
		clock = &realClock{}
	}
	if !o.StartAt.IsZero() {
		// every segment starts its clock at the same wall-clock instant
		// (after Ctrl-C here the dispatcher stops at once: interrupted)
		clock.Sleep(runCtx, o.StartAt.Sub(o.Now()))
	}
	e.startWall = o.Now()
	e.start = clock.Now()
	hard := time.AfterFunc(o.Duration+MaxLateness+o.Timeout+time.Second, cancel)
	defer hard.Stop()
	// The faults run beside the schedule, on the same origin.
	var disruptions []judge.Disruption
	faultsDone := make(chan struct{})
	if o.Faults != nil {
		go func() {
			defer close(faultsDone)
			disruptions = o.Faults.Run(runCtx, e.start)
		}()
	} else {
		close(faultsDone)
	}

	// The pre-allocated VUs start claiming iterations at once; the
	// dispatcher adds a VU for an iteration none of them claimed in time.
	for _, v := range pre {
		wg.Go(func() { v.loop(nil) })
	}
	var added int64
	var lastAdd time.Duration // when the dispatcher last added a VU
	if o.MaxVUs > len(vus) {
		e.cpu = watchCPU(runCtx, o.saturated)
	}
	lastHeld := int64(-1) // the last iteration the saturated CPU held back a VU for
	live := e.o.Live
	stopWatch := e.startWatch(e.planned)
	d := dispatcher{sched: e.sched, clock: clock, start: e.start, next: &e.next, grace: claimGrace,
		// A VU is added only when every VU is in a request: one between
		// requests takes the iteration (late). And when the CPU is too busy
		// to wake the dispatcher on time, VUs are added no faster than one
		// per such delay: a VU waiting for a CPU to read its response looks
		// busy, and adding VUs (each a connection to the target, on the same
		// CPUs) for every late iteration is how a saturated machine used to
		// go from clean to a cascade.
		leave: func(elapsed, overslept time.Duration) bool {
			if e.busy.Load() < int64(len(vus)) {
				return true
			}
			// Nor while the CPU is saturated: the iteration goes to
			// the first VU that finishes, late, or is dropped as late
			// (cpu.go).
			if e.cpu != nil && e.cpu.saturated.Load() && len(vus) < o.MaxVUs {
				if i := e.next.Load(); i != lastHeld {
					lastHeld = i
					e.cpu.hold(elapsed)
				}
				return true
			}
			return overslept > claimGrace && elapsed-lastAdd < overslept
		},
		hand: func(i int64, due, late time.Duration) bool {
			if len(vus) >= o.MaxVUs {
				return false
			}
			v := newVUs(1)[0]
			added++
			lastAdd = due + late
			j := job{i: e.sched.Global(i), n: i, due: due}
			wg.Go(func() { v.loop(&j) })
			return true
		},
	}
	if live != nil {
		d.dropped = func(n int64) { live.Dropped.Add(n) }
	}
	// The dispatcher stops once every iteration is claimed, or when the
	// run's context ends: Ctrl-C (interrupted), --abort-on-fail, the hard
	// deadline. The VUs stop when they find nothing left to claim.
	dc := d.run(runCtx)
	wg.Wait()
	stopWatch()
	elapsed := time.Since(e.start)
	// The plan ends before the schedule does (Faults.validate); a fault
	// still in force now (a failover slower than the run) is cut short,
	// and undone, by the end of the run's context.
	cancel()
	<-faultsDone
	e.client.close()
	if live != nil {
		live.ActiveVUs.Store(0)
	}

	var sent int64
	for _, v := range vus {
		sent += v.sent
	}
	droppedNoVU, droppedLate := dc.droppedNoVU, dc.droppedLate+e.droppedLate.Load()
	// Interrupted: Ctrl-C ended the run before every iteration was sent
	// or dropped (a VU may hold a claim that never fell due).
	interrupted := ctx.Err() != nil && (dc.stopped || sent+droppedNoVU+droppedLate < e.planned)
	res := &tally.Result{
		Kind: tally.Kind, Version: 1,
		Target: secret.URL(o.Target), Method: o.Method, StartedAt: e.startWall,
		Rate: o.Rate.String(), RatePerS: o.Rate.PerSecond(),
		DurationS: o.Duration.Seconds(), ElapsedS: elapsed.Seconds(), TimeoutS: o.Timeout.Seconds(),
		Identities: o.Identities, RunID: o.RunID, LimitedStatus: e.st.Rule.Declared(),
		Planned: e.planned, Sent: sent,
		DroppedNoVU: droppedNoVU, DroppedLate: droppedLate, Dropped: droppedNoVU + droppedLate,
		Interrupted: interrupted, Aborted: e.aborted.Load(),
		VUs: tally.VUStats{PreAllocated: o.PreAllocatedVUs, Max: o.MaxVUs, Peak: len(vus), Added: added, MaxBusy: e.maxBusy.Load()},
	}
	res.NotStarted = e.planned - sent - res.Dropped
	e.disruptions = disruptions
	e.finish(res, vus)
	return res
}

// wakeGrid is the grid VUs wake on when iterations fall due less than it
// apart.
const wakeGrid = time.Millisecond

// claimGrace is how long past its due time an iteration no VU claimed
// waits before the dispatcher adds a VU for it (or drops it when it can
// add none): a VU finishing its request within it claims the iteration
// itself, a little late, instead of a new VU being added for a moment's
// delay.
const claimGrace = time.Millisecond

// do runs iteration j on VU v and records it.
func (e *engine) do(v *vu, j job) {
	k := int(j.i % int64(e.ids.n))
	send := time.Since(e.start)
	v.sent++
	busy := e.busy.Add(1)
	for m := e.maxBusy.Load(); busy > m && !e.maxBusy.CompareAndSwap(m, busy); m = e.maxBusy.Load() {
	}
	live := e.o.Live
	if live != nil {
		live.Sent.Add(1)
		live.ActiveVUs.Store(busy)
	}
	status, h, err := v.conn.do(k)
	done := time.Since(e.start)
	e.busy.Add(-1)
	sh := v.sh
	sh.mu.Lock()
	tally.Record(sh.late, send-j.due)
	if j.n == 0 {
		e.firstLate = send - j.due
	}
	zero := false
	if status != 0 {
		v.t.Inspect(status, h, e.startWall.Add(send))
		zero = v.t.Zero()
		if left := v.t.Remaining(); left >= 0 && len(sh.answers) < maxAnswers {
			sh.answers = append(sh.answers, answer{id: k, Answer: judge.Answer{
				Sent: e.start.Add(send), Done: e.start.Add(done), Remaining: left}})
		}
		e.zeros.Observe(v.t, k, int64(send), int64(done), e.st.Rule.Limited(status), zero)
	}
	v.add(j, send, done, status, e.errKind(status, err))
	sh.mu.Unlock()
}

// errKind names the outcome of a request without a status: interrupted by
// Ctrl-C or an abort, a timeout (its own, or the run's hard deadline), or a
// transport error.
func (e *engine) errKind(status int, err error) string {
	switch {
	case status != 0:
		return ""
	case e.parent.Err() != nil, e.aborted.Load():
		return errInterrupted
	case e.runCtx.Err() != nil:
		return "timeout"
	default:
		return classify(err)
	}
}

const errInterrupted = tally.ErrInterrupted

// classify names a transport error for the errors table.
func classify(err error) string {
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &de):
		return "dns"
	case errors.As(err, &oe) && oe.Op == "dial":
		if isRefused(err) {
			return "connection refused"
		}
		return "dial"
	case errors.Is(err, errMalformed):
		return "malformed response"
	case isReset(err):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	default:
		return "other"
	}
}

// ConnectKinds are the error kinds that mean the target could not be
// reached at all (exit 3 when they are all a run got).
var ConnectKinds = map[string]bool{"connection refused": true, "dns": true, "dial": true}
