package judge

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/stats"
	"github.com/ratelimit-dev/ratelimit/words"
)

// This file judges a run with faults injected into the Redis behind the
// target (load --fault): the run is cut into windows (before the first
// fault, during each, after each), each window's admissions are compared
// with the model over the same arrivals (the one replay, the one
// tolerance), and each fault's window is classified as fail-open,
// fail-closed, stalled or unaffected. The faults themselves are played by
// the caller: judging needs only when each one was in force.

// Behaviours of a target during a fault.
const (
	FailOpen    = "fail-open"    // admitted beyond the model
	FailClosed  = "fail-closed"  // refused (429, 5xx, errors) what the model admits
	Stalled     = "stalled"      // requests waited for Redis: latency grew by the fault's length
	Unaffected  = "unaffected"   // none of the above
	NotInjected = "not-injected" // the fault could not be played
)

// The --during-fault values: which behaviours a fault may show.
const (
	DuringAny        = "any"
	DuringOpen       = "open"
	DuringClosed     = "closed"
	DuringUnaffected = "unaffected"
)

// allowedDuring maps --during-fault to the behaviours it accepts. A fault
// that did not disturb the target passes open and closed alike: the
// question is what it does when it is disturbed.
var allowedDuring = map[string][]string{
	DuringAny:        {FailOpen, FailClosed, Stalled, Unaffected},
	DuringOpen:       {FailOpen, Unaffected},
	DuringClosed:     {FailClosed, Unaffected},
	DuringUnaffected: {Unaffected},
}

// Windows and bounds of the fault verdict.
const (
	// MinFaultWindow is the shortest "during" window: a fault of one
	// moment (drop-clients, flush-scripts) is watched for this long.
	MinFaultWindow = time.Second
	// MinBaseline is the least run time before the first fault: the
	// baseline of latency and admissions.
	MinBaseline = time.Second
	// MinAfter is the least run time after the last fault's planned end.
	MinAfter = time.Second
	// StallShare: a fault stalled the target when the longest wait from
	// a due time in its window exceeds the baseline p99 by this share of
	// the fault's length.
	StallShare = 0.8
	// StallMedianShare: or when the fault window's median wait from a due
	// time exceeds the baseline's median by this share of the fault's
	// length (the baseline's median, not its p99: a busy machine's tail
	// must not hide a stall)
	StallMedianShare = 0.35
	// MinStall is the shortest fault that can be called a stall.
	MinStall = 200 * time.Millisecond
	// MinJitterMs floors the baseline p99 the windows' Jitter is made of:
	// a baseline of a few fast requests says little about the spread.
	MinJitterMs = 10
	// recoverStep is the resolution of the time to recover.
	recoverStep = 100 * time.Millisecond
	// recoverSpan is the span that must be back within tolerance.
	recoverSpan = time.Second
	// recoverLatencySlack is added to the baseline p99 (or its double,
	// whichever is more) for a span to count as recovered.
	recoverLatencySlack = 25 * time.Millisecond
)

// Disruption is one fault as it was played: what, where and when it was
// in force. Start and End are on the run's monotonic clock; End equals
// Start for a fault of one moment.
type Disruption struct {
	Spec   string // as given: pause:2s@3s
	Kind   string // pause, drop-clients, ...
	Server string // where it went, password masked
	Detail string
	Start  time.Time
	End    time.Time
	// Timed is true for a fault held for a duration (pause, stop).
	Timed bool
	Err   string // why it failed; "" when it was played as planned
}

// PlannedFault is one fault of the plan.
type PlannedFault struct {
	Spec string
	Kind string
	At   time.Duration
	For  time.Duration
}

// FaultPlan is what a run injects and how it is judged.
type FaultPlan struct {
	// Specs are the planned faults in order: spec text, offset, length.
	Specs []PlannedFault
	// Server is where the faults go (masked), Statement the one line said
	// before anything is sent there.
	Server, Statement string
	// During is --during-fault (default any); RecoverWithin is
	// --recover-within (0: the time to recover is reported, not judged).
	During        string
	RecoverWithin time.Duration
}

