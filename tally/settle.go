package tally

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
)

// LatenessWarn is the scheduling lateness p99 above which the generator is
// reported as behind even when nothing was dropped.
const LatenessWarn = 10 * time.Millisecond

// Cause is why the generator fell behind, as a field a renderer reads
// (never a search of the reasons' words).
type Cause string

// The causes of a generator that fell behind.
const (
	// CauseNoVU: iterations were dropped because every VU was busy when
	// they fell due (load's --max-vus, k6's maxVUs). With a slow target
	// (Result.TargetSlow) it is the target's latency, not the generator.
	CauseNoVU Cause = "no_vu"
	// CauseLate: iterations were dropped because the generator was too
	// late to start them (a starved CPU).
	CauseLate Cause = "late"
	// CauseLateness: the scheduling lateness p99 is above LatenessWarn.
	CauseLateness Cause = "lateness"
)

// Judging is what a run's producer (load's engine, a recording, a merge)
// hands to Settle besides the counts already in the Result: what to judge
// the finished run against and what was judged while it ran.
type Judging struct {
	// Thresholds are judged on the finished run, in order.
	Thresholds []judge.Threshold
	// Abort names the threshold that stopped the run (--abort-on-fail);
	// nil when none did. It applies to an aborted run only.
	Abort *Abort
	// Expect is the verdict on the admitted count; nil when not judged
	// (no model, an interrupted run, a segment whose merge judges it).
	Expect *judge.Judged
	// Faults is the verdict on the injected faults; nil without.
	Faults *judge.FaultReport
	// DropLate is how late an iteration may start before the generator
	// drops it (load's MaxLateness), named in the reason of CauseLate.
	DropLate time.Duration
	// Generator is how the generator did when the counts cannot say it: a
	// merge gives its segments' (a segment's lateness is lost in the
	// merged histogram). Nil: decided from the counts (Generator).
	Generator *GenStat
}

// Abort is the threshold that stopped the run and why.
type Abort struct {
	Index int // in Judging.Thresholds
	Why   string
}

// Settle decides the run from its counts and j, the one sequence every
// producer goes through: how the generator did, the thresholds (the one
// that stopped the run failed, whatever the counts of what ran say), the
// expectation, the faults, then the checks and the verdict read from them
// (settle).
func (r *Result) Settle(j Judging) {
	if j.Generator != nil {
		r.Generator = *j.Generator
	} else {
		r.Generator = r.generator(j.DropLate)
	}
	r.JudgeThresholds(j.Thresholds)
	if a := j.Abort; a != nil && r.Aborted && a.Index >= 0 && a.Index < len(r.Thresholds) {
		c := &r.Thresholds[a.Index]
		r.AbortReason = a.Why
		c.Aborted, c.Pass = true, false
		c.Message = fmt.Sprintf("threshold %s: %s; stopped the run (%s)", c.ID, c.Actual, a.Why)
	}
	r.Expect = j.Expect
	r.Faults = j.Faults
	r.settle()
}

// generator decides from the counts whether the generator, not the
// target, fell behind, with a cause and a reason for each sign: drops for
// want of a VU, drops for lateness, a lateness p99 above LatenessWarn. A
// recording's words name the tool that dropped and its settings.
func (r *Result) generator(dropLate time.Duration) GenStat {
	var g GenStat
	add := func(c Cause, why string) {
		g.Causes = append(g.Causes, c)
		g.Reasons = append(g.Reasons, why)
	}
	if r.DroppedNoVU > 0 {
		why := fmt.Sprintf("%d iterations dropped: all %d VUs were busy when they fell due (raise --max-vus; the target's p99 is %.1f ms)",
			r.DroppedNoVU, r.VUs.Max, r.Latency.P99)
		if r.Recorded() {
			why = fmt.Sprintf("%s dropped %d iterations: no VU was free when they fell due (raise preAllocatedVUs or maxVUs of the scenario; the target's p99 is %.1f ms)",
				r.Source, r.DroppedNoVU, r.Latency.P99)
		}
		add(CauseNoVU, why)
	}
	if r.DroppedLate > 0 {
		add(CauseLate, fmt.Sprintf("%d iterations dropped: the generator was more than %s late to start them (CPU starved?)", r.DroppedLate, dropLate))
	}
	if p := r.Lateness.P99; p > float64(LatenessWarn/time.Millisecond) {
		add(CauseLateness, fmt.Sprintf("scheduling lateness p99 %.1f ms is above %s", p, LatenessWarn))
	}
	g.FellBehind = len(g.Causes) > 0
	return g
}

