package tally

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
)

// counted is a run of the statuses given, one a second apart in the
// timeline, each response with hdr as its headers (nil: none; a 429
// has Retry-After: 1 besides), folded into a Result as load's engine
// folds its workers' tallies.
func counted(t *testing.T, statuses []int, hdr http.Header) *Result {
	t.Helper()
	rule, err := judge.NewRule(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := NewStatuses(rule, []int{200, 429})
	a, b := New(st, 10_000_000), New(st, 10_000_000)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, s := range statuses {
		tl := a
		if i%2 == 1 {
			tl = b // two workers, merged
		}
		tl.Count(s, "", time.Duration(i+1)*time.Millisecond, time.Duration(i+2)*time.Millisecond)
		tl.Tick(int64(i), s)
		if s != 0 {
			h := hdr.Clone()
			if s == http.StatusTooManyRequests {
				if h == nil {
					h = http.Header{}
				}
				h.Set("Retry-After", "1")
			}
			tl.Inspect(s, h, now)
		}
	}
	a.Merge(b)
	res := &Result{Kind: Kind, Version: Version, Target: "http://127.0.0.1:1/", Method: "GET",
		Planned: int64(len(statuses)), Sent: int64(len(statuses)), RatePerS: 1, DurationS: float64(len(statuses))}
	a.Fill(res, len(statuses)-1, HeadersFail, "")
	res.ElapsedS = res.DurationS
	res.Shares()
	return res
}

func check(t *testing.T, r *Result, id string) doc.Check {
	t.Helper()
	for _, c := range r.CheckList() {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", id, r.CheckList())
	return doc.Check{}
}

var limited = []int{200, 200, 429, 429}

// TestTallyFill: the counts, the timeline (every second, empty ones
// included) and the header counts a Result gets from merged tallies.
func TestTallyFill(t *testing.T) {
	res := counted(t, []int{200, 429, 0, 503, 200}, http.Header{"Ratelimit": {`"default";r=0;t=1`}, "Ratelimit-Policy": {`"default";q=2;w=1`}})
	if res.Completed != 5 || res.Responses != 4 || res.Allowed != 2 || res.RateLimited != 1 || res.Failed != 2 {
		t.Errorf("completed %d responses %d allowed %d refused %d failed %d, want 5 4 2 1 2", res.Completed, res.Responses, res.Allowed, res.RateLimited, res.Failed)
	}
	if res.Errors["other"] != 1 || res.Status["503"] != 1 || res.Status["200"] != 2 {
		t.Errorf("errors %v statuses %v", res.Errors, res.Status)
	}
	if len(res.Timeline) != 5 || res.Timeline[2].Status["error"] != 1 || res.Timeline[3].Status["503"] != 1 {
		t.Errorf("timeline %+v", res.Timeline)
	}
	if res.Headers.Responses != 4 || res.Headers.Policy.Valid != 4 || res.Headers.PolicyValue != `"default";q=2;w=1` {
		t.Errorf("headers %+v", res.Headers)
	}
	// a 503 whose own RateLimit says r=0 is limited with the wrong status
	if res.Headers.WrongStatus != 1 || res.Headers.WrongStatusExample != "503" {
		t.Errorf("wrong status %d (%q), want 1 (503)", res.Headers.WrongStatus, res.Headers.WrongStatusExample)
	}
	if res.FailedPct != 40 || res.RateLimitedPct != 25 {
		t.Errorf("failed %v%% refused %v%%, want 40 25", res.FailedPct, res.RateLimitedPct)
	}
	if res.Latency.Count != 5 || res.Latency.Max < 4.9 || res.Latency.Max > 5.1 {
		t.Errorf("latency %+v, want 5 values up to 5 ms", res.Latency)
	}
}

// TestSettleGenerator: the generator's causes and reasons come from the
// counts, in one rule for load and recordings; a generator behind is a
// warning that never fails the run.
func TestSettleGenerator(t *testing.T) {
	tests := []struct {
		name       string
		set        func(r *Result)
		causes     []Cause
		reasonHas  []string
		checkStart string
	}{
		{name: "kept up", set: func(r *Result) { r.Lateness.P99 = 9.9 }},
		{name: "no VU", set: func(r *Result) { r.DroppedNoVU, r.Dropped, r.VUs.Max = 3, 3, 2 },
			causes: []Cause{CauseNoVU}, reasonHas: []string{"3 iterations dropped: all 2 VUs were busy", "raise --max-vus"}, checkStart: "3 iterations dropped"},
		{name: "late and lateness", set: func(r *Result) { r.DroppedLate, r.Dropped, r.Lateness.P99 = 4, 4, 12 },
			causes: []Cause{CauseLate, CauseLateness}, reasonHas: []string{"more than 250ms late", "lateness p99 12.0 ms is above 10ms"}, checkStart: "4 iterations dropped"},
		{name: "k6 drops", set: func(r *Result) { r.Source, r.DroppedNoVU, r.Dropped = SourceK6, 5, 5 },
			causes: []Cause{CauseNoVU}, reasonHas: []string{"k6 dropped 5 iterations", "maxVUs of the scenario"}, checkStart: "k6 dropped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := counted(t, limited, nil)
			tt.set(res)
			res.Settle(Judging{DropLate: 250 * time.Millisecond})
			g := res.Generator
			if g.FellBehind != (len(tt.causes) > 0) || !slices.Equal(g.Causes, tt.causes) {
				t.Fatalf("generator %+v, want causes %v", g, tt.causes)
			}
			if len(g.Reasons) != len(g.Causes) {
				t.Errorf("%d reasons for %d causes", len(g.Reasons), len(g.Causes))
			}
			all := strings.Join(g.Reasons, "; ")
			for _, w := range tt.reasonHas {
				if !strings.Contains(all, w) {
					t.Errorf("reasons %q lack %q", all, w)
				}
			}
			c := check(t, res, CheckGenerator)
			if c.Pass == g.FellBehind || !c.Warning || tt.checkStart != "" && !strings.HasPrefix(c.Message, tt.checkStart) {
				t.Errorf("generator check %+v", c)
			}
			if res.Verdict != "pass" {
				t.Errorf("verdict %s (%v): a generator behind is a warning", res.Verdict, res.VerdictMessages)
			}
		})
	}
}

// TestGeneratorBehind: whether the generator itself, not a slow target,
// fell behind is read from the causes, and for a document written before
// causes were kept, from its counts.
func TestGeneratorBehind(t *testing.T) {
	slow := func(r *Result) { r.RatePerS, r.Latency.P99, r.VUs.Max = 20, 560, 2 } // 20/s x 0.56 s = 11 in flight > 2 VUs
	fast := func(r *Result) { r.RatePerS, r.Latency.P99, r.VUs.Max = 20, 5, 2 }
	tests := []struct {
		name   string
		target func(r *Result)
		gen    GenStat
		counts func(r *Result)
		want   bool
		causes []Cause
	}{
		{"kept up", fast, GenStat{}, nil, false, nil},
		{"kept up, causes forged", fast, GenStat{Causes: []Cause{CauseLate}}, nil, false, nil},
		{"VUs busy on a slow target", slow, GenStat{FellBehind: true, Causes: []Cause{CauseNoVU}}, func(r *Result) { r.DroppedNoVU = 1 }, false, []Cause{CauseNoVU}},
		{"VUs busy on a fast target", fast, GenStat{FellBehind: true, Causes: []Cause{CauseNoVU}}, func(r *Result) { r.DroppedNoVU = 1 }, true, []Cause{CauseNoVU}},
		{"slow target and lateness", slow, GenStat{FellBehind: true, Causes: []Cause{CauseNoVU, CauseLateness}}, func(r *Result) { r.DroppedNoVU = 1 }, true, []Cause{CauseNoVU, CauseLateness}},
		{"dropped late", slow, GenStat{FellBehind: true, Causes: []Cause{CauseLate}}, func(r *Result) { r.DroppedLate = 1 }, true, []Cause{CauseLate}},
		// documents written before causes were kept
		{"old: VUs busy on a slow target", slow, GenStat{FellBehind: true, Reasons: []string{"x"}}, func(r *Result) { r.DroppedNoVU = 1 }, false, []Cause{CauseNoVU}},
		{"old: lateness", slow, GenStat{FellBehind: true, Reasons: []string{"x", "y"}}, func(r *Result) { r.DroppedNoVU, r.Lateness.P99 = 1, 50 }, true, []Cause{CauseNoVU, CauseLateness}},
		{"old: behind, no count says why", slow, GenStat{FellBehind: true, Reasons: []string{"x"}}, nil, true, []Cause{CauseLateness}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Result{Generator: tt.gen}
			tt.target(r)
			if tt.counts != nil {
				tt.counts(r)
			}
			if got := r.GeneratorCauses(); !slices.Equal(got, tt.causes) {
				t.Errorf("GeneratorCauses() = %v, want %v", got, tt.causes)
			}
			if got := r.GeneratorBehind(); got != tt.want {
				t.Errorf("GeneratorBehind() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSettleThresholds: a failed threshold fails the run with its own
// message; the one that stopped an aborted run fails whatever its count
// says, and names why; an abort named for a run that was not aborted is
// ignored.
func TestSettleThresholds(t *testing.T) {
	failed, err := judge.ParseThreshold("failed<=1%")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := judge.ParseThreshold("refused<90%")
	if err != nil {
		t.Fatal(err)
	}
	res := counted(t, []int{200, 500, 429, 429}, nil)
	res.Settle(Judging{Thresholds: []judge.Threshold{failed, reqs}})
	if res.Verdict != "fail" || len(res.VerdictMessages) != 1 || !strings.HasPrefix(res.VerdictMessages[0], "threshold failed<=1%: 25.00%") {
		t.Fatalf("verdict %s %q, want fail on failed<=1%% alone", res.Verdict, res.VerdictMessages)
	}

	abort := &Abort{Index: 1, Why: "stopped early"}
	res = counted(t, limited, nil)
	res.Settle(Judging{Thresholds: []judge.Threshold{failed, reqs}, Abort: abort})
	if res.Verdict != "pass" || res.AbortReason != "" || res.Thresholds[1].Aborted {
		t.Errorf("a run not aborted: verdict %s, abort %q, %+v", res.Verdict, res.AbortReason, res.Thresholds[1])
	}
	res.Aborted = true
	res.Settle(Judging{Thresholds: []judge.Threshold{failed, reqs}, Abort: abort})
	c := res.Thresholds[1]
	if res.Verdict != "fail" || res.AbortReason != "stopped early" || !c.Aborted || c.Pass || !strings.HasSuffix(c.Message, "; stopped the run (stopped early)") {
		t.Errorf("aborted: verdict %s, abort %q, %+v", res.Verdict, res.AbortReason, c)
	}
}

// TestSettleExpect: the expectation decides the run; under faults it is a
// warning (the fault checks judge the windows); not judged, it is
// skipped; without a limiter in sight the run fails only when a model
// was given.
func TestSettleExpect(t *testing.T) {
	over := judge.Judged{Model: "token-bucket:burst=1,rate=1/s", Description: "a token bucket", Expected: 2, Observed: 4, Of: 4, Pass: false}
	tests := []struct {
		name    string
		statuse []int
		j       Judging
		verdict string
		msgHas  string // in the verdict's messages
		expect  func(c doc.Check) bool
	}{
		{"over the model", limited, Judging{Expect: &over}, "fail", "allowed 4", func(c doc.Check) bool { return !c.Pass && !c.Warning }},
		{"within", limited, Judging{Expect: &judge.Judged{Model: "m", Description: "d", Expected: 2, Observed: 2, Of: 4, Pass: true}}, "pass", "", func(c doc.Check) bool { return c.Pass && !c.Skipped }},
		{"under faults", limited, Judging{Expect: &over, Faults: &judge.FaultReport{}}, "pass", "", func(c doc.Check) bool {
			return !c.Pass && c.Warning && strings.Contains(c.Message, "expected under faults")
		}},
		{"not judged", limited, Judging{Expect: &judge.Judged{NotJudged: true, Note: "no policy"}}, "pass", "", func(c doc.Check) bool { return c.Skipped }},
		{"no limiter, model given", []int{200, 200}, Judging{Expect: &judge.Judged{Model: "m", Description: "d", Expected: 2, Observed: 2, Of: 2, Pass: true}}, "fail", NoLimiterNote, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := counted(t, tt.statuse, nil)
			res.Settle(tt.j)
			if res.Verdict != tt.verdict {
				t.Fatalf("verdict %s (%q), want %s", res.Verdict, res.VerdictMessages, tt.verdict)
			}
			if tt.msgHas != "" && !strings.Contains(strings.Join(res.VerdictMessages, "; "), tt.msgHas) {
				t.Errorf("verdict messages %q lack %q", res.VerdictMessages, tt.msgHas)
			}
			if tt.expect != nil {
				if c := check(t, res, CheckExpect); !tt.expect(c) {
					t.Errorf("expect check %+v", c)
				}
			}
		})
	}
}

// TestSettleNoLimiter: without a model, a target that shows no limiter is
// a note once, however often the run is settled, and the run is
// undecided (nothing was refused: no evidence either way), saying why in
// its decided check; a run that refused has no such note and decides.
func TestSettleNoLimiter(t *testing.T) {
	res := counted(t, []int{200, 200, 200}, nil)
	res.Settle(Judging{})
	res.Settle(Judging{})
	if res.Verdict != doc.VerdictUndecided || !slices.Equal(res.Notes, []string{NoLimiterNote}) {
		t.Errorf("verdict %s notes %q, want undecided with the note once", res.Verdict, res.Notes)
	}
	if c := check(t, res, doc.CheckDecided); c.Pass || !strings.Contains(c.Message, "nothing was refused") {
		t.Errorf("decided %+v, want a failure saying nothing was refused", c)
	}
	if c := check(t, res, CheckLimiterSeen); c.Pass || !c.Warning {
		t.Errorf("limiter-seen %+v, want a failed warning", c)
	}
	res = counted(t, limited, nil)
	res.Settle(Judging{})
	if len(res.Notes) != 0 {
		t.Errorf("notes %q on a run with refusals", res.Notes)
	}
	if res.Verdict == doc.VerdictUndecided {
		t.Errorf("a run with refusals is undecided")
	}
}

// TestSettleHeaders: a header rule broken fails the run under --headers
// fail (named by its id), warns under warn, is skipped under off and in a
// recording without headers.
func TestSettleHeaders(t *testing.T) {
	bad := http.Header{"Ratelimit": {`"default";r=5;t=1`}, "Ratelimit-Policy": {`"default";q=2;w=1`}} // r above q
	tests := []struct {
		mode, notRecorded string
		verdict           string
		c                 func(c doc.Check) bool
	}{
		{HeadersFail, "", "fail", func(c doc.Check) bool {
			return !c.Pass && !c.Warning && strings.HasPrefix(c.Message, "4 of 4 values invalid")
		}},
		{HeadersWarn, "", "pass", func(c doc.Check) bool { return !c.Pass && c.Warning }},
		{HeadersOff, "", "pass", func(c doc.Check) bool { return c.Skipped && c.Message == "not checked (--headers off)" }},
		{HeadersFail, "k6 records none", "pass", func(c doc.Check) bool { return c.Skipped && c.Message == "not checked: k6 records none" }},
	}
	for _, tt := range tests {
		t.Run(tt.mode+tt.notRecorded, func(t *testing.T) {
			res := counted(t, limited, bad)
			res.Headers.Mode = tt.mode
			res.Headers.NotRecorded = tt.notRecorded
			res.Settle(Judging{})
			if res.Verdict != tt.verdict {
				t.Errorf("verdict %s (%q), want %s", res.Verdict, res.VerdictMessages, tt.verdict)
			}
			if tt.verdict == "fail" && (len(res.VerdictMessages) != 1 || !strings.HasPrefix(res.VerdictMessages[0], CheckRateLimit+": ")) {
				t.Errorf("verdict messages %q, want the header rule named by its id", res.VerdictMessages)
			}
			if c := check(t, res, CheckRateLimit); !tt.c(c) {
				t.Errorf("check %+v", c)
			}
		})
	}
}

// TestSettleInterrupted: an interrupted run has no verdict, and its
// completed check says so; a merge holding an interrupted segment is not
// itself interrupted.
func TestSettleInterrupted(t *testing.T) {
	res := counted(t, limited, nil)
	res.Interrupted, res.ElapsedS = true, 1.5
	res.Settle(Judging{})
	if res.Verdict != "interrupted" || len(res.VerdictMessages) != 0 {
		t.Errorf("verdict %s %q, want interrupted without messages", res.Verdict, res.VerdictMessages)
	}
	if c := check(t, res, CheckCompleted); c.Pass || c.Message != "interrupted after 1.50s: no verdict" {
		t.Errorf("completed %+v", c)
	}
	res.Segment = &SegmentInfo{Index: -1, Count: 2, Merged: []int{0, 1}, Incomplete: []int{1}}
	res.Settle(Judging{Generator: &GenStat{}})
	if res.Verdict != "fail" || check(t, res, CheckSegments).Pass {
		t.Errorf("merge of an interrupted segment: verdict %s, segments %+v", res.Verdict, check(t, res, CheckSegments))
	}
}

// segmentDoc is segment i of n of one plan, settled as load settles it.
func segmentDoc(t *testing.T, i, n int, statuses []int, gen func(r *Result)) *Result {
	t.Helper()
	res := counted(t, statuses, nil)
	res.RunID, res.Rate, res.RatePerS, res.DurationS, res.TimeoutS = "run", "4/s", 4, 3, 1
	res.StartedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := NewHistogram(10_000_000)
	for range statuses {
		Record(h, time.Millisecond)
	}
	res.Segment = &SegmentInfo{Index: i, Count: n, TotalPlanned: 12,
		Histograms: SegmentHistograms{Latency: EncodeHDR(h), LatencyFromDue: EncodeHDR(h), Lateness: EncodeHDR(h)}}
	if gen != nil {
		gen(res)
	}
	res.Settle(Judging{DropLate: 250 * time.Millisecond})
	return res
}

// TestMergeSegments: a merge sums the segments' counts, keeps every
// segment's generator causes once and its reasons by segment, fails its
// segments check when one is missing, and refuses a segment given twice
// or of another plan (exit 2).
func TestMergeSegments(t *testing.T) {
	a := segmentDoc(t, 0, 3, limited, func(r *Result) { r.Lateness.P99 = 20 })
	b := segmentDoc(t, 1, 3, []int{200, 429}, func(r *Result) { r.DroppedNoVU, r.Dropped, r.Planned, r.Lateness.P99 = 1, 1, 3, 30 })
	m, err := Merge([]*Result{b, a})
	if err != nil {
		t.Fatal(err)
	}
	if m.Sent != 6 || m.Planned != 7 || m.Allowed != 3 || m.RateLimited != 3 || m.DroppedNoVU != 1 || m.Latency.Count != 6 {
		t.Errorf("merged sent %d planned %d allowed %d refused %d dropped %d latency count %d, want 6 7 3 3 1 6",
			m.Sent, m.Planned, m.Allowed, m.RateLimited, m.DroppedNoVU, m.Latency.Count)
	}
	if want := []Cause{CauseLateness, CauseNoVU}; !m.Generator.FellBehind || !slices.Equal(m.Generator.Causes, want) {
		t.Errorf("merged generator %+v, want causes %v", m.Generator, want)
	}
	if len(m.Generator.Reasons) != 3 || !strings.HasPrefix(m.Generator.Reasons[0], "segment 0: scheduling lateness") || !strings.HasPrefix(m.Generator.Reasons[1], "segment 1: ") {
		t.Errorf("merged reasons %q, want each segment's, named", m.Generator.Reasons)
	}
	// a segment written before causes were kept: its causes from its counts
	b.Generator.Causes = nil
	m2, err := Merge([]*Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m2.Generator.Causes, []Cause{CauseLateness, CauseNoVU}) {
		t.Errorf("merge with a segment without causes: causes %v, want lateness and no_vu", m2.Generator.Causes)
	}
	if !slices.Equal(m.Segment.Missing, []int{2}) || m.Verdict != "fail" || check(t, m, CheckSegments).Pass {
		t.Errorf("missing %v, verdict %s: a merge without segment 2 fails its segments check", m.Segment.Missing, m.Verdict)
	}
	if _, err := Merge([]*Result{a, a}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a segment twice: %v", err)
	}
	other := segmentDoc(t, 2, 3, limited, func(r *Result) { r.Target = "http://127.0.0.1:2/" })
	if _, err := Merge([]*Result{a, other}); err == nil || !strings.Contains(err.Error(), "another plan") {
		t.Errorf("another target: %v", err)
	}
}

// TestTallyMergeEqualsOne: tallies counted apart (load's workers) and
// merged fill the same Result as one tally fed everything.
func TestTallyMergeEqualsOne(t *testing.T) {
	rule, err := judge.NewRule([]int{503})
	if err != nil {
		t.Fatal(err)
	}
	st := NewStatuses(rule, []int{200})
	one := New(st, 10_000_000)
	parts := []*Tally{New(st, 10_000_000), New(st, 10_000_000), New(st, 10_000_000)}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	hdrs := []http.Header{
		{"Ratelimit": {`"default";r=3;t=1`}, "Ratelimit-Policy": {`"default";q=5;w=1`}},
		{"Retry-After": {"1"}, "Ratelimit": {`"default";r=0;t=1`}},
		{"X-Ratelimit-Remaining": {"2"}},
		nil,
	}
	statuses := []int{200, 429, 503, 0, 200, 404, 429}
	for i := range 300 {
		s := statuses[i%len(statuses)]
		lat := time.Duration(i%37+1) * 173 * time.Microsecond
		sec := int64(i / 50)
		for _, tl := range []*Tally{one, parts[i%3]} {
			tl.Count(s, "reset", lat, lat+time.Millisecond)
			tl.Tick(sec, s)
			if s != 0 {
				tl.Inspect(s, hdrs[i%len(hdrs)], now)
			}
		}
	}
	merged := parts[0]
	for _, p := range parts[1:] {
		merged.Merge(p)
	}
	var a, b Result
	one.Fill(&a, 5, HeadersFail, "")
	merged.Fill(&b, 5, HeadersFail, "")
	a.Settle(Judging{})
	b.Settle(Judging{})
	ja, err := json.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(&b)
	if err != nil {
		t.Fatal(err)
	}
	if string(ja) != string(jb) {
		t.Errorf("merged tallies differ from one tally:\n%s\n%s", jb, ja)
	}
	// of 300 in a cycle of 7: 43 of each of the first six, 42 of the last;
	// the declared 503 is a refusal, and a finding (not a 429)
	if a.RateLimited != 43+42+43 || a.Headers.WrongStatus != 43 || a.Errors["reset"] != 43 || a.Allowed != 86 {
		t.Errorf("refused %d, wrong status %d, resets %d, allowed %d: want 128, 43, 43, 86", a.RateLimited, a.Headers.WrongStatus, a.Errors["reset"], a.Allowed)
	}
}

// TestDocumentKeepsCauses: the generator's causes and the verdict survive
// the document (JSON) and back, so report reads the fields load wrote.
func TestDocumentKeepsCauses(t *testing.T) {
	res := counted(t, limited, nil)
	res.DroppedNoVU, res.Dropped, res.Lateness.P99 = 2, 2, 11
	res.Settle(Judging{})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"causes":["no_vu","lateness"]`) {
		t.Errorf("document lacks the causes: %s", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Generator.Causes, res.Generator.Causes) || back.Verdict != res.Verdict || back.GeneratorBehind() != res.GeneratorBehind() {
		t.Errorf("read back %+v %s, wrote %+v %s", back.Generator, back.Verdict, res.Generator, res.Verdict)
	}
}
