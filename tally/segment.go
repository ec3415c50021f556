package tally

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/words"
)

// A segmented run (--segment I/N) runs the arrivals i of the plan with
// i mod N == I (rate.Schedule.Segment). Its document carries what the
// merge needs to rebuild the whole run losslessly: the plan, the three
// latency histograms as HDR snapshots (the standard V2 compressed
// encoding, base64), and, with --expect, every arrival (identity, send,
// end, status), packed. Merge sums the counts, merges the histograms and
// the timeline, replays all arrivals through the model and re-evaluates
// the thresholds, as one run of the whole plan would.

// SegmentInfo is the segment of a segmented run, or the segments of a
// merged one.
type SegmentInfo struct {
	// Index is the segment (from 0); -1 in a merged document.
	Index int `json:"index"`
	Count int `json:"count"`
	// TotalPlanned is the whole plan's iterations, every segment's.
	TotalPlanned int64 `json:"total_planned"`
	// StartAt is --start-at, the instant every segment's clock starts;
	// absent without it.
	StartAt *time.Time `json:"start_at,omitempty"`
	// FirstLatenessMs is how late the segment's first iteration was
	// released (after StartAt, when given).
	FirstLatenessMs float64 `json:"first_lateness_ms"`
	// Expect is the --expect model the merge judges against; "" without.
	Expect string `json:"expect,omitempty"`
	// Histograms are the HDR snapshots of the latency from send, from the
	// due time, and of the lateness.
	Histograms SegmentHistograms `json:"hdr"`
	// Arrivals are every arrival, packed (see packArrivals); "" without
	// --expect.
	Arrivals string `json:"arrivals,omitempty"`
	// Merged and Missing list the segments a merged document holds and
	// lacks (a merged document only).
	Merged  []int `json:"merged,omitempty"`
	Missing []int `json:"missing,omitempty"`
	// Incomplete lists the merged segments that were interrupted or
	// aborted (a merged document only).
	Incomplete []int `json:"incomplete,omitempty"`
}

// SegmentHistograms are HDR histograms in the V2 compressed encoding.
type SegmentHistograms struct {
	Latency        string `json:"latency"`
	LatencyFromDue string `json:"latency_from_due"`
	Lateness       string `json:"lateness"`
}

// CheckSegments is the merged document's check that no segment is missing.
const CheckSegments = "segments"

// Bounds a document of a run holds to, by its own plan, so that a forged
// one cannot make a reader or a merge allocate beyond what the plan
// could fill (report's validation and Merge check them).
const (
	// MaxSkew is how far apart the segments of one plan may start: with
	// --start-at they start at one instant; without it (--run-id), within
	// a minute of one another, as the pods of one Job do.
	MaxSkew = time.Minute
	// MaxNotes bounds a document's notes, and the distinct notes a merge
	// keeps.
	MaxNotes = 1_000
	// MaxReasons bounds the generator's reasons: a few per segment of a
	// merge of MaxSegments.
	MaxReasons = 10 * MaxSegments
	// MaxKeys bounds the entries of the status and error counts, and of
	// each second's statuses.
	MaxKeys = 1_000
)

// maxPackedArrival is the most bytes PackArrivals writes for one arrival
// (four varints, one of them a signed 64-bit delta).
const maxPackedArrival = 40

// MaxPackedArrivals is the longest base64 a segment of sent requests
// packs its arrivals into.
func MaxPackedArrivals(sent int64) int64 {
	return (min(max(sent, 0), 1<<40)*maxPackedArrival + 2) / 3 * 4
}

// spanSlack is what a run's seconds may exceed its plan by: the lateness
// of its last iterations and rounding.
const spanSlack = 2 * time.Second

// SpanSeconds is the most seconds a run of this plan can fill in its
// timeline and in the verdict's seconds: its duration, its timeout (the
// last requests' ends), a little slack, and for a merged run the skew of
// its segments' starts. A document with more is inconsistent.
func (r *Result) SpanSeconds() float64 {
	s := r.DurationS + r.TimeoutS + spanSlack.Seconds()
	if r.Segment != nil && r.Segment.Index < 0 {
		s += MaxSkew.Seconds()
	}
	return math.Ceil(s)
}

