package tally

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/judge"
)

// Tally counts the responses of a run as they come: statuses, errors, the
// timeline, the latency histograms and what the rate limit headers say.
// One Tally belongs to one goroutine (a load worker, a recording's
// reader), so counting takes no lock; Merge folds them when the run ends,
// and Fill writes the sum into a Result. The load executor and the
// recordings of other tools count through it alike.
type Tally struct {
	rule     judge.Rule
	expectOK *[1000]bool // statuses that are not failures

	Lat, FromDue *hdrhistogram.Histogram // µs

	status    map[int]int64
	errs      map[string]int64
	timeline  []tick // by second of the send; status 0 = transport error
	Completed int64
	Responses int64
	Allowed   int64
	Limited   int64
	Failed    int64
	// RetryZeroRefused and RetryZeroAdmitted count what became of the
	// same identity's next request after a Retry-After: 0 (Zeros).
	RetryZeroRefused, RetryZeroAdmitted int64

	hdr       headerCounts
	inspector header.Inspector // caches the last RateLimit-Policy parse
	lastZero  bool             // the last response inspected said Retry-After: 0
	lastLeft  int64            // the remaining quota the last admission reported; -1 unknown
}

// Statuses say how a run reads a status: which are the limiter's
// refusals and which are not failures (--expect-status).
type Statuses struct {
	Rule     judge.Rule
	expectOK [1000]bool
}

// NewStatuses returns the reading of statuses for a run: the expected
// statuses and the declared refusals (rule) are not failures; a declared
// refusal is a refusal everywhere, whether --expect-status lists it or not.
func NewStatuses(rule judge.Rule, expected []int) *Statuses {
	s := &Statuses{Rule: rule}
	for _, c := range append(slices.Clone(expected), rule.Declared()...) {
		if ValidStatus(c) {
			s.expectOK[c] = true
		}
	}
	return s
}

// Expected reports whether s is not a failure (--expect-status).
func (s *Statuses) Expected(c int) bool { return c >= 0 && c < len(s.expectOK) && s.expectOK[c] }

// New returns an empty tally whose histograms hold latencies up to maxUs.
func New(st *Statuses, maxUs int64) *Tally {
	return &Tally{
		rule: st.Rule, expectOK: &st.expectOK,
		Lat: NewHistogram(maxUs), FromDue: NewHistogram(maxUs),
		status: map[int]int64{}, errs: map[string]int64{},
		hdr: headerCounts{policyValues: map[string]int64{}, drafts: map[string]int64{}},
	}
}

// SignificantDigits is the precision of the latency histograms: values are
// kept within 1% (two significant digits). A load worker owns two
// histograms; at three digits they take about 120 KB each over a 10 s
// range, and a burst of new workers allocating megabytes is exactly what
// pushes a saturated machine from clean into a cascade; at two digits,
// about 18 KB.
const SignificantDigits = 2

// NewHistogram is a latency histogram of µs from 1 to maxUs.
func NewHistogram(maxUs int64) *hdrhistogram.Histogram {
	return hdrhistogram.New(1, maxUs, SignificantDigits)
}

// Us is d in whole µs, at least 1 (the histograms' lowest value).
func Us(d time.Duration) int64 { return max(int64(d/time.Microsecond), 1) }

// Record adds d to h, at most h's ceiling.
func Record(h *hdrhistogram.Histogram, d time.Duration) {
	v := min(Us(d), h.HighestTrackableValue())
	_ = h.RecordValue(v) // in range by construction
}

// ValidStatus reports whether s is a status a run counts under its own
// code: three digits, 100 to 999.
func ValidStatus(s int) bool { return s >= 100 && s <= 999 }

// Outcome is what one response was, as Count sorts it.
type Outcome uint8

// The outcomes of a response.
const (
	OutcomeError   Outcome = iota // no status: a transport error
	OutcomeAllowed                // judge.Allowed
	OutcomeLimited                // the limiter refused it (judge.Rule)
	OutcomeOther                  // any other status
)