// Validate checks the plan against the run's duration and model before
// anything runs. Errors are exit 2.
func (f *FaultPlan) Validate(duration time.Duration, x *Expectation) error {
	if len(f.Specs) == 0 {
		return exitcode.Usagef("--fault: no fault to play")
	}
	if _, ok := allowedDuring[f.During]; !ok {
		return exitcode.Usagef("--during-fault %q: use open, closed, unaffected or any", f.During)
	}
	if f.RecoverWithin < 0 {
		return exitcode.Usagef("--recover-within must not be negative")
	}
	if !x.Judges() || x.Implicit {
		return exitcode.Usagef("--fault judges every window against the limiter's model: add --expect (e.g. --expect token-bucket:burst=10,rate=5/s, or --expect auto to read RateLimit-Policy)")
	}
	first, last := f.Specs[0], f.Specs[len(f.Specs)-1]
	if first.At < MinBaseline {
		return exitcode.Usagef("--fault %s starts before %s: the run needs a baseline before the first fault", first.Spec, durText(MinBaseline))
	}
	for i := 1; i < len(f.Specs); i++ {
		prev, next := f.Specs[i-1], f.Specs[i]
		if gap := next.At - (prev.At + prev.For); gap < recoverSpan {
			return exitcode.Usagef("--fault %s starts %s after %s ends: leave at least %s between faults, so each one's recovery can be judged (or make them one longer fault)",
				next.Spec, durText(max(gap, 0)), prev.Spec, durText(recoverSpan))
		}
	}
	if end := last.At + last.For + MinAfter; end > duration {
		return exitcode.Usagef("--fault %s ends at %s, too late for --duration %s: leave at least %s after the last fault to see the recovery", last.Spec, durText(last.At+last.For), durText(duration), durText(MinAfter))
	}
	return nil
}

// DuringChoices are the --during-fault values.
func DuringChoices() []string { return []string{DuringAny, DuringOpen, DuringClosed, DuringUnaffected} }

// FaultReport is the verdict of a run with faults: the windows and what
// each fault did.
type FaultReport struct {
	Server    string `json:"server"`
	Statement string `json:"statement"`
	// Model is the model the windows are judged against ("" when --expect
	// auto found no policy to read).
	Model           string        `json:"model"`
	During          string        `json:"during_fault"`
	RecoverWithinMs float64       `json:"recover_within_ms,omitempty"`
	BaselineP99Ms   float64       `json:"baseline_p99_ms"`
	Windows         []FaultWindow `json:"windows"`
	Faults          []FaultResult `json:"faults"`
}

// FaultWindow is one stretch of the run. A request belongs to the window
// its due time falls in, unless it was still waiting when a fault began:
// then it belongs to that fault's window, whose wait it shared.
type FaultWindow struct {
	Name    string  `json:"name"`  // before, during pause:2s@3s, after pause:2s@3s
	Phase   string  `json:"phase"` // before, during, after
	Fault   int     `json:"fault"` // index in faults; -1 for before
	StartMs float64 `json:"start_ms"`
	EndMs   float64 `json:"end_ms"`

	Requests     int64 `json:"requests"`
	Admitted     int64 `json:"admitted"` // Allowed
	Limited      int64 `json:"limited"`  // the limiter's refusals (Rule)
	ServerErrors int64 `json:"server_errors"`
	Errors       int64 `json:"errors"`       // no status: transport errors, timeouts
	OtherFailed  int64 `json:"other_failed"` // statuses not expected, not 5xx
	// ModelAllowed is what the model admits of the same arrivals, Extra
	// the admissions beyond it (negative: fewer), Tolerance how far the
	// two may differ (Tol: its terms).
	ModelAllowed int64     `json:"model_allowed"`
	Extra        int64     `json:"extra"`
	Tolerance    int64     `json:"tolerance"`
	Tol          Tolerance `json:"tolerance_parts"`
	P50Ms        float64   `json:"p50_ms"` // latency from the due time
	P99Ms        float64   `json:"p99_ms"`
	MaxMs        float64   `json:"max_ms"`

	byDone int64 // the model's count over response ends
}

