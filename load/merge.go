package load

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// LatenessWarn is the scheduling lateness p99 above which the generator is
// reported as behind even when nothing was dropped.
const LatenessWarn = 10 * time.Millisecond

// merge folds the VUs' private records into res and computes the
// thresholds, the verdict on the admitted count and the overall verdict.
func (e *engine) merge(res *Result, vus []*vu, late *hdrhistogram.Histogram) {
	o := e.o
	lat := newHistogram(e.maxLat)
	fromDue := newHistogram(e.maxLat)
	res.Status = map[string]int64{}
	res.Errors = map[string]int64{}
	timeline := map[int]map[int]int64{}
	var arrivals []Arrival
	if e.record {
		n := 0
		for _, v := range vus {
			n += len(v.arrivals)
		}
		arrivals = make([]Arrival, 0, n)
	}
	var h Headers
	policyValues := map[string]int64{}
	for _, v := range vus {
		lat.Merge(v.lat)
		fromDue.Merge(v.fromDue)
		for s, n := range v.status {
			res.Status[strconv.Itoa(s)] += n
		}
		for k, n := range v.errs {
			res.Errors[k] += n
		}
		for _, tk := range v.timeline {
			sec := int(tk.sec)
			if timeline[sec] == nil {
				timeline[sec] = map[int]int64{}
			}
			timeline[sec][int(tk.status)] += tk.n
		}
		v.timeline = nil
		arrivals = append(arrivals, v.arrivals...)
		v.arrivals = nil // the copy is all the verdict needs
		res.Completed += v.completed
		res.Responses += v.responses
		res.Allowed += v.allowed
		res.RateLimited += v.limited
		res.Failed += v.failed
		res.BytesIn += v.bytesIn.Load()
		res.BytesOut += v.bytesOut.Load()

		c := v.hdr
		h.RateLimit.add(c.limitPresent, c.limitValid, c.limitErr)
		h.Policy.add(c.policyPresent, c.policyValid, c.policyErr)
		h.RetryAfter.Checked += c.retryChecked
		h.RetryAfter.add(c.retryPresent, c.retryValid, c.retryErr)
		h.Storable429 += c.storable
		if h.StorableWhy == "" {
			h.StorableWhy = c.storableWhy
		}
		h.Legacy += c.legacy
		if h.LegacyName == "" {
			h.LegacyName = c.legacyPrefix
		}
		h.WrongStatus += c.wrongStatus
		if h.WrongStatusExample == "" {
			h.WrongStatusExample = c.wrongStatusExample
		}
		h.ResetBeyondWindow += c.resetBeyond
		if h.ResetExample == "" {
			h.ResetExample = c.resetExample
		}
		for raw, n := range c.policyValues {
			policyValues[raw] += n
		}
	}
	res.BytesIn += e.bytesIn.Load()
	res.BytesOut += e.bytesOut.Load()
	h.Mode = o.HeaderMode
	h.Responses = res.Responses
	h.RateLimit.Checked = res.Responses
	h.Policy.Checked = res.Responses
	h.PolicyValue = mostCommon(policyValues)
	res.Headers = h

	res.Latency = latency(lat)
	res.LatencyFromDue = latency(fromDue)
	res.Lateness = latency(late)
	res.LatencyHistogram = latencyHistogram(lat)
	res.LatencyFromDueHistogram = latencyHistogram(fromDue)
	res.shares()
	switch {
	case (res.Interrupted || res.Aborted) && res.ElapsedS > 0:
		res.AchievedRate = float64(res.Sent) / min(res.ElapsedS, res.DurationS)
	case res.DurationS > 0:
		res.AchievedRate = float64(res.Sent) / res.DurationS
	}

	// The timeline has every second of the run, empty ones included.
	last := int(o.Duration/time.Second) - 1
	if o.Duration%time.Second != 0 {
		last++
	}
	for sec := range timeline {
		last = max(last, sec)
	}
	res.Timeline = make([]Second, 0, last+1)
	for sec := 0; sec <= last; sec++ {
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

	e.generator(res)
	e.thresholds(res)
	if e.record {
		sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].SendNs < arrivals[j].SendNs })
	}
	if o.Segment.Count > 1 {
		// the verdict on the admitted count is the merge's: it replays
		// every segment's arrivals (an identity's requests may come
		// from several segments)
		res.Segment = e.segmentInfo(arrivals, lat, fromDue, late)
	} else if o.Expect != nil && !res.Interrupted && !res.Aborted {
		j := Judge(*o.Expect, JudgeInput{
			Arrivals:   arrivals,
			Identities: max(o.Identities, 1),
			StartMs:    e.startWall.UnixMilli(),
			JitterMs:   res.Latency.P99,
			Policy:     h.PolicyValue,
		})
		res.Expect = &j
	}
	if o.Faults != nil {
		res.Faults = e.judgeFaults(arrivals, h.PolicyValue, res.Latency.P99)
	}
	res.settle(o.Expect != nil)
}

