package load

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// This file judges a run with faults injected into the Redis behind the
// target (load --fault): the run is cut into windows (before the first
// fault, during each, after each) by the due time of each request, each
// window's admissions are compared with the limiter's model over the same
// arrivals, and each fault's window is classified as fail-open,
// fail-closed, stalled or unaffected. The faults themselves are played
// by the caller (package fault, wired by cmd): load only needs when each
// one was in force.

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

// Windows and tolerances of the fault verdict.
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
	// MinStall is the shortest fault that can be called a stall.
	MinStall = 200 * time.Millisecond
	// recoverStep is the resolution of the time to recover.
	recoverStep = 100 * time.Millisecond
	// recoverSpan is the span that must be back within tolerance.
	recoverSpan = time.Second
	// recoverLatencySlack is added to the baseline p99 (or its double,
	// whichever is more) for a span to count as recovered.
	recoverLatencySlack = 25 * time.Millisecond
)

// Disruption is one fault as it was played: what, where and when it was
// in force. Start and End are on the clock of the run's start passed to
// Faults.Run (monotonic); End equals Start for a fault of one moment.
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

// Faults is what a run injects and how it is judged.
type Faults struct {
	// Specs are the planned faults in order, for validation and for a
	// fault that never ran: spec text, offset and duration.
	Specs []PlannedFault
	// Server is where the faults go (masked), Statement the one line said
	// before anything is sent there.
	Server, Statement string
	// Run plays the faults; the engine calls it in a goroutine of its own
	// when the clock starts and waits for it when the requests are done.
	// ctx ends on Ctrl-C and on --abort-on-fail; Run must have undone
	// every fault by the time it returns.
	Run func(ctx context.Context, start time.Time) []Disruption
	// During is --during-fault (default any); RecoverWithin is
	// --recover-within (0: the time to recover is reported, not judged).
	During        string
	RecoverWithin time.Duration
}

// PlannedFault is one fault of the plan.
type PlannedFault struct {
	Spec string
	Kind string
	At   time.Duration
	For  time.Duration
}

func (f *Faults) validate(duration time.Duration, expect *Expectation) error {
	if len(f.Specs) == 0 || f.Run == nil {
		return exitcode.Usagef("--fault: no fault to play")
	}
	if _, ok := allowedDuring[f.During]; !ok {
		return exitcode.Usagef("--during-fault %q: use open, closed, unaffected or any", f.During)
	}
	if f.RecoverWithin < 0 {
		return exitcode.Usagef("--recover-within must not be negative")
	}
	if expect == nil {
		return exitcode.Usagef("--fault judges every window against the limiter's model: add --expect (e.g. --expect token-bucket:burst=10,rate=5/s, or --expect auto to read RateLimit-Policy)")
	}
	first, last := f.Specs[0], f.Specs[len(f.Specs)-1]
	if first.At < MinBaseline {
		return exitcode.Usagef("--fault %s starts before %s: the run needs a baseline before the first fault", first.Spec, durText(MinBaseline))
	}
	if end := last.At + last.For + MinAfter; end > duration {
		return exitcode.Usagef("--fault %s ends at %s, too late for --duration %s: leave at least %s after the last fault to see the recovery", last.Spec, durText(last.At+last.For), durText(duration), durText(MinAfter))
	}
	return nil
}

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