// FaultResult is one fault and its verdict.
type FaultResult struct {
	Spec    string  `json:"spec"`
	Kind    string  `json:"kind"`
	Server  string  `json:"server"`
	Detail  string  `json:"detail,omitempty"`
	Error   string  `json:"error,omitempty"`
	StartMs float64 `json:"start_ms"` // in force from, after the run's start
	EndMs   float64 `json:"end_ms"`   // undone (or done) at
	// Behaviour is FailOpen, FailClosed, Stalled, Unaffected or NotInjected.
	Behaviour string `json:"behaviour"`
	// Allowed is what --during-fault accepts; Pass whether Behaviour is one.
	Allowed []string `json:"allowed"`
	Pass    bool     `json:"pass"`
	// Recovered: a span of recoverSpan after the fault's end was back
	// within tolerance; RecoverMs is when it began, after the end.
	Recovered bool    `json:"recovered"`
	RecoverMs float64 `json:"recover_ms"`
	// RecoverPass is the --recover-within verdict (true without it).
	RecoverPass bool `json:"recover_pass"`
	// Line says it all in one line.
	Line string `json:"line"`
}

// FaultInput is what JudgeFaults needs from a run.
type FaultInput struct {
	Arrivals   []Arrival
	Identities int
	StartMs    int64 // wall clock of the start (the replay's time base)
	Duration   time.Duration
	Rule       Rule           // the limiter's refusals
	Expected   func(int) bool // statuses that are not failures (--expect-status)
	Model      *Expectation   // nil: no model
}

// decided is an arrival with the model's decisions on it.
type decided struct {
	Arrival
	bySend, byDone bool
	window         int
}

// JudgeFaults cuts the run into windows and judges each fault. ds are the
// faults as played (by index of the plan), start the run's monotonic
// origin. It is a pure function of its input.
func JudgeFaults(f FaultPlan, ds []Disruption, start time.Time, in FaultInput) *FaultReport {
	rep := &FaultReport{Server: f.Server, Statement: f.Statement, During: f.During,
		Windows: []FaultWindow{}, Faults: []FaultResult{}}
	if in.Model != nil {
		rep.Model = in.Model.Spec
	}
	if f.RecoverWithin > 0 {
		rep.RecoverWithinMs = msOf(f.RecoverWithin)
	}
	// every planned fault has a result; one that never ran is not-injected
	type span struct{ start, end time.Duration }
	spans := make([]span, len(f.Specs))
	for i, p := range f.Specs {
		r := FaultResult{Spec: p.Spec, Kind: p.Kind, Server: f.Server, Behaviour: NotInjected, Allowed: allowedDuring[f.During]}
		spans[i] = span{p.At, p.At + p.For}
		if i < len(ds) {
			d := ds[i]
			r.Server, r.Detail, r.Error = d.Server, d.Detail, d.Err
			if !d.Start.IsZero() {
				spans[i].start = d.Start.Sub(start)
				spans[i].end = spans[i].start
				if !d.End.IsZero() {
					spans[i].end = max(d.End.Sub(start), spans[i].start)
				}
				r.Behaviour = "" // it was in force: classify it, error or not
			} else if r.Error == "" {
				r.Error = "not played"
			}
		} else {
			r.Error = "not played (the run ended first)"
		}
		r.StartMs, r.EndMs = msOf(spans[i].start), msOf(spans[i].end)
		rep.Faults = append(rep.Faults, r)
	}

	// windows: before, then during and after each fault
	cursor := time.Duration(0)
	addWindow := func(name, phase string, fault int, a, b time.Duration) {
		if b > a {
			rep.Windows = append(rep.Windows, FaultWindow{Name: name, Phase: phase, Fault: fault, StartMs: msOf(a), EndMs: msOf(b)})
		}
	}
	addWindow("before", "before", -1, 0, spans[0].start)
	cursor = spans[0].start
	for i, s := range spans {
		next := in.Duration
		if i+1 < len(spans) {
			next = spans[i+1].start
		}
		a := max(s.start, cursor)
		b := min(max(s.end, s.start+MinFaultWindow), next)
		addWindow("during "+f.Specs[i].Spec, "during", i, a, b)
		addWindow("after "+f.Specs[i].Spec, "after", i, b, next)
		cursor = next
	}

	arr := decide(in, rep.Windows)
	// the baseline: the window before the first fault, its latency taken
	// only from requests answered before the fault began
	var base *FaultWindow
	baseLat := []float64{}
	baseP50 := 0.0
	if len(rep.Windows) > 0 && rep.Windows[0].Phase == "before" {
		base = &rep.Windows[0]
		for _, a := range arr {
			if a.window == 0 && a.DoneNs < int64(spans[0].start) {
				baseLat = append(baseLat, float64(a.DoneNs-a.DueNs)/1e6)
			}
		}
		slices.Sort(baseLat)
		rep.BaselineP99Ms = round3(stats.Percentile(baseLat, 99))
		baseP50 = stats.Percentile(baseLat, 50)
	}
	for i := range rep.Windows {
		measure(in, arr, &rep.Windows[i], i)
	}
	shiftPerMs := 0.0
	if base != nil && base.EndMs > base.StartMs {
		shiftPerMs = float64(abs(base.byDone-base.ModelAllowed)) / (base.EndMs - base.StartMs)
	}
	for i := range rep.Windows {
		w := &rep.Windows[i]
		setTolerance(in, w, rep.BaselineP99Ms, shiftPerMs, i == 0 && base != nil)
	}
	for i := range rep.Faults {
		r := &rep.Faults[i]
		var during *FaultWindow
		for k := range rep.Windows {
			if rep.Windows[k].Fault == i && rep.Windows[k].Phase == "during" {
				during = &rep.Windows[k]
			}
		}
		if r.Behaviour == "" {
			r.Behaviour = classify(in, during, spans[i].end-spans[i].start, rep.BaselineP99Ms, baseP50)
		}
		r.Pass = r.Behaviour != NotInjected && slices.Contains(r.Allowed, r.Behaviour) && r.Error == "" &&
			(in.Model != nil || f.During == DuringAny)
		next := in.Duration
		if i+1 < len(spans) {
			next = spans[i+1].start
		}
		if r.Behaviour != NotInjected {
			r.Recovered, r.RecoverMs = recovery(in, arr, spans[i].end, next, rep.BaselineP99Ms, shiftPerMs)
		}
		r.RecoverPass = f.RecoverWithin <= 0 || r.Recovered && r.RecoverMs <= msOf(f.RecoverWithin)
		r.Line = faultLine(*r, during, in.Model != nil)
	}
	return rep
}