// settle sets the verdict and its messages from the checks: a failed
// threshold, the expectation (not under faults, whose windows judge),
// a broken header with --headers fail, a failed fault check, no limiter
// seen when expectGiven; interrupted overrides them all.
func (res *Result) settle(expectGiven bool) {
	res.VerdictMessages = nil
	res.Verdict = "pass"
	for _, c := range res.Thresholds {
		if !c.Pass {
			res.Verdict = "fail"
			res.VerdictMessages = append(res.VerdictMessages, c.Message)
		}
	}
	if res.Expect != nil && !res.Expect.Pass && res.Faults == nil {
		res.Verdict = "fail"
		res.VerdictMessages = append(res.VerdictMessages, res.Expect.Line())
	}
	if res.Headers.Mode == HeadersFail {
		for _, c := range res.headerChecks() {
			if !c.Pass && !c.Skipped {
				res.Verdict = "fail"
				res.VerdictMessages = append(res.VerdictMessages, c.ID+": "+c.Message)
			}
		}
	}
	for _, c := range res.faultChecks() {
		if !c.Pass && c.Counts() {
			res.Verdict = "fail"
			res.VerdictMessages = append(res.VerdictMessages, c.ID+": "+c.Message)
		}
	}
	for _, c := range res.segmentChecks() {
		if !c.Pass && c.Counts() {
			res.Verdict = "fail"
			res.VerdictMessages = append(res.VerdictMessages, c.ID+": "+c.Message)
		}
	}
	res.Notes = slices.DeleteFunc(res.Notes, func(n string) bool { return n == NoLimiterNote || n == NoLimiterNoteUnrecorded })
	if NoLimiterSeen(res) {
		if expectGiven {
			res.Verdict = "fail"
			res.VerdictMessages = append(res.VerdictMessages, noLimiterMessage(res))
		} else {
			res.Notes = append(res.Notes, noLimiterMessage(res))
		}
	}
	if res.Interrupted && (res.Segment == nil || res.Segment.Index >= 0) {
		// a merge of an interrupted segment is not itself interrupted:
		// its segments check fails
		res.Verdict = "interrupted"
	}
}

// shares derives the failed and refused percentages and the response
// throughput from the counts and the elapsed time.
func (res *Result) shares() {
	res.FailedPct, res.RateLimitedPct, res.ResponsesPerS = 0, 0, 0
	if res.Completed > 0 {
		res.FailedPct = 100 * float64(res.Failed) / float64(res.Completed)
	}
	if res.Responses > 0 {
		res.RateLimitedPct = 100 * float64(res.RateLimited) / float64(res.Responses)
	}
	if res.ElapsedS > 0 {
		res.ResponsesPerS = float64(res.Responses) / res.ElapsedS
	}
}

func (f *FieldStat) add(present, valid int64, example string) {
	f.Present += present
	f.Valid += valid
	if f.Example == "" {
		f.Example = example
	}
}

func mostCommon(m map[string]int64) string {
	best, bestN := "", int64(0)
	for k, n := range m {
		if n > bestN || n == bestN && k < best {
			best, bestN = k, n
		}
	}
	return best
}

func ms(us int64) float64 { return float64(us) / 1000 }

func latency(h *hdrhistogram.Histogram) Latency {
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

// generator decides whether the generator, not the target, fell behind.
func (e *engine) generator(res *Result) {
	var why []string
	if res.DroppedNoVU > 0 {
		why = append(why, fmt.Sprintf("%d iterations dropped: all %d VUs were busy when they fell due (raise --max-vus; the target's p99 is %.1f ms)",
			res.DroppedNoVU, res.VUs.Max, res.Latency.P99))
	}
	if res.DroppedLate > 0 {
		why = append(why, fmt.Sprintf("%d iterations dropped: the generator was more than %s late to start them (CPU starved?)",
			res.DroppedLate, MaxLateness))
	}
	if p := res.Lateness.P99; p > float64(LatenessWarn/time.Millisecond) {
		why = append(why, fmt.Sprintf("scheduling lateness p99 %.1f ms is above %s", p, LatenessWarn))
	}
	res.Generator = GenStat{FellBehind: len(why) > 0, Reasons: why}
}

// thresholds judges --max-failed and every --threshold on the finished
// run. The one that stopped the run (--abort-on-fail) fails whatever the
// counts of what ran say, and carries the reason.
func (e *engine) thresholds(res *Result) {
	res.Thresholds = []Check{}
	for i, t := range e.checks {
		c := t.check(res)
		if res.Aborted && i == e.abortIdx {
			res.AbortReason = e.abortWhy
			c.Aborted, c.Pass = true, false
			c.Message = fmt.Sprintf("threshold %s: %s; stopped the run (%s)", c.ID, c.Actual, e.abortWhy)
		}
		res.Thresholds = append(res.Thresholds, c)
	}
}

// NoLimiterNote is the note (or, with --expect, the failure) of a run that
// saw no sign of a rate limiter.
const NoLimiterNote = "no 429 and no RateLimit headers seen: there may be no limiter in front of this URL"

// NoLimiterSeen reports whether a run got responses but refused none and
// saw no RateLimit, RateLimit-Policy or legacy X-RateLimit-* field.
func NoLimiterSeen(res *Result) bool {
	h := res.Headers
	return res.Responses > 0 && res.RateLimited == 0 && h.RateLimit.Present == 0 && h.Policy.Present == 0 && h.Legacy == 0
}