// segmentChecks: a merged document fails when segments are missing; a
// segment's own document says where its verdict on the count went.
func (r *Result) segmentChecks() []doc.Check {
	si := r.Segment
	if si == nil {
		return nil
	}
	if si.Index >= 0 {
		if si.Expect == "" {
			return nil
		}
		return []doc.Check{{ID: CheckSegments, Pass: true, Skipped: true,
			Message: fmt.Sprintf("segment %d/%d: the verdict on the admitted count (--expect %s) is judged when the segments are merged (ratelimit merge)", si.Index, si.Count, si.Expect)}}
	}
	c := doc.Check{ID: CheckSegments, Pass: len(si.Missing) == 0 && len(si.Incomplete) == 0,
		Message: fmt.Sprintf("all %d segments merged", si.Count)}
	var why []string
	if len(si.Missing) > 0 {
		why = append(why, fmt.Sprintf("partial: segments %s of %d missing; the counts and the verdict cover %d of %d", intList(si.Missing), si.Count, len(si.Merged), si.Count))
	}
	if len(si.Incomplete) > 0 {
		why = append(why, fmt.Sprintf("segments %s were interrupted or aborted: the counts cover what ran, and the admitted count is not judged", intList(si.Incomplete)))
	}
	if len(why) > 0 {
		c.Message = strings.Join(why, "; ")
	}
	return []doc.Check{c}
}

func intList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// EncodeHDR is h as an HDR V2 compressed snapshot.
func EncodeHDR(h *hdrhistogram.Histogram) string {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return ""
	}
	return string(b)
}

func decodeHDR(s, what string) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("%s histogram: %w", what, err)
	}
	return h, nil
}

// PackArrivals writes the arrivals (sorted by send) as base64 of
// varints, four per arrival: identity, send minus the previous send (µs),
// end minus send (µs), status (0: no status). About 8 bytes each.
func PackArrivals(as []judge.Arrival) string {
	var b []byte
	var prev int64
	for _, a := range as {
		send := a.SendNs / 1e3
		b = binary.AppendUvarint(b, uint64(a.Identity))
		b = binary.AppendVarint(b, send-prev)
		b = binary.AppendUvarint(b, uint64(max(a.DoneNs/1e3-send, 0)))
		b = binary.AppendUvarint(b, uint64(a.Status))
		prev = send
	}
	return base64.StdEncoding.EncodeToString(b)
}

// unpackArrivals reads PackArrivals, shifting every time by offsetNs. A
// segment holds at most limit arrivals (its sends), each sent within span
// of its start and ended within maxLat of its send: anything else is out
// of range. It decodes the base64 as it goes, so the packed bytes are
// never held twice.
func unpackArrivals(s string, offsetNs int64, identities int, limit int64, span, maxLat time.Duration) ([]judge.Arrival, error) {
	if int64(len(s)) > MaxPackedArrivals(limit) {
		return nil, fmt.Errorf("arrivals: %d bytes of packed arrivals for %d sends; a send packs into at most %d", base64.StdEncoding.DecodedLen(len(s)), limit, maxPackedArrival)
	}
	r := bufio.NewReader(base64.NewDecoder(base64.StdEncoding, strings.NewReader(s)))
	// a send packs into 4 bytes at least
	out := make([]judge.Arrival, 0, min(limit, int64(base64.StdEncoding.DecodedLen(len(s))/4)))
	var send int64
	for {
		if _, err := r.Peek(1); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("arrivals: %v", err)
		}
		if int64(len(out)) >= limit {
			return nil, fmt.Errorf("arrivals: more arrivals than the %d sends the segment counts", limit)
		}
		id, e1 := binary.ReadUvarint(r)
		d, e2 := binary.ReadVarint(r)
		lat, e3 := binary.ReadUvarint(r)
		st, e4 := binary.ReadUvarint(r)
		if err := errors.Join(e1, e2, e3, e4); err != nil {
			return nil, fmt.Errorf("arrivals: truncated after %d", len(out))
		}
		send += d
		if st > 999 || id >= uint64(max(identities, 1)) || lat > uint64(maxLat/time.Microsecond) ||
			send < -int64(time.Second/time.Microsecond) || send > int64(span/time.Microsecond) {
			return nil, fmt.Errorf("arrivals: arrival %d is out of range (identity %d, sent %s after the segment's start, latency %s)",
				len(out), id, time.Duration(send)*time.Microsecond, time.Duration(min(lat, 1<<40))*time.Microsecond)
		}
		ns := send*1e3 + offsetNs
		out = append(out, judge.Arrival{Identity: int(id), DueNs: ns, SendNs: ns, DoneNs: ns + int64(lat)*1e3, Status: int(st)})
	}
}

