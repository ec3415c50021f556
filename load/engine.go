package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
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
	clock  Clock           // the dispatcher's time (nil: the real clock)
	reqs   []*http.Request // prepared once: one per identity (or one)
	client client          // lean (h1.go) or net/http (std.go)
	// clientName is the stack in use: HTTPClientLean or HTTPClientStd
	clientName string

	start     time.Time // monotonic origin of every offset
	startWall time.Time // Options.Now() at the start
	parent    context.Context
	runCtx    context.Context // cancelled by an interrupt or the hard deadline

	idle   idleStack
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

	disruptions []judge.Disruption // the faults as played (Options.Faults)
	firstLate   time.Duration      // lateness of the first iteration
}

// idleStack holds the idle VUs. It is a stack: the next iteration goes to
// the VU that finished last, which is often still running (so no parked
// goroutine must be woken) and whose connection is warm; a FIFO would hand
// work to the VU idle longest, always parked.
type idleStack struct {
	mu  sync.Mutex
	vus []*vu
}

func (s *idleStack) push(v *vu) {
	s.mu.Lock()
	s.vus = append(s.vus, v)
	s.mu.Unlock()
}

// pop returns the most recently idle VU (nil if none) and how many VUs are
// idle after it was taken.
func (s *idleStack) pop() (*vu, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.vus)
	if n == 0 {
		return nil, 0
	}
	v := s.vus[n-1]
	s.vus = s.vus[:n-1]
	return v, n - 1
}

// job is one iteration handed to a VU.
type job struct {
	i   int64
	due time.Duration
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
	n := max(o.Identities, 1)
	e.reqs = make([]*http.Request, n)
	for k := range n {
		req, err := http.NewRequest(o.Method, o.Target, nil)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // its message quotes the URL, password and all
			}
			return exitcode.Usagef("--target %q: %v", secret.URL(o.Target), err)
		}
		for name, vs := range o.Headers {
			if http.CanonicalHeaderKey(name) == "Host" {
				req.Host = vs[0]
				continue
			}
			req.Header[name] = append([]string(nil), vs...)
		}
		if o.Identities > 0 {
			req.Header.Set(o.IdentityHeader, IdentityValue(o.RunID, k))
		}
		if len(o.Body) > 0 {
			req.ContentLength = int64(len(o.Body))
		}
		e.reqs[k] = req
	}
	u, _ := url.Parse(o.Target)
	name, err := chooseClient(&e.o, u)
	if err != nil {
		return err
	}
	e.clientName = name
	if name == HTTPClientLean {
		e.client = newLeanClient(&e.o, u)
	} else {
		e.client = newStdClient(&e.o, e.reqs, &e.bytesIn, &e.bytesOut)
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
	if proxy, _ := http.ProxyFromEnvironment(e.reqs[0]); proxy != nil {
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
	return c.Close()
}

func (e *engine) run(ctx context.Context) *tally.Result {
	o := e.o
	// The run's context ends on Ctrl-C (ctx) or at the hard deadline: the
	// duration, the lateness bound and one timeout for the last requests.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.runCtx = runCtx
	e.cancelRun = cancel
	e.idle.vus = make([]*vu, 0, o.MaxVUs)
	var wg sync.WaitGroup
	var vus []*vu
	spawn := func() *vu {
		v := newVU(e, len(vus))
		vus = append(vus, v)
		wg.Go(v.loop)
		return v
	}
	for range o.PreAllocatedVUs {
		e.idle.push(spawn())
	}
	conns := make([]conn, len(vus))
	for k, v := range vus {
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

	var added, maxBusy int64
	live := e.o.Live
	stopWatch := e.startWatch(e.sched.Planned())
	// Scheduling lateness: how long after its due time each iteration was
	// handed to a VU. Only the dispatcher's goroutine records it.
	lateness := tally.NewHistogram(e.maxLat)
	planned := e.sched.Planned()
	d := dispatcher{sched: e.sched, clock: clock, start: e.start,
		hand: func(i int64, due, late time.Duration) bool {
			v, idle := e.idle.pop()
			if v == nil && len(vus) < o.MaxVUs {
				v = spawn()
				added++
			}
			if v == nil {
				return false
			}
			v.jobs <- job{i: e.sched.Global(i), due: due}
			tally.Record(lateness, late)
			if i == 0 {
				e.firstLate = late
			}
			busy := int64(len(vus) - idle)
			maxBusy = max(maxBusy, busy)
			if live != nil {
				live.Sent.Add(1)
				live.ActiveVUs.Store(busy)
			}
			return true
		},
	}
	if live != nil {
		d.dropped = func(n int64) { live.Dropped.Add(n) }
	}
	// The dispatcher stops at the end of the schedule, or when the run's
	// context ends: Ctrl-C (interrupted), --abort-on-fail, the hard deadline.
	dc := d.run(runCtx)
	sent, droppedNoVU, droppedLate := dc.sent, dc.droppedNoVU, dc.droppedLate
	interrupted := dc.stopped && ctx.Err() != nil
	stopWatch()
	for _, v := range vus {
		close(v.jobs)
	}
	wg.Wait()
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

	res := &tally.Result{
		Kind: tally.Kind, Version: 1,
		Target: secret.URL(o.Target), Method: o.Method, StartedAt: e.startWall,
		Rate: o.Rate.String(), RatePerS: o.Rate.PerSecond(),
		DurationS: o.Duration.Seconds(), ElapsedS: elapsed.Seconds(), TimeoutS: o.Timeout.Seconds(),
		Identities: o.Identities, RunID: o.RunID, LimitedStatus: e.st.Rule.Declared(),
		Planned: planned, Sent: sent,
		DroppedNoVU: droppedNoVU, DroppedLate: droppedLate, Dropped: droppedNoVU + droppedLate,
		Interrupted: interrupted, Aborted: e.aborted.Load(),
		VUs: tally.VUStats{PreAllocated: o.PreAllocatedVUs, Max: o.MaxVUs, Peak: len(vus), Added: added, MaxBusy: maxBusy},
	}
	res.NotStarted = planned - sent - res.Dropped
	e.disruptions = disruptions
	e.finish(res, vus, lateness)
	return res
}

// do runs iteration j on VU v and records it.
func (e *engine) do(v *vu, j job) {
	k := int(j.i % int64(len(e.reqs)))
	send := time.Since(e.start)
	status, h, err := v.conn.do(k)
	zero := false
	if status != 0 {
		v.t.Inspect(status, h, e.startWall.Add(send))
		zero = v.t.Zero()
	}
	done := time.Since(e.start)
	if status != 0 {
		e.zeros.Observe(v.t, k, int64(send), int64(done), e.st.Rule.Limited(status), zero)
	}
	v.add(j, send, done, status, e.errKind(status, err))
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

func statusKey(s int) string { return strconv.Itoa(s) }
