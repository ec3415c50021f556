package load

import (
	"cmp"
	"fmt"
	"github.com/ratelimit-dev/ratelimit/header"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/words"
)

// finish folds the shards into res and judges the run: the admitted
// count (or, for a segment, what the merge needs to judge it) and the
// faults, handed with the thresholds to tally's Settle, which decides the
// generator, the thresholds and the verdict from the check list.
func (e *engine) finish(res *tally.Result, vus []*vu) {
	o := e.o
	sum := tally.New(e.st, e.maxLat)
	late := tally.NewHistogram(e.maxLat)
	var arrivals []judge.Arrival
	if e.record {
		n := 0
		for _, sh := range e.shards {
			n += len(sh.arrivals)
		}
		arrivals = make([]judge.Arrival, 0, n)
	}
	for _, sh := range e.shards {
		sum.Merge(sh.t)
		late.Merge(sh.late)
		arrivals = append(arrivals, sh.arrivals...)
		sh.arrivals = nil // the copy is all the verdict needs
	}
	var retried int64
	for _, v := range vus {
		res.BytesIn += v.bytesIn.Load()
		res.BytesOut += v.bytesOut.Load()
		if r, ok := v.conn.(interface{ retried() int64 }); ok {
			retried += r.retried()
		}
	}
	res.BytesIn += e.bytesIn.Load()
	res.BytesOut += e.bytesOut.Load()
	// The timeline has every second of the run, empty ones included.
	last := int(o.Duration/time.Second) - 1
	if o.Duration%time.Second != 0 {
		last++
	}
	sum.Fill(res, last, o.HeaderMode, "")
	res.Lateness = tally.LatencyOf(late)
	res.Shares()
	switch {
	case (res.Interrupted || res.Aborted) && res.ElapsedS > 0:
		res.AchievedRate = float64(res.Sent) / min(res.ElapsedS, res.DurationS)
	case res.DurationS > 0:
		res.AchievedRate = float64(res.Sent) / res.DurationS
	}
	res.Notes = append(res.Notes, connectionNotes(retried, res.Errors["eof"])...)
	if w := e.cpu; w != nil && w.held.Load() > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("no VU was added for %d iterations from +%.1fs on: the CPU was saturated "+
			"(the generator used all its processors, or the machine had no CPU idle and the generator used a quarter of it or more), "+
			"where more VUs add work, not throughput; the VUs there were sent them late, or they were dropped as late",
			w.held.Load(), time.Duration(w.heldAt.Load()).Seconds()))
	}
	if f := e.instances(res.Headers.PolicyValue); f != "" {
		res.Notes = append(res.Notes, f)
	}

	j := tally.Judging{Thresholds: e.checks, DropLate: MaxLateness}
	if res.Aborted {
		j.Abort = &tally.Abort{Index: e.abortIdx, Why: e.abortWhy}
	}
	switch {
	case o.Segment.Count > 1:
		// the verdict on the admitted count is the merge's: it replays
		// every segment's arrivals (an identity's requests may come
		// from several segments)
		res.Segment = e.segmentInfo(arrivals, sum.Lat, sum.FromDue, late)
	case o.Expect.Judges() && !res.Interrupted && !res.Aborted:
		x := judge.Judge(*o.Expect, judge.Input{
			Arrivals:   arrivals,
			Identities: max(o.Identities, 1),
			StartMs:    e.startWall.UnixMilli(),
			JitterMs:   res.Latency.P99,
			Policy:     res.Headers.PolicyValue,
		})
		j.Expect = &x
	}
	if o.Faults != nil {
		j.Faults = e.judgeFaults(arrivals, res.Headers.PolicyValue, res.Latency.P99)
	}
	res.Settle(j)
}

// segmentInfo is what the engine records of a segmented run.
func (e *engine) segmentInfo(arrivals []judge.Arrival, lat, fromDue, late *hdrhistogram.Histogram) *tally.SegmentInfo {
	o := e.o
	si := &tally.SegmentInfo{Index: o.Segment.Index, Count: o.Segment.Count, TotalPlanned: e.sched.Total(),
		FirstLatenessMs: float64(e.firstLate.Microseconds()) / 1000}
	if !o.StartAt.IsZero() {
		t := o.StartAt.UTC()
		si.StartAt = &t
	}
	if o.Expect.Judges() {
		si.Expect = o.Expect.Spec
		si.Arrivals = tally.PackArrivals(sortedBySend(arrivals))
	}
	si.Histograms = tally.SegmentHistograms{Latency: tally.EncodeHDR(lat), LatencyFromDue: tally.EncodeHDR(fromDue), Lateness: tally.EncodeHDR(late)}
	return si
}

// sortedBySend sorts arrivals by send time, in place, and returns them.
func sortedBySend(as []judge.Arrival) []judge.Arrival {
	slices.SortStableFunc(as, func(a, b judge.Arrival) int { return cmp.Compare(a.SendNs, b.SendNs) })
	return as
}

// connectionNotes explain what the connections did that a reader could
// take for the target's failure, or not see at all: requests sent again on
// a new connection because the target had closed an idle keep-alive one
// (HTTP/1.1 allows it at any time; each such request is sent and counted
// once), and requests that ended in EOF, which are failures.
func connectionNotes(retried, eof int64) []string {
	var notes []string
	if retried > 0 {
		notes = append(notes, fmt.Sprintf("%s %s retried once on a new connection: the target had closed an idle keep-alive connection before reading %s (normal in HTTP/1.1; each counted once, its latency includes the retry)",
			words.Commas(retried), words.Plural(retried, "request was", "requests were"), words.Plural(retried, "it", "them")))
	}
	if eof > 0 {
		notes = append(notes, fmt.Sprintf("%s %s ended in eof: the target closed the connection without answering (a crash, a restart, a proxy or a connection limit; a keep-alive connection closed while idle is retried, not counted here)",
			words.Commas(eof), words.Plural(eof, "request", "requests")))
	}
	return notes
}

// instances is the per-instance finding ("" when nothing says so): the
// admissions of the identity that reported most, read by
// judge.Instances with one unit of quota's refill time from the
// advertised policy.
func (e *engine) instances(policy string) string {
	byID := map[int][]judge.Answer{}
	best := -1
	for _, sh := range e.shards {
		for _, a := range sh.answers {
			byID[a.id] = append(byID[a.id], a.Answer)
			if best < 0 || len(byID[a.id]) > len(byID[best]) {
				best = a.id
			}
		}
		sh.answers = nil
	}
	if best < 0 {
		return ""
	}
	var perToken time.Duration
	if policy != "" {
		if ps, err := header.ParsePolicies([]string{policy}); err == nil {
			for _, p := range ps {
				if p.Quota > 0 && p.Window > 0 {
					if pt := time.Duration(p.Window) * time.Second / time.Duration(p.Quota); perToken == 0 || pt < perToken {
						perToken = pt
					}
				}
			}
		}
	}
	if n, ev := judge.Instances(byID[best], perToken); n >= 2 {
		return judge.InstancesFinding(n, ev)
	}
	return ""
}
