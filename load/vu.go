package load

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelimit-dev/ratelimit/header"
)

// vu is a virtual user: a goroutine that runs one iteration at a time and
// owns everything it records, so recording takes no lock. The engine
// merges the VUs when the run is over.
type vu struct {
	e    *engine
	id   int
	jobs chan job // capacity 1: the scheduler hands a job only to an idle VU

	// The VU's requests carry ctx, derived once from the run's context (not
	// per request, so VUs do not contend on the run context's lock); timer
	// cancels it when a request outlives --timeout, and the VU renews it.
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
	reqs   []*http.Request // the prepared requests bound to ctx (nil: bind per request)

	h1 h1State // the lean client's connection (when engine.h1)

	lat, fromDue *hdrhistogram.Histogram // µs

	status    map[int]int64
	errs      map[string]int64
	timeline  []tick    // by second of the send; status 0 = transport error
	arrivals  []Arrival // only when the verdict needs them
	completed int64
	responses int64
	allowed   int64
	limited   int64
	failed    int64

	bytesIn, bytesOut atomic.Int64 // the lean client's connections

	hdr    headerCounts
	policy policyCache
}

type headerCounts struct {
	limitPresent, limitValid   int64
	policyPresent, policyValid int64
	retryChecked, retryPresent int64
	retryValid                 int64
	storable                   int64
	legacy                     int64
	limitErr, policyErr        string
	retryErr, storableWhy      string
	legacyPrefix               string
	policyValues               map[string]int64 // valid RateLimit-Policy values seen
}

// policyCache remembers the last RateLimit-Policy value: it is meant to stay
// the same over a run, so most responses skip the parse.
type policyCache struct {
	raw      string
	policies []header.Policy
	err      error
}

func newVU(e *engine, id int) *vu {
	v := &vu{
		e: e, id: id, jobs: make(chan job, 1),
		lat:     newHistogram(e.maxLat),
		fromDue: newHistogram(e.maxLat),
		status:  map[int]int64{},
		errs:    map[string]int64{},
		hdr:     headerCounts{policyValues: map[string]int64{}},
		h1:      h1State{hdr: http.Header{}},
	}
	if e.h1 {
		v.interruptOnDone(e.runCtx)
	}
	return v
}

// maxBoundRequests is how many prepared requests (identities) a VU keeps
// bound to its context; beyond it, each iteration binds its own copy.
const maxBoundRequests = 64

func (v *vu) loop() {
	live := v.e.o.Live
	for j := range v.jobs {
		v.e.do(v, j)
		if live != nil {
			live.Done.Add(1)
		}
		v.e.idle.push(v)
	}
	if v.cancel != nil {
		v.timer.Stop()
		v.cancel()
	}
	if v.h1.stop != nil {
		v.h1.stop()
	}
	v.h1.closeConn()
}

// renew gives the VU a fresh context and timeout timer. Each timer cancels
// only the context it was made with, so a timer firing late is harmless.
func (v *vu) renew() {
	if v.cancel != nil {
		v.cancel()
	}
	ctx, cancel := context.WithCancel(v.e.runCtx)
	v.ctx, v.cancel = ctx, cancel
	v.timer = time.AfterFunc(time.Hour, cancel)
	v.timer.Stop()
	// Requests with a body need a fresh body each time: they are never kept.
	if len(v.e.reqs) <= maxBoundRequests && len(v.e.o.Body) == 0 {
		v.reqs = make([]*http.Request, len(v.e.reqs))
	}
}

// SignificantDigits is the precision of the latency histograms: values are
// kept within 1% (two significant digits). Each VU owns two histograms;
// at three digits they take about 120 KB each over a 10 s range, and a
// burst of new VUs allocating megabytes is exactly what pushes a saturated
// machine from clean into a cascade; at two digits, about 18 KB.
const SignificantDigits = 2

func newHistogram(maxUs int64) *hdrhistogram.Histogram {
	return hdrhistogram.New(1, maxUs, SignificantDigits)
}

func us(d time.Duration) int64 { return max(int64(d/time.Microsecond), 1) }

func record(h *hdrhistogram.Histogram, d time.Duration) {
	v := min(us(d), h.HighestTrackableValue())
	_ = h.RecordValue(v) // in range by construction
}

