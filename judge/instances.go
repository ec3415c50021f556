package judge

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// An Answer is one admitted answer of one identity and the remaining
// quota it reported (RateLimit r, or the legacy remaining): when its
// request was sent and its answer came back.
type Answer struct {
	Sent, Done time.Time
	Remaining  int64
}

// Instances estimates how many independent counters answer one
// identity's requests behind one address: replicas that each keep their
// own quota. One counter hands out each remaining value once per
// admission (a refill in between may repeat one), so among admissions
// decided at once (requests in flight together, a burst) each value of r
// appears once; n counters hand each out n times. And one counter's r
// never rises between two admissions by more than the refill between
// them (perToken: the time one unit of quota takes to come back, 0 when
// unknown). It returns the estimate (1: nothing says otherwise) and the
// evidence in words.
func Instances(rs []Answer, perToken time.Duration) (int, string) {
	if n, ev := riseInstances(rs, perToken); n >= 2 {
		return n, ev
	}
	return burstInstances(rs, perToken)
}

// burstInstances reads the requests in flight together: for each burst
// (overlapping send-to-answer spans), how often each r value above 0
// came back (0 is what a counter saturated by its refill says every
// time); the median multiplicity over those values, when it is more
// than the refill while the burst was in flight could repeat a value,
// divided by that repeat (rounded up) is the counters' number: exact for
// a burst shorter than a unit of refill, a lower bound for a longer one
// (a busy machine answers slowly, and requests in flight together span
// more).
func burstInstances(rs []Answer, perToken time.Duration) (int, string) {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b Answer) int { return a.Sent.Compare(b.Sent) })
	best, bestEv := 1, ""
	for lo := 0; lo < len(rs); {
		hi, end := lo+1, rs[lo].Done
		for hi < len(rs) && !rs[hi].Sent.After(end) {
			if rs[hi].Done.After(end) {
				end = rs[hi].Done
			}
			hi++
		}
		burst := rs[lo:hi]
		lo = hi
		if len(burst) < 6 {
			continue
		}
		// one counter repeats a value only when a unit came back while
		// the burst was in flight
		repeat := 1
		if perToken > 0 {
			repeat += int(end.Sub(burst[0].Sent) / perToken)
		}
		times := map[int64]int{}
		for _, r := range burst {
			if r.Remaining > 0 {
				times[r.Remaining]++
			}
		}
		if len(times) < 2 {
			continue
		}
		var ms []int
		repeated := 0
		for _, n := range times {
			ms = append(ms, n)
			if n > repeat {
				repeated++
			}
		}
		slices.Sort(ms)
		m := ms[len(ms)/2]
		if m <= repeat || repeated < 2 {
			continue
		}
		// n counters hand each value out at most n x repeat times: the
		// count is at least the multiplicity over what one counter may
		// repeat (exact for a burst shorter than a unit of refill)
		n := max(2, (m+repeat-1)/repeat)
		if n > best {
			best = n
			bestEv = fmt.Sprintf("in one burst of %d admitted at once, each remaining value came back about %d times (%s)", len(burst), m, valuesText(times))
			if repeat > 1 {
				bestEv += fmt.Sprintf(", where one counter's refill over the %s the burst was in flight repeats a value at most %d times: at least %d", end.Sub(burst[0].Sent).Round(time.Millisecond), repeat, n)
			}
		}
	}
	return best, bestEv
}

// riseInstances reads admissions one after another: one counter's r
// falls by one per admission unless a unit of quota came back between
// the two, so over a span T the admissions that did not lower r are at
// most the refill of T (T / perToken) and a little for the fractions.
// n counters taking turns keep r level n times as often. The share of
// admissions that did not lower r, against that bound, estimates n.
func riseInstances(rs []Answer, perToken time.Duration) (int, string) {
	if perToken <= 0 || len(rs) < 8 {
		return 1, ""
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b Answer) int { return a.Sent.Compare(b.Sent) })
	level, pairs := 0, 0
	var example string
	for i := 1; i < len(rs); i++ {
		a, b := rs[i-1], rs[i]
		if b.Sent.Before(a.Done) {
			continue // in flight together: decided in either order
		}
		pairs++
		if b.Remaining >= a.Remaining {
			level++
			if example == "" && b.Remaining > a.Remaining {
				example = fmt.Sprintf("r went from %d to %d across one admitted request %s later", a.Remaining, b.Remaining, b.Sent.Sub(a.Sent).Round(time.Millisecond))
			}
		}
	}
	span := rs[len(rs)-1].Done.Sub(rs[0].Sent)
	bound := int(math.Ceil(1.1*float64(span)/float64(perToken))) + 3
	if level <= 2*bound || pairs < 8 {
		return 1, ""
	}
	// The bound is generous, to keep one counter below it; the count
	// divides by the refill itself: n counters taking turns, each kept
	// at its refill, keep r level about n times the refill of the span.
	n := max(int(math.Round(float64(level)*float64(perToken)/float64(span))), 2)
	ev := fmt.Sprintf("%d of %d consecutive admissions did not lower the remaining quota, where one counter's refill over %s allows at most %d", level, pairs, span.Round(time.Millisecond), bound)
	if example != "" {
		ev += "; " + example
	}
	return n, ev
}

// valuesText lists r values and how often each came: "4 x3, 3 x3, 2 x3".
func valuesText(times map[int64]int) string {
	var vs []int64
	for v := range times {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	slices.Reverse(vs)
	var parts []string
	for i, v := range vs {
		if i == 6 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("r=%d x%d", v, times[v]))
	}
	return strings.Join(parts, ", ")
}

// InstancesFinding is the finding in words: "the quota looks kept per
// instance: about 3 independent counters behind this address (...)".
func InstancesFinding(n int, evidence string) string {
	return fmt.Sprintf("%s: about %d independent counters behind this address (%s)", InstancesPrefix, n, evidence)
}

// InstancesPrefix opens every per-instance finding.
const InstancesPrefix = "the quota looks kept per instance"