// segmentsConsistent refuses (exit 2) documents of one plan that cannot
// be the segments of one run: a start far from the others' (a forged or
// wrong clock would stretch the merged timeline and the replay over the
// years between), a count of iterations beyond the plan's. start is the
// merged run's start.
func segmentsConsistent(docs []*Result, start time.Time) error {
	first := docs[0]
	fs := first.Segment
	if limit := first.RatePerS*first.DurationS + 2; float64(fs.TotalPlanned) > limit || fs.TotalPlanned < 0 {
		return exitcode.Usagef("merge: %d iterations planned in all, more than %s for %g s cannot plan: the documents are inconsistent", fs.TotalPlanned, first.Rate, first.DurationS)
	}
	share := fs.TotalPlanned/int64(fs.Count) + 1
	var planned int64
	for i, d := range docs {
		si := d.Segment
		off := d.StartedAt.Sub(start)
		if off < -time.Second || off > MaxSkew {
			how := "after"
			if off < 0 {
				how, off = "before", -off
			}
			return exitcode.Usagef("merge: document %d (segment %d/%d) started at %s, %s %s the run's start (%s): segments of one plan start within %s of one another (--start-at starts them together), so the documents are inconsistent",
				i+1, si.Index, si.Count, d.StartedAt.UTC().Format(time.RFC3339Nano), words.Span(off.Round(time.Millisecond)), how, start.UTC().Format(time.RFC3339Nano), words.Span(MaxSkew))
		}
		if d.Planned > share || d.Sent > d.Planned || d.Planned < 0 {
			return exitcode.Usagef("merge: document %d (segment %d/%d) counts %d planned and %d sent, beyond its share (%d) of the %d planned in all: the documents are inconsistent",
				i+1, si.Index, si.Count, d.Planned, d.Sent, share, fs.TotalPlanned)
		}
		planned += d.Planned
	}
	if planned > fs.TotalPlanned {
		return exitcode.Usagef("merge: the segments plan %d iterations, more than the %d planned in all: the documents are inconsistent", planned, fs.TotalPlanned)
	}
	return nil
}

