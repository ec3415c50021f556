package load

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
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

	conn conn // the VU's side of the engine's client

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

	hdr       headerCounts
	inspector header.Inspector // caches the last RateLimit-Policy parse
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
	wrongStatus                int64
	wrongStatusExample         string
	resetBeyond                int64
	resetExample               string
}

// maxPolicyValues bounds the distinct RateLimit-Policy values counted.
const maxPolicyValues = 64

func newVU(e *engine, id int) *vu {
	v := &vu{
		e: e, id: id, jobs: make(chan job, 1),
		lat:     newHistogram(e.maxLat),
		fromDue: newHistogram(e.maxLat),
		status:  map[int]int64{},
		errs:    map[string]int64{},
		hdr:     headerCounts{policyValues: map[string]int64{}},
	}
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
			DueNs:    int64(j.due), SendNs: int64(send), DoneNs: int64(done), Status: status,
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

// inspect counts what header.Inspect finds in the rate limit headers of
// one response.
func (v *vu) inspect(status int, h http.Header, now time.Time) {
	in := v.inspector.Inspect(status, h, now)
	c := &v.hdr
	if in.HasPolicy {
		c.policyPresent++
		if in.PolicyErr == nil {
			c.policyValid++
			// the most common value is reported; a target (or a
			// recording) with ever new values must not grow the map
			if len(c.policyValues) < maxPolicyValues {
				c.policyValues[in.PolicyValue]++ // one map operation, the common case
			} else if _, ok := c.policyValues[in.PolicyValue]; ok {
				c.policyValues[in.PolicyValue]++
			}
		} else if c.policyErr == "" {
			c.policyErr = in.PolicyErr.Error()
		}
	}
	if in.HasLimit {
		c.limitPresent++
		if in.LimitErr == nil {
			c.limitValid++
		} else if c.limitErr == "" {
			c.limitErr = in.LimitErr.Error()
		}
	}
	if status == http.StatusTooManyRequests {
		c.retryChecked++
		if in.HasRetryAfter {
			c.retryPresent++
		}
		if in.RetryAfterErr == nil {
			c.retryValid++
		} else if c.retryErr == "" {
			c.retryErr = in.RetryAfterErr.Error()
		}
		if in.Storable {
			c.storable++
			if c.storableWhy == "" {
				c.storableWhy = in.StorableWhy
			}
		}
	}
	if in.HasLegacy {
		c.legacy++
		c.legacyPrefix = in.Legacy.Prefix
	}
	if in.HasLimit && in.LimitErr == nil {
		limited := false
		for _, l := range in.Limits {
			limited = limited || l.Remaining == 0
			for _, p := range in.Policies {
				if p.Name == l.Name && p.Window > 0 && l.Reset > p.Window+1 {
					c.resetBeyond++
					if c.resetExample == "" {
						c.resetExample = fmt.Sprintf("t=%d with w=%d", l.Reset, p.Window)
					}
				}
			}
		}
		if limited && (status >= 500 || status == http.StatusForbidden) {
			c.wrongStatus++
			if c.wrongStatusExample == "" {
				c.wrongStatusExample = strconv.Itoa(status)
			}
		}
	}
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