// Count adds one completed request: its status (0 with kind for a
// transport error), its latency from the send and from the due time. It
// returns how it sorted the response and whether it failed (a transport
// error or a status not expected).
func (t *Tally) Count(status int, kind string, lat, fromDue time.Duration) (Outcome, bool) {
	if status != 0 && !ValidStatus(status) {
		status, kind = 0, "malformed response" // never an index out of range
	}
	t.Completed++
	Record(t.Lat, lat)
	Record(t.FromDue, fromDue)
	if status == 0 {
		if kind == "" {
			kind = "other"
		}
		t.errs[kind]++
		t.Failed++
		return OutcomeError, true
	}
	t.Responses++
	t.status[status]++
	failed := !t.expectOK[status]
	if failed {
		t.Failed++
	}
	switch {
	case judge.Allowed(status):
		t.Allowed++
		return OutcomeAllowed, failed
	case t.rule.Limited(status):
		t.Limited++
		return OutcomeLimited, failed
	}
	return OutcomeOther, failed
}

// Interrupted counts a request cut off by Ctrl-C or an abort: shown among
// the errors, neither completed nor the target's failure.
func (t *Tally) Interrupted() { t.errs[ErrInterrupted]++ }

// ErrInterrupted is the error kind of a request cut off by the run's end.
const ErrInterrupted = "interrupted"

// tick counts one request in the timeline: the responses of one status
// (0: transport errors) in one second of the run. A worker's sends come in
// time order, so its ticks are sorted by second with the current second's
// at the tail: 16 bytes per (second, status) seen, never one entry per
// second of the run nor a map per second.
type tick struct {
	sec, status int32
	n           int64
}

// Tick counts a request sent in second sec of the run (from 0) with status
// (0: no status) in the timeline.
func (t *Tally) Tick(sec int64, status int) {
	if status != 0 && !ValidStatus(status) {
		status = 0
	}
	s32, st := int32(sec), int32(status)
	for i := len(t.timeline) - 1; i >= 0 && t.timeline[i].sec == s32; i-- {
		if t.timeline[i].status == st {
			t.timeline[i].n++
			return
		}
	}
	t.timeline = append(t.timeline, tick{sec: s32, status: st, n: 1})
}

type headerCounts struct {
	inspected                  int64
	drafts                     map[string]int64 // responses by the draft of their RateLimit fields
	oldDraftExample            string
	retryZero                  int64 // refusals with Retry-After: 0
	allowedBare, allowedWith   int64 // admitted responses without / with the decision's RateLimit (or legacy) field
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
	firstPolicy                string
	wrongStatus                int64
	wrongStatusExample         string
	resetBeyond                int64
	resetExample               string
}

// maxPolicyValues bounds the distinct RateLimit-Policy values counted.
const maxPolicyValues = 64