// decide replays the model over the arrivals (by send and by response
// end, the one replay and its one inclusion rule) and assigns each to its
// window: the one its due time falls in, or the first fault window that
// began while it was still waiting for its answer.
func decide(in FaultInput, ws []FaultWindow) []decided {
	out := make([]decided, len(in.Arrivals))
	ids := max(in.Identities, 1)
	for i, a := range in.Arrivals {
		a.Identity %= ids
		out[i].Arrival = a
	}
	if in.Model != nil {
		replayAt(in, out, false)
		replayAt(in, out, true)
	}
	for i := range out {
		out[i].window = windowOf(out[i].Arrival, ws)
	}
	return out
}

// replayAt runs the one replay over out at the sends (or, done, at the
// response ends), in that order, and marks each arrival's decision.
func replayAt(in FaultInput, out []decided, done bool) {
	at := func(a Arrival) int64 {
		if done {
			return a.DoneNs
		}
		return a.SendNs
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp64(at(out[x].Arrival), at(out[y].Arrival)) })
	r := newReplay(*in.Model, in.StartMs)
	for _, i := range idx {
		a := out[i].Arrival
		admitted, _ := r.decide(a.Identity, at(a))
		if done {
			out[i].byDone = admitted
		} else {
			out[i].bySend = admitted
		}
	}
}

// windowOf is the window of an arrival: the first fault window that began
// while it was still waiting for its answer, else the one its due time
// falls in (-1: none).
func windowOf(a Arrival, ws []FaultWindow) int {
	for k, w := range ws {
		lo := int64(w.StartMs * 1e6)
		if w.Phase == "during" && a.DueNs < lo && a.DoneNs >= lo {
			return k
		}
	}
	for k, w := range ws {
		if lo, hi := int64(w.StartMs*1e6), int64(w.EndMs*1e6); a.DueNs >= lo && a.DueNs < hi {
			return k
		}
	}
	return -1
}

// measure counts the arrivals of window k.
func measure(in FaultInput, arr []decided, w *FaultWindow, k int) {
	var lat []float64
	for _, a := range arr {
		if a.window == k {
			count(in, a, w, &lat)
		}
	}
	finish(w, lat)
}