// Merge rebuilds the whole run from the documents of its segments: the
// counts summed, the timeline and the histograms merged, the arrivals of
// every segment replayed through the model, the thresholds re-evaluated.
// Documents of different plans (target, method, rate, duration,
// identities, run id, count, start, --expect) or the same segment twice
// are refused (exit 2); missing segments make the result partial (the
// segments check fails).
func Merge(docs []*Result) (*Result, error) {
	if len(docs) == 0 {
		return nil, exitcode.Usagef("merge: no documents")
	}
	first := docs[0]
	for i, d := range docs {
		if d.Segment == nil || d.Segment.Index < 0 {
			return nil, exitcode.Usagef("merge: document %d is not a segment's (run it with --segment I/N)", i+1)
		}
		if si := d.Segment; si.Count < 2 || si.Count > MaxSegments || si.Index >= si.Count {
			return nil, exitcode.Usagef("merge: document %d: segment %d of %d is out of range (2 to %d segments)", i+1, si.Index, si.Count, MaxSegments)
		}
	}
	seen := map[int]bool{}
	for i, d := range docs {
		if why := samePlan(first, d); why != "" {
			return nil, exitcode.Usagef("merge: document %d (segment %d/%d) is of another plan than document 1: %s", i+1, d.Segment.Index, d.Segment.Count, why)
		}
		if seen[d.Segment.Index] {
			return nil, exitcode.Usagef("merge: segment %d/%d is given twice", d.Segment.Index, d.Segment.Count)
		}
		seen[d.Segment.Index] = true
	}
	docs = slices.Clone(docs)
	slices.SortFunc(docs, func(a, b *Result) int { return a.Segment.Index - b.Segment.Index })
	fs := first.Segment
	m := &Result{
		Kind: Kind, Version: Version, Target: first.Target, Method: first.Method,
		Rate: first.Rate, RatePerS: first.RatePerS, DurationS: first.DurationS, TimeoutS: first.TimeoutS,
		Identities: first.Identities, RunID: first.RunID,
		Status: map[string]int64{}, Errors: map[string]int64{},
		Segment: &SegmentInfo{Index: -1, Count: fs.Count, TotalPlanned: fs.TotalPlanned, StartAt: fs.StartAt, Expect: fs.Expect},
	}
	// the merged run starts at the shared start, else the earliest one
	m.StartedAt = first.StartedAt
	for _, d := range docs {
		if d.StartedAt.Before(m.StartedAt) {
			m.StartedAt = d.StartedAt
		}
	}
	if fs.StartAt != nil {
		m.StartedAt = *fs.StartAt
	}
	if err := segmentsConsistent(docs, m.StartedAt); err != nil {
		return nil, err
	}
	var sends int64
	for _, d := range docs {
		sends += d.Sent
	}
	noteSeen := map[string]bool{}
	var gen GenStat
	lat, fromDue, late := []*hdrhistogram.Histogram{}, []*hdrhistogram.Histogram{}, []*hdrhistogram.Histogram{}
	timeline := map[int]map[string]int64{}
	var arrivals []judge.Arrival
	if fs.Expect != "" {
		arrivals = make([]judge.Arrival, 0, min(sends, int64(len(docs))*1024))
	}
	policies := map[string]int64{}
	for _, d := range docs {
		si := d.Segment
		m.Segment.Merged = append(m.Segment.Merged, si.Index)
		m.Segment.FirstLatenessMs = max(m.Segment.FirstLatenessMs, si.FirstLatenessMs)
		for _, h := range []struct {
			enc  string
			what string
			to   *[]*hdrhistogram.Histogram
		}{{si.Histograms.Latency, "latency", &lat}, {si.Histograms.LatencyFromDue, "latency from due", &fromDue}, {si.Histograms.Lateness, "lateness", &late}} {
			hh, err := decodeHDR(h.enc, h.what)
			if err != nil {
				return nil, exitcode.Usagef("merge: segment %d/%d: %v", si.Index, si.Count, err)
			}
			*h.to = append(*h.to, hh)
		}
		if fs.Expect != "" {
			offset := d.StartedAt.Sub(m.StartedAt).Nanoseconds()
			span := time.Duration((d.DurationS + spanSlack.Seconds()) * float64(time.Second))
			maxLat := time.Duration((d.TimeoutS + spanSlack.Seconds()) * float64(time.Second))
			as, err := unpackArrivals(si.Arrivals, offset, max(m.Identities, 1), d.Sent, span, maxLat)
			if err != nil {
				return nil, exitcode.Usagef("merge: segment %d/%d: %v", si.Index, si.Count, err)
			}
			arrivals = append(arrivals, as...)
		}
		m.Planned += d.Planned
		m.Sent += d.Sent
		m.Dropped += d.Dropped
		m.DroppedNoVU += d.DroppedNoVU
		m.DroppedLate += d.DroppedLate
		m.NotStarted += d.NotStarted
		m.Interrupted = m.Interrupted || d.Interrupted
		m.Aborted = m.Aborted || d.Aborted
		if d.Interrupted || d.Aborted {
			m.Segment.Incomplete = append(m.Segment.Incomplete, si.Index)
		}
		if m.AbortReason == "" && d.AbortReason != "" {
			m.AbortReason = fmt.Sprintf("segment %d: %s", si.Index, d.AbortReason)
		}
		m.Completed += d.Completed
		m.Responses += d.Responses
		m.BytesIn += d.BytesIn
		m.BytesOut += d.BytesOut
		m.Allowed += d.Allowed
		m.RateLimited += d.RateLimited
		m.Failed += d.Failed
		m.ElapsedS = max(m.ElapsedS, d.ElapsedS+d.StartedAt.Sub(m.StartedAt).Seconds())
		for k, n := range d.Status {
			m.Status[k] += n
		}
		for k, n := range d.Errors {
			m.Errors[k] += n
		}
		// a segment that started later counts its seconds from its start
		shift := max(int(d.StartedAt.Sub(m.StartedAt)/time.Second), 0)
		for _, s := range d.Timeline {
			sec := s.Second + shift
			if timeline[sec] == nil {
				timeline[sec] = map[string]int64{}
			}
			for k, n := range s.Status {
				timeline[sec][k] += n
			}
		}
		m.VUs.PreAllocated += d.VUs.PreAllocated
		m.VUs.Max += d.VUs.Max
		m.VUs.Peak += d.VUs.Peak
		m.VUs.Added += d.VUs.Added
		m.VUs.MaxBusy += d.VUs.MaxBusy
		gen.mergeSegment(si.Index, d)
		mergeHeaders(&m.Headers, d.Headers)
		if d.Headers.PolicyValue != "" {
			policies[d.Headers.PolicyValue] += d.Headers.Policy.Valid
		}
		for _, n := range d.Notes {
			if !noteSeen[n] && len(m.Notes) < MaxNotes {
				noteSeen[n] = true
				m.Notes = append(m.Notes, n)
			}
		}
	}
	for k := range fs.Count {
		if !seen[k] {
			m.Segment.Missing = append(m.Segment.Missing, k)
		}
	}
	m.Headers.PolicyValue = mostCommon(policies)
	m.Headers.Mode = first.Headers.Mode

	// the timeline of every second, empty ones included
	last := -1
	for sec := range timeline {
		last = max(last, sec)
	}
	for sec := 0; sec <= last; sec++ {
		st := timeline[sec]
		if st == nil {
			st = map[string]int64{}
		}
		m.Timeline = append(m.Timeline, Second{Second: sec, Status: st})
	}

	var hists [3]*hdrhistogram.Histogram
	for i, hs := range [][]*hdrhistogram.Histogram{lat, fromDue, late} {
		h, err := mergeHDR(hs)
		if err != nil {
			return nil, exitcode.Usagef("merge: %v", err)
		}
		hists[i] = h
	}
	latH, dueH, lateH := hists[0], hists[1], hists[2]
	m.Latency, m.LatencyFromDue, m.Lateness = LatencyOf(latH), LatencyOf(dueH), LatencyOf(lateH)
	m.LatencyHistogram, m.LatencyFromDueHistogram = HistogramOf(latH), HistogramOf(dueH)
	m.Segment.Histograms = SegmentHistograms{Latency: EncodeHDR(latH), LatencyFromDue: EncodeHDR(dueH), Lateness: EncodeHDR(lateH)}
	m.Shares()
	if m.DurationS > 0 {
		m.AchievedRate = float64(m.Sent) / m.DurationS
	}

	// the thresholds, re-evaluated on the merged run
	j := Judging{Generator: &gen}
	for _, t := range first.Thresholds {
		th, err := judge.ParseThreshold(t.Expr())
		if err != nil {
			return nil, exitcode.Usagef("merge: threshold %q: %v", t.Expr(), err)
		}
		j.Thresholds = append(j.Thresholds, th)
	}
	if fs.Expect != "" && !m.Interrupted && !m.Aborted {
		x, err := judge.ParseExpect(fs.Expect)
		if err != nil {
			return nil, exitcode.Usagef("merge: --expect %q: %v", fs.Expect, err)
		}
		sort.SliceStable(arrivals, func(i, j int) bool { return arrivals[i].SendNs < arrivals[j].SendNs })
		jd := judge.Judge(*x, judge.Input{Arrivals: arrivals, Identities: max(m.Identities, 1), StartMs: m.StartedAt.UnixMilli(),
			JitterMs: m.Latency.P99, Policy: m.Headers.PolicyValue})
		j.Expect = &jd
		m.Segment.Arrivals = PackArrivals(arrivals)
	}
	m.Settle(j)
	return m, nil
}