// add records one finished iteration: send and done are offsets from the
// start; status 0 means a transport error of the given kind.
func (v *vu) add(j job, send, done time.Duration, status int, kind string) {
	live := v.e.o.Live
	if kind == errInterrupted {
		v.errs[kind]++
		return // cut off by Ctrl-C: neither a success nor the target's failure
	}
	if status != 0 && !validStatus(status) {
		status, kind = 0, "malformed response" // never an index out of range
	}
	v.completed++
	record(v.lat, done-send)
	record(v.fromDue, done-j.due)
	if v.e.watchLat {
		v.e.observeDue(us(done - j.due))
	}
	v.tick(int32(send/time.Second), int32(status))
	if status == 0 {
		v.errs[kind]++
		v.failed++
		if live != nil {
			live.Failed.Add(1)
		}
	} else {
		v.responses++
		v.status[status]++
		if !v.e.expected(status) {
			v.failed++
			if live != nil {
				live.Failed.Add(1)
			}
		}
		if status == http.StatusTooManyRequests {
			v.limited++
			if live != nil {
				live.Limited.Add(1)
			}
		} else if status >= 200 && status < 400 {
			v.allowed++
			if live != nil {
				live.OK.Add(1)
			}
		}
	}
	if v.e.record {
		n := max(len(v.e.reqs), 1)
		v.arrivals = append(v.arrivals, Arrival{
			Identity: int(j.i % int64(n)),
			SendNs:   int64(send), DoneNs: int64(done), Status: status,
		})
	}
}

// tick counts one iteration in the timeline: the responses of one status
// (0: transport errors) in one second of the run. A VU's sends come in time
// order, so its ticks are sorted by second with the current second's at the
// tail: 16 bytes per (second, status) the VU saw, never one entry per
// second of the run nor a map per second.
type tick struct {
	sec, status int32
	n           int64
}

func (v *vu) tick(sec, status int32) {
	for i := len(v.timeline) - 1; i >= 0 && v.timeline[i].sec == sec; i-- {
		if v.timeline[i].status == status {
			v.timeline[i].n++
			return
		}
	}
	v.timeline = append(v.timeline, tick{sec: sec, status: status, n: 1})
}

// inspect checks the rate limit headers of one response.
func (v *vu) inspect(status int, h http.Header, now time.Time) {
	c := &v.hdr
	if vs := header.PolicyLines(h); len(vs) > 0 {
		c.policyPresent++
		raw := vs[0]
		if len(vs) > 1 {
			raw = joinLines(vs)
		}
		if raw != v.policy.raw || (v.policy.policies == nil && v.policy.err == nil) {
			v.policy.raw = raw
			v.policy.policies, v.policy.err = header.ParsePolicies(vs)
		}
		if v.policy.err == nil {
			c.policyValid++
			c.policyValues[raw]++
		} else if c.policyErr == "" {
			c.policyErr = v.policy.err.Error()
		}
	}
	if vs := header.LimitLines(h); len(vs) > 0 {
		c.limitPresent++
		ls, err := header.ParseLimits(vs)
		if err == nil && v.policy.err == nil && len(header.PolicyLines(h)) > 0 {
			err = header.CheckConsistent(v.policy.policies, ls)
		}
		if err == nil {
			c.limitValid++
		} else if c.limitErr == "" {
			c.limitErr = err.Error()
		}
	}
	if status == http.StatusTooManyRequests {
		c.retryChecked++
		if len(h[header.NameRetryAfter]) > 0 {
			c.retryPresent++
		}
		if _, err := header.CheckRetryAfter(h, now); err == nil {
			c.retryValid++
		} else if c.retryErr == "" {
			c.retryErr = err.Error()
		}
		if ok, why := header.Storable429(h); ok {
			c.storable++
			if c.storableWhy == "" {
				c.storableWhy = why
			}
		}
	}
	if l, ok := header.ParseLegacy(h); ok {
		c.legacy++
		c.legacyPrefix = l.Prefix
	}
}

func joinLines(vs []string) string {
	n := 0
	for _, s := range vs {
		n += len(s) + 2
	}
	b := make([]byte, 0, n)
	for i, s := range vs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, s...)
	}
	return string(b)
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