// GeneratorCauses are why the generator fell behind (none when it kept
// up). A document written before causes were kept has them read from its
// counts; a generator said to be behind with none of them there is
// behind for a cause the document does not name.
func (r *Result) GeneratorCauses() []Cause {
	g := r.Generator
	if !g.FellBehind {
		return nil
	}
	if len(g.Causes) > 0 {
		return g.Causes
	}
	var cs []Cause
	if r.DroppedNoVU > 0 {
		cs = append(cs, CauseNoVU)
	}
	if r.DroppedLate > 0 {
		cs = append(cs, CauseLate)
	}
	if r.Lateness.P99 > float64(LatenessWarn/time.Millisecond) || len(cs) == 0 {
		cs = append(cs, CauseLateness)
	}
	return cs
}

// GeneratorBehind reports whether the generator itself fell behind:
// iterations dropped for lateness, a lateness above LatenessWarn, or
// drops for want of a VU while the target was not slow (TargetSlow: then
// the target's latency, not the generator, held the rate back).
func (r *Result) GeneratorBehind() bool {
	for _, c := range r.GeneratorCauses() {
		if c != CauseNoVU || !r.TargetSlow() {
			return true
		}
	}
	return false
}

// mergeSegment adds segment d's generator to a merge's: behind when any
// segment was, with every segment's causes once (read from its counts
// when its document predates causes) and its reasons named by segment (at
// most MaxReasons).
func (g *GenStat) mergeSegment(index int, d *Result) {
	if !d.Generator.FellBehind {
		return
	}
	g.FellBehind = true
	for _, c := range d.GeneratorCauses() {
		if !slices.Contains(g.Causes, c) {
			g.Causes = append(g.Causes, c)
		}
	}
	for _, why := range d.Generator.Reasons {
		if len(g.Reasons) < MaxReasons {
			g.Reasons = append(g.Reasons, fmt.Sprintf("segment %d: %s", index, why))
		}
	}
}

// settle sets the verdict and its messages from the check list, the one
// place they are decided: a check that counts and failed fails the run
// (its message joins the verdict's); an interrupted run has no verdict.
// A target with no sign of a limiter is a note, or, when a model was
// given to judge it, a failure.
func (r *Result) settle() {
	r.Checks = nil
	r.Verdict = ""
	r.Notes = slices.DeleteFunc(r.Notes, func(n string) bool { return n == NoLimiterNote || n == NoLimiterNoteUnrecorded })
	checks := r.CheckList()
	r.Verdict = doc.VerdictOf(checks)
	r.VerdictMessages = verdictMessages(checks)
	for _, c := range checks {
		if c.ID == CheckLimiterSeen && !c.Pass && c.Warning {
			r.Notes = append(r.Notes, c.Message)
		}
	}
	if r.Interrupted && (r.Segment == nil || r.Segment.Index >= 0) {
		// a merge of an interrupted segment is not itself interrupted:
		// its segments check fails
		r.Verdict = "interrupted"
	}
}

// verdictMessages are the messages of the failed checks that count, but
// "completed" (an interrupted run has no verdict, not a failure): the
// ones that say what they are about as they are (thresholds, the
// expectation, limiter-seen), the others prefixed with their id (a
// pipeline's log then names the check that failed).
func verdictMessages(checks []doc.Check) []string {
	var out []string
	for _, c := range checks {
		if !c.Counts() || c.Pass || c.ID == CheckCompleted {
			continue
		}
		// the checks whose message names what it is about stand alone
		if strings.HasPrefix(c.ID, CheckThresholdPfx) || c.ID == CheckExpect || c.ID == CheckLimiterSeen || c.ID == doc.CheckDecided {
			out = append(out, c.Message)
		} else {
			out = append(out, c.ID+": "+c.Message)
		}
	}
	return out
}