// samePlan says how b's plan differs from a's, or "".
func samePlan(a, b *Result) string {
	sa, sb := a.Segment, b.Segment
	switch {
	case a.Target != b.Target:
		return fmt.Sprintf("target %s, not %s", b.Target, a.Target)
	case a.Method != b.Method:
		return fmt.Sprintf("method %s, not %s", b.Method, a.Method)
	case a.RatePerS != b.RatePerS || a.Rate != b.Rate:
		return fmt.Sprintf("rate %s, not %s", b.Rate, a.Rate)
	case a.DurationS != b.DurationS:
		return fmt.Sprintf("duration %gs, not %gs", b.DurationS, a.DurationS)
	case a.TimeoutS != b.TimeoutS:
		return fmt.Sprintf("timeout %gs, not %gs (the latency histograms' range depends on it)", b.TimeoutS, a.TimeoutS)
	case a.Identities != b.Identities:
		return fmt.Sprintf("%d identities, not %d", b.Identities, a.Identities)
	case a.RunID != b.RunID:
		return fmt.Sprintf("run id %s, not %s (segments share one: --run-id, or the same --start-at)", b.RunID, a.RunID)
	case sa.Count != sb.Count:
		return fmt.Sprintf("%d segments, not %d", sb.Count, sa.Count)
	case sa.TotalPlanned != sb.TotalPlanned:
		return fmt.Sprintf("%d planned in all, not %d", sb.TotalPlanned, sa.TotalPlanned)
	case (sa.StartAt == nil) != (sb.StartAt == nil) || sa.StartAt != nil && !sa.StartAt.Equal(*sb.StartAt):
		return "another --start-at"
	case sa.Expect != sb.Expect:
		return fmt.Sprintf("--expect %q, not %q", sb.Expect, sa.Expect)
	case !slices.Equal(thresholdIDs(a), thresholdIDs(b)):
		return "other thresholds"
	case a.Headers.Mode != b.Headers.Mode:
		return "another --headers mode"
	}
	return ""
}