// count adds one arrival to a window's counts.
func count(in FaultInput, a decided, w *FaultWindow, lat *[]float64) {
	w.Requests++
	*lat = append(*lat, float64(a.DoneNs-a.DueNs)/1e6)
	switch s := a.Status; {
	case s == 0:
		w.Errors++
	case Allowed(s):
		w.Admitted++
	case in.Rule.Limited(s):
		w.Limited++
	case s >= 500:
		w.ServerErrors++
	case in.Expected != nil && !in.Expected(s):
		w.OtherFailed++
	}
	if a.bySend {
		w.ModelAllowed++
	}
	if a.byDone {
		w.byDone++
	}
}

func finish(w *FaultWindow, lat []float64) {
	w.Extra = w.Admitted - w.ModelAllowed
	slices.Sort(lat)
	w.P50Ms, w.P99Ms, w.MaxMs = round3(stats.Percentile(lat, 50)), round3(stats.Percentile(lat, 99)), round3(stats.Percentile(lat, 100))
}

// setTolerance gives a window the one tolerance, with inputs the fault
// cannot inflate: Jitter from the baseline's p99 (at least MinJitterMs),
// Shift from the baseline's own shift per ms over the window's length
// (the baseline window uses its own), Unknown from the window's requests
// without a status.
func setTolerance(in FaultInput, w *FaultWindow, baseP99Ms, shiftPerMs float64, isBase bool) {
	if in.Model == nil {
		return
	}
	byDone := w.ModelAllowed + int64(math.Ceil(shiftPerMs*(w.EndMs-w.StartMs)))
	if isBase {
		byDone = w.byDone
	}
	w.Tol = tolerance(in.Model.PerSecond(), in.Identities, max(baseP99Ms, MinJitterMs), w.ModelAllowed, byDone, w.Errors, w.Requests)
	w.Tolerance = w.Tol.Total()
}

// classify names what the target did in a fault's window: over-admitted
// (fail-open) first, since it is the failure a limiter exists to prevent;
// then a wait as long as the fault (stalled); then refusals of what the
// model admits (fail-closed).
//
// A stall is read from the fault window's own distribution against the
// baseline's median, which a busy machine's tail does not inflate: the
// longest wait exceeds the baseline p99 by most of the fault's length,
// or the median wait exceeds the baseline median by StallMedianShare of
// it (requests arriving during a pause wait for what is left of it, half
// the length on average).
func classify(in FaultInput, w *FaultWindow, length time.Duration, baseP99Ms, baseP50Ms float64) string {
	if w == nil || w.Requests == 0 {
		return Unaffected
	}
	if in.Model != nil && w.Extra > w.Tolerance {
		return FailOpen
	}
	if length >= MinStall && (w.MaxMs-baseP99Ms >= StallShare*msOf(length) || w.P50Ms-baseP50Ms >= StallMedianShare*msOf(length)) {
		return Stalled
	}
	// a request without a status was not admitted: for fail-closed it is
	// a refusal, not an unknown that widens the tolerance
	refused := w.Limited + w.ServerErrors + w.Errors + w.OtherFailed
	if in.Model != nil && -w.Extra > w.Tolerance-w.Errors && refused > 0 {
		return FailClosed
	}
	if in.Model == nil && w.ServerErrors+w.Errors > 0 {
		return FailClosed
	}
	return Unaffected
}

// recovery finds the first span of recoverSpan (or, cut by next, at least
// half of it), starting at end or later in steps of recoverStep, whose
// admissions are within tolerance of the model, that saw no 5xx and no
// transport error, and whose p99 latency from the due time is back near
// the baseline's.
func recovery(in FaultInput, arr []decided, end, next time.Duration, baseP99Ms, shiftPerMs float64) (bool, float64) {
	limit := max(2*baseP99Ms, baseP99Ms+msOf(recoverLatencySlack))
	for t := end; min(t+recoverSpan, next)-t >= recoverSpan/2; t += recoverStep {
		w := FaultWindow{StartMs: msOf(t), EndMs: msOf(min(t+recoverSpan, next))}
		var lat []float64
		lo, hi := int64(t), int64(min(t+recoverSpan, next))
		for _, a := range arr {
			if a.DueNs >= lo && a.DueNs < hi {
				count(in, a, &w, &lat)
			}
		}
		finish(&w, lat)
		if w.Requests == 0 {
			continue
		}
		setTolerance(in, &w, baseP99Ms, shiftPerMs, false)
		if w.ServerErrors+w.Errors > 0 || w.P99Ms > limit {
			continue
		}
		if in.Model != nil && abs(w.Extra) > w.Tolerance {
			continue
		}
		return true, msOf(t - end)
	}
	return false, 0
}