// Inspect counts what the rate limit headers of one response say.
func (t *Tally) Inspect(status int, h http.Header, now time.Time) {
	in := t.inspector.Inspect(status, h, now, t.rule.Limited(status))
	c := &t.hdr
	c.inspected++
	if in.Draft != "" {
		c.drafts[in.Draft]++
		if in.Draft != header.DraftCurrent && c.oldDraftExample == "" {
			c.oldDraftExample = draftExample(h)
		}
	}
	if judge.Allowed(status) {
		// RateLimit (or the legacy remaining) is the decision's own
		// field; RateLimit-Policy alone may be sent before deciding
		if in.HasLimit || in.HasLegacy {
			c.allowedWith++
		} else {
			c.allowedBare++
		}
	}
	t.lastZero = in.RetryAfterZero
	t.lastLeft = -1
	if judge.Allowed(status) {
		switch {
		case in.HasLimit && in.LimitErr == nil && len(in.Limits) > 0:
			t.lastLeft = in.Limits[0].Remaining
		case in.HasLegacy && in.Legacy.Remaining >= 0:
			t.lastLeft = in.Legacy.Remaining
		}
	}
	if in.RetryAfterZero {
		c.retryZero++
	}
	if in.HasPolicy {
		c.policyPresent++
		if in.PolicyErr == nil {
			c.policyValid++
			if c.firstPolicy == "" {
				c.firstPolicy = in.PolicyValue
			}
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
	if t.rule.Limited(status) {
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
		if limited && !t.rule.Limited(status) && (status >= 500 || status == http.StatusForbidden) {
			c.wrongStatus++
			if c.wrongStatusExample == "" {
				c.wrongStatusExample = strconv.Itoa(status)
			}
		}
	}
	// a refusal the user declared (--limited-status 503) counts as the
	// limiter's everywhere, and is still a finding: it is not a 429
	if t.rule.Limited(status) && status != http.StatusTooManyRequests {
		c.wrongStatus++
		if c.wrongStatusExample == "" {
			c.wrongStatusExample = strconv.Itoa(status)
		}
	}
}

// FirstPolicy is the first valid RateLimit-Policy value seen ("" if none).
func (t *Tally) FirstPolicy() string { return t.hdr.firstPolicy }

// Merge adds o's counts to t's; o is not used afterwards.
func (t *Tally) Merge(o *Tally) {
	t.Lat.Merge(o.Lat)
	t.FromDue.Merge(o.FromDue)
	for s, n := range o.status {
		t.status[s] += n
	}
	for k, n := range o.errs {
		t.errs[k] += n
	}
	t.timeline = append(t.timeline, o.timeline...)
	t.Completed += o.Completed
	t.Responses += o.Responses
	t.Allowed += o.Allowed
	t.Limited += o.Limited
	t.Failed += o.Failed
	a, b := &t.hdr, &o.hdr
	a.inspected += b.inspected
	a.limitPresent += b.limitPresent
	a.limitValid += b.limitValid
	a.limitErr = firstOf(a.limitErr, b.limitErr)
	a.policyPresent += b.policyPresent
	a.policyValid += b.policyValid
	a.policyErr = firstOf(a.policyErr, b.policyErr)
	a.firstPolicy = firstOf(a.firstPolicy, b.firstPolicy)
	a.retryChecked += b.retryChecked
	a.retryPresent += b.retryPresent
	a.retryValid += b.retryValid
	a.retryErr = firstOf(a.retryErr, b.retryErr)
	a.storable += b.storable
	a.storableWhy = firstOf(a.storableWhy, b.storableWhy)
	a.legacy += b.legacy
	a.legacyPrefix = firstOf(a.legacyPrefix, b.legacyPrefix)
	a.wrongStatus += b.wrongStatus
	a.wrongStatusExample = firstOf(a.wrongStatusExample, b.wrongStatusExample)
	a.resetBeyond += b.resetBeyond
	a.resetExample = firstOf(a.resetExample, b.resetExample)
	for raw, n := range b.policyValues {
		a.policyValues[raw] += n
	}
	for d, n := range b.drafts {
		a.drafts[d] += n
	}
	a.oldDraftExample = firstOf(a.oldDraftExample, b.oldDraftExample)
	a.retryZero += b.retryZero
	a.allowedBare += b.allowedBare
	a.allowedWith += b.allowedWith
	t.RetryZeroAdmitted += o.RetryZeroAdmitted
	t.RetryZeroRefused += o.RetryZeroRefused
	o.timeline = nil
}

// Fill writes the counts into res: statuses, errors, the timeline (every
// second up to lastSec, empty ones included, or further when a request
// was sent later), latencies and header counts (headerMode is --headers;
// inspected=false: the responses' headers were not recorded, and why
// says so).
func (t *Tally) Fill(res *Result, lastSec int, headerMode, notRecorded string) {
	res.Status = map[string]int64{}
	for s, n := range t.status {
		res.Status[strconv.Itoa(s)] += n
	}
	res.Errors = map[string]int64{}
	for k, n := range t.errs {
		res.Errors[k] += n
	}
	res.Completed, res.Responses = t.Completed, t.Responses
	res.Allowed, res.RateLimited, res.Failed = t.Allowed, t.Limited, t.Failed

	timeline := map[int]map[int]int64{}
	for _, tk := range t.timeline {
		sec := int(tk.sec)
		if timeline[sec] == nil {
			timeline[sec] = map[int]int64{}
		}
		timeline[sec][int(tk.status)] += tk.n
	}
	for sec := range timeline {
		lastSec = max(lastSec, sec)
	}
	res.Timeline = make([]Second, 0, lastSec+1)
	for sec := 0; sec <= lastSec; sec++ {
		st := map[string]int64{}
		for s, n := range timeline[sec] {
			if s == 0 {
				st["error"] += n
			} else {
				st[strconv.Itoa(s)] += n
			}
		}
		res.Timeline = append(res.Timeline, Second{Second: sec, Status: st})
	}

	res.Latency = LatencyOf(t.Lat)
	res.LatencyFromDue = LatencyOf(t.FromDue)
	res.LatencyHistogram = HistogramOf(t.Lat)
	res.LatencyFromDueHistogram = HistogramOf(t.FromDue)

	h := Headers{Mode: headerMode}
	if notRecorded != "" {
		h.NotRecorded = notRecorded
		res.Headers = h
		return
	}
	c := t.hdr
	h.Responses = c.inspected
	h.RateLimit = FieldStat{Checked: c.inspected, Present: c.limitPresent, Valid: c.limitValid, Example: c.limitErr}
	h.Policy = FieldStat{Checked: c.inspected, Present: c.policyPresent, Valid: c.policyValid, Example: c.policyErr}
	h.RetryAfter = FieldStat{Checked: c.retryChecked, Present: c.retryPresent, Valid: c.retryValid, Example: c.retryErr}
	h.Storable429, h.StorableWhy = c.storable, c.storableWhy
	h.Legacy, h.LegacyName = c.legacy, c.legacyPrefix
	h.WrongStatus, h.WrongStatusExample = c.wrongStatus, c.wrongStatusExample
	h.ResetBeyondWindow, h.ResetExample = c.resetBeyond, c.resetExample
	h.PolicyValue = mostCommon(c.policyValues)
	h.Draft = mostCommon(c.drafts)
	for d, n := range c.drafts {
		if d != header.DraftCurrent {
			h.OldDraft += n
		}
	}
	h.OldDraftExample = c.oldDraftExample
	h.RetryZero, h.RetryZeroRefused, h.RetryZeroAdmitted = c.retryZero, t.RetryZeroRefused, t.RetryZeroAdmitted
	h.AllowedBare, h.AllowedWith = c.allowedBare, c.allowedWith
	res.Headers = h
}

// draftExample shows the fields of an older draft as sent, for the report.
func draftExample(h http.Header) string {
	var parts []string
	for _, k := range []string{"Ratelimit-Policy", "Ratelimit", "Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset"} {
		if vs := h[k]; len(vs) > 0 {
			parts = append(parts, http.CanonicalHeaderKey(k)+": "+strings.Join(vs, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

func mostCommon(m map[string]int64) string {
	best, bestN := "", int64(0)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if n := m[k]; n > bestN {
			best, bestN = k, n
		}
	}
	return best
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func ms(us int64) float64 { return float64(us) / 1000 }

// LatencyOf is the percentiles of h (µs) in ms; the zero Latency when h
// is empty. The percentiles are HDR's, on the 0 to 100 scale of
// stats.Percentile.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(),
		Min:   ms(h.Min()),
		Mean:  float64(int64(h.Mean())) / 1000,
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P95:   ms(h.ValueAtQuantile(95)),
		P99:   ms(h.ValueAtQuantile(99)),
		Max:   ms(h.Max()),
	}
}

// Zeros follows what a refusal's Retry-After: 0 ("retry at once") was
// worth: the same identity's next request, sent within ZeroHorizon of
// it, was admitted (honest) or refused again (dishonest). It is shared by
// a run's workers (a request of one identity may go through any of them).
type Zeros struct {
	at []atomic.Int64 // by identity: the end of its last zero refusal in ns + 1; 0 none
}

// ZeroHorizon bounds how late a next request still tests a
// Retry-After: 0: a limiter that says 0 while up to a second remains
// refuses a retry within it.
const ZeroHorizon = time.Second

// NewZeros follows identities (at least 1).
func NewZeros(identities int) *Zeros { return &Zeros{at: make([]atomic.Int64, max(identities, 1))} }

// Grow makes room for identity n; only for a Zeros one goroutine uses
// (a recording learns its identities as it reads).
func (z *Zeros) Grow(n int) {
	if n < len(z.at) {
		return
	}
	at := make([]atomic.Int64, max(n+1, 2*len(z.at)))
	for i := range z.at {
		at[i].Store(z.at[i].Load())
	}
	z.at = at
}

// Observe takes one response of identity sent at sendNs and ended at
// doneNs (offsets from the run's start), with its outcome; it counts on t
// whether it answered an earlier zero.
func (z *Zeros) Observe(t *Tally, identity int, sendNs, doneNs int64, refused, zero bool) {
	if z == nil || identity < 0 {
		return
	}
	slot := &z.at[identity%len(z.at)]
	if p := slot.Load(); p != 0 && sendNs >= p-1 && sendNs-(p-1) <= int64(ZeroHorizon) && slot.CompareAndSwap(p, 0) {
		if refused {
			t.RetryZeroRefused++
		} else {
			t.RetryZeroAdmitted++
		}
	}
	if refused && zero {
		slot.Store(doneNs + 1)
	}
}

// Zero reports whether the last response Inspect saw was a refusal with
// Retry-After: 0.
func (t *Tally) Zero() bool { return t.lastZero }

// Remaining is the remaining quota the last response inspected reported,
// when it was an admission that said (-1 otherwise).
func (t *Tally) Remaining() int64 { return t.lastLeft }
