package failover

import (
	"math"
	"sort"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/stats"
)

// maxLookback bounds how many of the old primary's last answers lostCalls
// considers lost.
const maxLookback = 5000

// answered returns the calls a primary answered, in the order the model
// replays them: by now_ms, then by sequence.
func answered(calls []call) []call {
	var out []call
	for _, c := range calls {
		if c.ok {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].nowMs != out[j].nowMs {
			return out[i].nowMs < out[j].nowMs
		}
		return out[i].seq < out[j].seq
	})
	return out
}

// allowedBy reports whether the client let c through: the script allowed
// it and, with WAIT, the replicas asked for confirmed its write.
func allowedBy(c call, wait int) bool {
	return c.d.Allowed && (wait == 0 || c.acks >= int64(wait))
}

func same(m model.Decision, d limiter.Decision) bool {
	return m.Allowed == d.Allowed && m.Remaining == d.Remaining && m.RetryMs == d.RetryMs && m.ResetMs == d.ResetMs
}

// lostCalls reads back from the new primary which answers of the old one
// it never received. The new primary's state is the old primary's after
// some prefix of the old primary's answers (what was replicated before the
// promotion), changed by its own decisions since. Every answer the new
// primary gave depends on that state, so the replay of the old primary's
// first k answers, then the new primary's, through the model reproduces
// the new primary's answers exactly for the right k. lostCalls tries k
// from all of them down and returns the old primary's answers after the
// largest k that explains every answer of the new primary (exact), or,
// when none does, after the k that explains the most (not exact). Lost
// writes that changed nothing the new primary could show (refused calls;
// writes the refill would have made up for before its first answer, the
// bucket being full either way) are not counted: what is returned is
// what the limiter forgot.
// ok must be answered(calls).
func lostCalls(ok []call, lim *limiter.Limiter, oldP, newP string) ([]call, bool) {
	var olds, news []call
	for _, c := range ok {
		switch c.node {
		case oldP:
			olds = append(olds, c)
		case newP:
			news = append(news, c)
		}
	}
	if len(news) == 0 {
		return nil, false
	}
	cost := lim.Params().Cost
	bestK, bestMiss := len(olds), len(news)+1
	for k := len(olds); k >= max(0, len(olds)-maxLookback); k-- {
		m := lim.Model()
		for _, c := range olds[:k] {
			m.Allow(c.nowMs, cost)
		}
		miss := 0
		for _, c := range news {
			if !same(m.Allow(c.nowMs, cost), c.d) {
				if miss++; miss >= bestMiss {
					break
				}
			}
		}
		if miss == 0 {
			return olds[k:], true
		}
		if miss < bestMiss {
			bestK, bestMiss = k, miss
		}
	}
	return olds[bestK:], false
}

// analyze fills a trial's counts from its calls.
func analyze(t *Trial, calls []call, lim *limiter.Limiter, wait int, promoted time.Time) {
	ok := answered(calls)
	t.Decisions = len(ok)
	m := lim.Model()
	cost := lim.Params().Cost
	var lat []float64
	for _, c := range ok {
		if allowedBy(c, wait) {
			t.Allowed++
		} else if c.d.Allowed {
			t.NotDurable++
		}
		if m.Allow(c.nowMs, cost).Allowed {
			t.ModelAllowed++
		}
		lat = append(lat, ms(c.done.Sub(c.sent)))
	}
	t.ExtraAllowed = t.Allowed - t.ModelAllowed
	lost, exact := lostCalls(ok, lim, t.OldPrimary, t.NewPrimary)
	t.LostDecisions, t.LostExact = len(lost), exact
	for _, c := range lost {
		if allowedBy(c, wait) {
			t.LostWrites++
		}
	}
	sort.Float64s(lat)
	t.P50Ms, t.P99Ms = stats.Percentile(lat, 50), stats.Percentile(lat, 99)
	if len(lat) > 0 {
		t.MaxMs = lat[len(lat)-1]
	}

	classes := map[redisconn.Class]int{}
	actions := map[string]int{}
	var lastOld, firstNew, firstErr time.Time
	for _, c := range calls {
		if !c.ok {
			t.Failed++
		}
		for _, cls := range c.errs {
			classes[cls]++
		}
		for a, n := range c.recoveries {
			actions[a] += n
		}
		if !c.firstErr.IsZero() && (firstErr.IsZero() || c.firstErr.Before(firstErr)) {
			firstErr = c.firstErr
			if c.firstErrMsg != "" {
				t.ErrorSample = secret.Redact(c.firstErrMsg)
			}
		}
		switch {
		case c.ok && c.node == t.OldPrimary && c.done.After(lastOld):
			lastOld = c.done
		case c.ok && c.node == t.NewPrimary && (firstNew.IsZero() || c.done.Before(firstNew)):
			firstNew = c.done
		}
	}
	t.Errors = []ErrorCount{}
	for cls, n := range classes {
		t.Errors = append(t.Errors, ErrorCount{Class: cls.String(), Count: n})
	}
	sort.Slice(t.Errors, func(i, j int) bool { return t.Errors[i].Class < t.Errors[j].Class })
	t.Recoveries = []Recovery{}
	for a, n := range actions {
		t.Recoveries = append(t.Recoveries, Recovery{Action: a, Count: n})
	}
	sort.Slice(t.Recoveries, func(i, j int) bool { return t.Recoveries[i].Action < t.Recoveries[j].Action })
	if !lastOld.IsZero() && !promoted.IsZero() && lastOld.After(promoted) {
		t.StalePrimaryMs = ms(lastOld.Sub(promoted))
	}
	if !lastOld.IsZero() && !firstNew.IsZero() && firstNew.After(lastOld) {
		t.UnavailableMs = ms(firstNew.Sub(lastOld))
	}
	if !firstErr.IsZero() && !firstNew.IsZero() && firstNew.After(firstErr) {
		t.RecoveryMs = ms(firstNew.Sub(firstErr))
	}
}

// ms is d in float milliseconds with µs resolution.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// spread is the minimum, median and maximum of xs (zero when empty).
func spread(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Stats{Min: s[0], Median: med, Max: s[n-1]}
}

// summarize fills a variant's statistics from its trials.
func summarize(v *Variant) {
	var extra, lost, unav, p50, p99 []float64
	for _, t := range v.Trials {
		extra = append(extra, float64(t.ExtraAllowed))
		lost = append(lost, float64(t.LostWrites))
		unav = append(unav, t.UnavailableMs)
		p50 = append(p50, t.P50Ms)
		p99 = append(p99, t.P99Ms)
	}
	v.ExtraAllowed, v.LostWrites, v.UnavailableMs = spread(extra), spread(lost), spread(unav)
	v.P50Ms, v.P99Ms = spread(p50), spread(p99)
}