// faultLine is the one line of a fault: "pause:2s@3s at 3.00s-5.00s:
// fail-open: admitted 400 of 400, the model 41 (+359, ±2), 0 refused, 0
// 5xx, 0 errors, p99 52ms from due; back within tolerance 1.20s after".
func faultLine(r FaultResult, w *FaultWindow, model bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s-%s: %s", r.Spec, secText(r.StartMs), secText(r.EndMs), r.Behaviour)
	if r.Behaviour == NotInjected {
		fmt.Fprintf(&b, " (%s)", r.Error)
		return b.String()
	}
	if w != nil {
		fmt.Fprintf(&b, ": admitted %d of %d", w.Admitted, w.Requests)
		if model {
			fmt.Fprintf(&b, ", the model %d (%+d, ±%d)", w.ModelAllowed, w.Extra, w.Tolerance)
		}
		fmt.Fprintf(&b, ", %d refused, %d 5xx, %d errors, p99 %s from due", w.Limited, w.ServerErrors, w.Errors, latText(w.P99Ms))
	}
	if r.Recovered {
		fmt.Fprintf(&b, "; back within tolerance %s after", secText(r.RecoverMs))
	} else {
		b.WriteString("; not back within tolerance before the run or the next fault")
	}
	switch {
	case r.Error != "":
		fmt.Fprintf(&b, "; the fault failed: %s", r.Error)
	case !model && !r.Pass:
		b.WriteString("; no model to tell fail-open from unaffected (--expect auto found no RateLimit-Policy): give --expect MODEL")
	case !r.Pass:
		fmt.Fprintf(&b, "; --during-fault allows %s", strings.Join(r.Allowed, " or "))
	}
	return b.String()
}

// Check ids of the fault verdict.
const (
	CheckFaultBaseline = "fault:baseline" // the run before the first fault agrees with the model
	CheckFaultPfx      = "fault:"         // + spec: the behaviour is one --during-fault allows
	CheckRecoverPfx    = "recover:"       // + spec: back within tolerance within --recover-within
)

// Checks are the checks of the fault verdict; nil without faults.
func (fr *FaultReport) Checks() []doc.Check {
	if fr == nil {
		return nil
	}
	var out []doc.Check
	base := doc.Check{ID: CheckFaultBaseline, Pass: true}
	switch {
	case fr.Model == "":
		base.Skipped = true
		base.Message = "no model to judge the windows against (--expect auto found no RateLimit-Policy)"
	case len(fr.Windows) == 0 || fr.Windows[0].Phase != "before":
		base.Skipped = true
		base.Message = "no run before the first fault"
	default:
		w := fr.Windows[0]
		base.Pass = abs(w.Extra) <= w.Tolerance
		base.Message = fmt.Sprintf("before the first fault: admitted %d of %d, the model (%s) %d ±%d", w.Admitted, w.Requests, fr.Model, w.ModelAllowed, w.Tolerance)
		if !base.Pass {
			base.Message += ": the limiter disagrees with the model before any fault, so the fault windows measure nothing"
		}
	}
	out = append(out, base)
	for _, f := range fr.Faults {
		out = append(out, doc.Check{ID: CheckFaultPfx + f.Spec, Pass: f.Pass, Message: f.Line})
	}
	if fr.RecoverWithinMs > 0 {
		for _, f := range fr.Faults {
			c := doc.Check{ID: CheckRecoverPfx + f.Spec, Pass: f.RecoverPass}
			switch {
			case f.Behaviour == NotInjected:
				c.Message = "the fault was not played"
			case !f.Recovered:
				c.Message = fmt.Sprintf("not back within tolerance before the run or the next fault; --recover-within %s", secText(fr.RecoverWithinMs))
			default:
				c.Message = fmt.Sprintf("back within tolerance %s after the fault (--recover-within %s)", secText(f.RecoverMs), secText(fr.RecoverWithinMs))
			}
			out = append(out, c)
		}
	}
	return out
}

func secText(ms float64) string { return fmt.Sprintf("%.2fs", ms/1000) }

func latText(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.2fs", ms/1000)
	}
	return fmt.Sprintf("%.0fms", ms)
}

func msOf(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// durText writes a duration for a message without zero units: 1s, 1m, 200ms.
func durText(d time.Duration) string { return words.Span(d) }