// FaultWindow is one stretch of the run, by the due time of its requests.
type FaultWindow struct {
	Name    string  `json:"name"`  // before, during pause:2s@3s, after pause:2s@3s
	Phase   string  `json:"phase"` // before, during, after
	Fault   int     `json:"fault"` // index in faults; -1 for before
	StartMs float64 `json:"start_ms"`
	EndMs   float64 `json:"end_ms"`

	Requests     int64 `json:"requests"`
	Admitted     int64 `json:"admitted"` // 2xx and 3xx
	Limited      int64 `json:"limited"`  // 429
	ServerErrors int64 `json:"server_errors"`
	Errors       int64 `json:"errors"`       // no status: transport errors, timeouts
	OtherFailed  int64 `json:"other_failed"` // statuses not expected, not 5xx
	// ModelAllowed is what the model admits of the same arrivals, Extra
	// the admissions beyond it (negative: fewer), Tolerance how far the
	// two may differ (see windowTolerance).
	ModelAllowed int64   `json:"model_allowed"`
	Extra        int64   `json:"extra"`
	Tolerance    int64   `json:"tolerance"`
	P50Ms        float64 `json:"p50_ms"` // latency from the due time
	P99Ms        float64 `json:"p99_ms"`
	MaxMs        float64 `json:"max_ms"`
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

// faultInput is what judgeFaults needs from a run.
type faultInput struct {
	arrivals   []Arrival // sorted by SendNs
	identities int
	startMs    int64
	duration   time.Duration
	expectOK   func(status int) bool
	params     *limiter.Params // nil: no model
	model      string
}

// judgeFaults cuts the run into windows and judges each fault. It is a
// pure function of its input.
func judgeFaults(f *Faults, ds []Disruption, start time.Time, in faultInput) *FaultReport {
	rep := &FaultReport{Server: f.Server, Statement: f.Statement, Model: in.model, During: f.During,
		Windows: []FaultWindow{}, Faults: []FaultResult{}}
	if f.RecoverWithin > 0 {
		rep.RecoverWithinMs = msOf(f.RecoverWithin)
	}
	arr := byDue(in)
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
	var bounds []struct {
		name, phase string
		fault       int
		a, b        time.Duration
	}
	add := func(name, phase string, fault int, a, b time.Duration) {
		if b > a {
			bounds = append(bounds, struct {
				name, phase string
				fault       int
				a, b        time.Duration
			}{name, phase, fault, a, b})
		}
	}
	cursor := time.Duration(0)
	add("before", "before", -1, 0, spans[0].start)
	cursor = spans[0].start
	for i, s := range spans {
		next := in.duration
		if i+1 < len(spans) {
			next = spans[i+1].start
		}
		a := max(s.start, cursor)
		b := min(max(s.end, s.start+MinFaultWindow), next)
		add("during "+f.Specs[i].Spec, "during", i, a, b)
		add("after "+f.Specs[i].Spec, "after", i, b, next)
		cursor = next
	}
	for _, w := range bounds {
		rep.Windows = append(rep.Windows, measure(in, arr, w.name, w.phase, w.fault, w.a, w.b))
	}
	var base *FaultWindow
	if len(rep.Windows) > 0 && rep.Windows[0].Phase == "before" {
		base = &rep.Windows[0]
		rep.BaselineP99Ms = base.P99Ms
	}
	// tolerances need the baseline's latency
	for i := range rep.Windows {
		w := &rep.Windows[i]
		w.Tolerance = windowTolerance(in, rep.BaselineP99Ms, w.Errors)
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
			r.Behaviour = classify429(in, during, spans[i].end-spans[i].start, rep.BaselineP99Ms)
		}
		r.Pass = r.Behaviour != NotInjected && contains(r.Allowed, r.Behaviour) && r.Error == "" &&
			(in.params != nil || f.During == DuringAny)
		next := in.duration
		if i+1 < len(spans) {
			next = spans[i+1].start
		}
		if r.Behaviour != NotInjected {
			r.Recovered, r.RecoverMs = recovery(in, arr, spans[i].end, next, rep.BaselineP99Ms)
		}
		r.RecoverPass = f.RecoverWithin <= 0 || r.Recovered && r.RecoverMs <= msOf(f.RecoverWithin)
		r.Line = faultLine(*r, during, in.params != nil)
	}
	return rep
}

// judged is an arrival with the model's decision on it.
type judged struct {
	Arrival
	model bool
}

// byDue replays the model over every arrival (transport errors too: the
// ideal limiter decides every request sent), one model per identity, at
// the send times, and returns the arrivals with its decisions, sorted by
// due time. Without a model every decision is false.
func byDue(in faultInput) []judged {
	out := make([]judged, len(in.arrivals))
	per := map[int]model.Limiter{}
	for i, a := range in.arrivals {
		out[i].Arrival = a
		if in.params == nil {
			continue
		}
		k := a.Identity % max(in.identities, 1)
		m, ok := per[k]
		if !ok {
			m = newModel(*in.params)
			per[k] = m
		}
		out[i].model = m != nil && m.Allow(in.startMs+a.SendNs/1e6, 1).Allowed
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].DueNs < out[j].DueNs })
	return out
}

// measure counts the arrivals due in [a, b).
func measure(in faultInput, arr []judged, name, phase string, fault int, a, b time.Duration) FaultWindow {
	w := FaultWindow{Name: name, Phase: phase, Fault: fault, StartMs: msOf(a), EndMs: msOf(b)}
	lo := sort.Search(len(arr), func(i int) bool { return arr[i].DueNs >= int64(a) })
	hi := sort.Search(len(arr), func(i int) bool { return arr[i].DueNs >= int64(b) })
	lat := make([]float64, 0, hi-lo)
	for _, ar := range arr[lo:hi] {
		w.Requests++
		lat = append(lat, float64(ar.DoneNs-ar.DueNs)/1e6)
		switch s := ar.Status; {
		case s == 0:
			w.Errors++
		case s >= 200 && s < 400:
			w.Admitted++
		case s == 429:
			w.Limited++
		case s >= 500:
			w.ServerErrors++
		case !in.expectOK(s):
			w.OtherFailed++
		}
		if ar.model {
			w.ModelAllowed++
		}
	}
	w.Extra = w.Admitted - w.ModelAllowed
	w.P50Ms, w.P99Ms, w.MaxMs = pct(lat, 50), pct(lat, 99), pct(lat, 100)
	return w
}

