package race

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/race/racedoc"
	"github.com/ratelimit-dev/ratelimit/stats"
)

// summarize turns a strategy's trials into its result entry.
func summarize(s strategy, trials []trial, opts Options) Strategy {
	out := Strategy{Name: s.name(), Label: s.label(), AtomicExpected: s.atomic()}
	var expect *judge.Expectation
	if u, ok := s.(*userStrategy); ok {
		out.ScriptFile = u.script.Path
		expect = u.script.Expect
	}
	var all []time.Duration
	for _, tr := range trials {
		admitted, wrote, retries, giveUps, errs := 0, int64(0), 0, 0, 0
		lat := make([]time.Duration, 0, len(tr.outcomes))
		for _, o := range tr.outcomes {
			if o.admitted {
				admitted++
			}
			if o.wrote {
				wrote++
			}
			if o.gaveUp {
				giveUps++
			}
			retries += o.retries
			if o.err != nil {
				errs++
				if out.ErrorSample == "" {
					out.ErrorSample = o.err.Error()
				}
			}
			lat = append(lat, o.latency)
		}
		slices.Sort(lat)
		all = append(all, lat...)
		out.Allowed = append(out.Allowed, admitted)
		out.OverLimit = append(out.OverLimit, max(0, admitted-int(opts.Limit)))
		out.FinalValue = append(out.FinalValue, tr.final)
		var lost *int64
		if tr.final != nil {
			l := max(0, wrote-*tr.final)
			lost = &l
		}
		out.LostUpdates = append(out.LostUpdates, lost)
		out.Retries = append(out.Retries, retries)
		out.GiveUps = append(out.GiveUps, giveUps)
		out.Errors = append(out.Errors, errs)
		out.TrialP50Ms = append(out.TrialP50Ms, millis(stats.Percentile(lat, 50)))
		out.TrialP99Ms = append(out.TrialP99Ms, millis(stats.Percentile(lat, 99)))
		out.WallMs = append(out.WallMs, millis(tr.wall))
		if expect != nil {
			out.Expected = append(out.Expected, judge.Trial(*expect, tr.startMs, trialCalls(tr)))
		}
	}
	slices.Sort(all)
	out.P50Ms = millis(stats.Percentile(all, 50))
	out.P99Ms = millis(stats.Percentile(all, 99))
	out.AllowedMin, out.AllowedMedian, out.AllowedMax = spread(out.Allowed)
	return out
}

// trialCalls are a trial's calls as the judge reads them: a failed call's
// decision is unknown.
func trialCalls(tr trial) []judge.Call {
	calls := make([]judge.Call, len(tr.outcomes))
	for i, o := range tr.outcomes {
		calls[i] = judge.Call{SendNs: int64(o.sent), DoneNs: int64(o.done), Allowed: o.admitted, Unknown: o.err != nil}
	}
	return calls
}

// millis is d in milliseconds at microsecond resolution.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// spread returns the minimum, median and maximum of xs.
func spread(xs []int) (lo int, median float64, hi int) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	sort.Ints(s)
	m := len(s) / 2
	median = float64(s[m])
	if len(s)%2 == 0 {
		median = float64(s[m-1]+s[m]) / 2
	}
	return s[0], median, s[len(s)-1]
}

// setVerdict sets the checks, the verdict and the notes.
func setVerdict(r *Result) {
	r.Checks = Checks(*r)
	for i, s := range r.Strategies {
		if c := &r.Checks[i]; s.Name == User && len(s.Expected) == 0 && s.AllowedMax > int(r.Limit) && !c.Pass {
			c.Message += "; " + racedoc.RefillHint(s, r.Limit)
		}
	}
	for _, s := range r.Strategies {
		calls := r.Concurrency * len(s.Allowed)
		if errs := sum(s.Errors); errs > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d of %d calls failed, e.g. %s", s.Label, errs, calls, s.ErrorSample))
		}
		if s.Name == Watch && sum(s.GiveUps) > 0 && s.AllowedMin < int(r.Limit) && r.Concurrency >= int(r.Limit) {
			r.Notes = append(r.Notes, fmt.Sprintf("%s admitted fewer than the limit because %s gave up after %s; raise --watch-attempts to at least the limit", s.Label, count(sum(s.GiveUps), "request", "requests"), count(r.WatchAttempts, "attempt", "attempts")))
		}
		if s.Name == Naive {
			reproduced := s.AllowedMax > int(r.Limit)
			r.RaceReproduced = &reproduced
			if !reproduced {
				note := fmt.Sprintf("the race was not reproduced at this concurrency: %s admitted at most the limit of %d", s.Label, r.Limit)
				if r.Concurrency <= int(r.Limit) {
					note += fmt.Sprintf("; --concurrency %d cannot exceed it, raise it above the limit", r.Concurrency)
				} else {
					note += "; try a higher --concurrency"
				}
				r.Notes = append(r.Notes, note)
			}
		}
	}
	r.Verdict = doc.Verdict(r.Checks)
}

// plural picks the noun for n: "call" for 1, "calls" otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// count writes n with its noun: "1 call", "2 calls".
func count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + plural(n, one, many)
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}