func thresholdIDs(r *Result) []string {
	ids := make([]string, len(r.Thresholds))
	for i, t := range r.Thresholds {
		ids[i] = t.Expr()
	}
	return ids
}

// mergeHDR adds the histograms into a copy of the first; a value the
// result cannot hold (another geometry) is an error, never dropped.
func mergeHDR(hs []*hdrhistogram.Histogram) (*hdrhistogram.Histogram, error) {
	out := hs[0].Clone()
	for _, h := range hs[1:] {
		if dropped := out.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("%d latency values beyond the histogram's range", dropped)
		}
	}
	return out, nil
}

// mergeHeaders adds b's header counts to a's (the first example wins).
func mergeHeaders(a *Headers, b Headers) {
	a.Responses += b.Responses
	for _, f := range []struct{ to, from *FieldStat }{{&a.RateLimit, &b.RateLimit}, {&a.Policy, &b.Policy}, {&a.RetryAfter, &b.RetryAfter}} {
		f.to.Checked += f.from.Checked
		f.to.add(f.from.Present, f.from.Valid, f.from.Example)
	}
	a.Storable429 += b.Storable429
	a.StorableWhy = firstOf(a.StorableWhy, b.StorableWhy)
	a.Legacy += b.Legacy
	a.LegacyName = firstOf(a.LegacyName, b.LegacyName)
	a.WrongStatus += b.WrongStatus
	a.WrongStatusExample = firstOf(a.WrongStatusExample, b.WrongStatusExample)
	a.ResetBeyondWindow += b.ResetBeyondWindow
	a.ResetExample = firstOf(a.ResetExample, b.ResetExample)
}
