package tally

import (
	"slices"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
)

// Metrics are the run's numbers thresholds are judged on.
func (r *Result) Metrics() judge.Metrics {
	l := r.LatencyFromDue
	return judge.Metrics{
		Planned: r.Planned, Dropped: r.Dropped, Completed: r.Completed, Failed: r.Failed,
		Responses: r.Responses, Allowed: r.Allowed, Refused: r.RateLimited, ResponsesPerS: r.ResponsesPerS,
		LatencyCount: l.Count, P50: l.P50, P90: l.P90, P95: l.P95, P99: l.P99, Min: l.Min, Mean: l.Mean, Max: l.Max,
	}
}

// JudgeThresholds judges every threshold on the finished run, in order.
func (r *Result) JudgeThresholds(ts []judge.Threshold) {
	r.Thresholds = []judge.ThresholdCheck{}
	m := r.Metrics()
	for _, t := range ts {
		r.Thresholds = append(r.Thresholds, t.Check(m))
	}
}

// Shares derives the failed and refused percentages and the response
// throughput from the counts and the elapsed time.
func (r *Result) Shares() {
	r.FailedPct, r.RateLimitedPct, r.ResponsesPerS = 0, 0, 0
	if r.Completed > 0 {
		r.FailedPct = 100 * float64(r.Failed) / float64(r.Completed)
	}
	if r.Responses > 0 {
		r.RateLimitedPct = 100 * float64(r.RateLimited) / float64(r.Responses)
	}
	if r.ElapsedS > 0 {
		r.ResponsesPerS = float64(r.Responses) / r.ElapsedS
	}
}

// Settle sets the verdict and its messages from the check list, the one
// place they are decided: a check that counts and failed fails the run
// (its message joins the verdict's); an interrupted run has no verdict.
// A target with no sign of a limiter is a note, or, when a model was
// given to judge it, a failure.
func (r *Result) Settle() {
	r.Checks = nil
	r.Notes = slices.DeleteFunc(r.Notes, func(n string) bool { return n == NoLimiterNote || n == NoLimiterNoteUnrecorded })
	checks := r.CheckList()
	r.Verdict = doc.Verdict(checks)
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
		if strings.HasPrefix(c.ID, CheckThresholdPfx) || c.ID == CheckExpect || c.ID == CheckLimiterSeen {
			out = append(out, c.Message)
		} else {
			out = append(out, c.ID+": "+c.Message)
		}
	}
	return out
}

func (f *FieldStat) add(present, valid int64, example string) {
	f.Present += present
	f.Valid += valid
	if f.Example == "" {
		f.Example = example
	}
}