// windowTolerance is how far a window's admissions may stray from the
// model: one for the millisecond clocks, the admissions the baseline's
// p99 latency (at least 10 ms) can move across a window's edge, and every
// request without a status (it may or may not have been counted).
func windowTolerance(in faultInput, baseP99Ms float64, unknown int64) int64 {
	if in.params == nil {
		return 0
	}
	jitter := int64(math.Ceil(admissionRate(*in.params) * float64(max(in.identities, 1)) * max(baseP99Ms, 10) / 1000))
	return 1 + jitter + unknown
}

// classify429 names what the target did in a fault's window: over-admitted
// (fail-open) first, since it is the failure a limiter exists to prevent;
// then a wait as long as the fault (stalled); then refusals of what the
// model admits (fail-closed).
func classify429(in faultInput, w *FaultWindow, length time.Duration, baseP99Ms float64) string {
	if w == nil || w.Requests == 0 {
		return Unaffected
	}
	if in.params != nil && w.Extra > w.Tolerance {
		return FailOpen
	}
	if length >= MinStall && w.MaxMs-baseP99Ms >= StallShare*msOf(length) {
		return Stalled
	}
	// a request without a status was not admitted: for fail-closed it is
	// a refusal, not an unknown that widens the tolerance
	refused := w.Limited + w.ServerErrors + w.Errors + w.OtherFailed
	if in.params != nil && -w.Extra > w.Tolerance-w.Errors && refused > 0 {
		return FailClosed
	}
	if in.params == nil && w.ServerErrors+w.Errors > 0 {
		return FailClosed
	}
	return Unaffected
}

// recovery finds the first span of recoverSpan (or, cut by next, at least
// half of it), starting at end or later in steps of recoverStep, whose admissions are within
// tolerance of the model, that saw no 5xx and no transport error, and
// whose p99 latency from the due time is back near the baseline's.
func recovery(in faultInput, arr []judged, end, next time.Duration, baseP99Ms float64) (bool, float64) {
	limit := max(2*baseP99Ms, baseP99Ms+msOf(recoverLatencySlack))
	for t := end; min(t+recoverSpan, next)-t >= recoverSpan/2; t += recoverStep {
		w := measure(in, arr, "", "", 0, t, min(t+recoverSpan, next))
		if w.Requests == 0 {
			continue
		}
		tol := windowTolerance(in, baseP99Ms, w.Errors)
		if w.ServerErrors+w.Errors > 0 || w.P99Ms > limit {
			continue
		}
		if in.params != nil && abs(w.Extra) > tol {
			continue
		}
		return true, msOf(t - end)
	}
	return false, 0
}

// faultLine is the one line of a fault: "pause:2s@3s on 127.0.0.1:7001
// 3.00s-5.00s: fail-open: admitted 400 of 400, the model 41 (+359, ±2),
// 0 5xx, p99 52ms; back within tolerance 1.2s after".
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

func secText(ms float64) string { return fmt.Sprintf("%.2fs", ms/1000) }

func latText(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.2fs", ms/1000)
	}
	return fmt.Sprintf("%.0fms", ms)
}

func msOf(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// pct is the p-th percentile (nearest rank) of xs, which it sorts.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	i := int(math.Ceil(p/100*float64(len(xs)))) - 1
	i = min(max(i, 0), len(xs)-1)
	return math.Round(xs[i]*1000) / 1000
}

// judgeFaults judges the faults of the run over its arrivals (sorted by
// send time). The model is --expect's; under --expect auto, the reading
// of RateLimit-Policy that fits the run before the first fault best (the
// faults disturb the rest).
func (e *engine) judgeFaults(arrivals []Arrival, policy string, p99 float64) *FaultReport {
	f := e.o.Faults
	in := faultInput{arrivals: arrivals, identities: max(e.o.Identities, 1), startMs: e.startWall.UnixMilli(),
		duration: e.o.Duration, expectOK: e.expected}
	x := e.o.Expect
	if !x.Auto {
		p := x.Params
		in.params, in.model = &p, x.Spec
	} else {
		first := f.Specs[0].At
		if len(e.disruptions) > 0 && !e.disruptions[0].Start.IsZero() {
			first = e.disruptions[0].Start.Sub(e.start)
		}
		n := sort.Search(len(arrivals), func(i int) bool { return arrivals[i].SendNs >= int64(first) })
		j := Judge(*x, JudgeInput{Arrivals: arrivals[:n], Identities: in.identities, StartMs: in.startMs, JitterMs: p99, Policy: policy})
		if j.params != nil {
			in.params, in.model = j.params, specOf(*j.params)
		}
	}
	return judgeFaults(f, e.disruptions, e.start, in)
}

// Check ids of the fault verdict.
const (
	CheckFaultBaseline = "fault:baseline" // the run before the first fault agrees with the model
	CheckFaultPfx      = "fault:"         // + spec: the behaviour is one --during-fault allows
	CheckRecoverPfx    = "recover:"       // + spec: back within tolerance within --recover-within
)

// faultChecks are the checks of the fault verdict; nil without faults.
func (r *Result) faultChecks() []doc.Check {
	fr := r.Faults
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
