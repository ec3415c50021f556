package tally

import (
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

func (f *FieldStat) add(present, valid int64, example string) {
	f.Present += present
	f.Valid += valid
	if f.Example == "" {
		f.Example = example
	}
}
