package rate

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"time"
)

// Schedule is the constant-arrival-rate plan shared by `load` (when each
// request falls due) and `eval --simulate` (when each virtual call
// arrives): arrival i is due at i*Per/Count after the start, computed from
// the start in integer nanoseconds (never by summing gaps, so there is no
// drift), and the plan holds every arrival due strictly before the
// duration.
//
// The rate's Count may be fractional ("0.5/s", "2.5/s"): it is held as the
// exact fraction num/den with den a power of ten, so arrival i is due at
// floor(i * Per * den / num) nanoseconds, computed in 128 bits.
type Schedule struct {
	num      uint64 // arrivals per step (Count scaled by den)
	step     uint64 // Per * den, in nanoseconds
	duration time.Duration
	planned  int64 // of this schedule (of its segment, when segmented)
	// seg of segs: the schedule holds the arrivals i of the whole plan
	// with i mod segs == seg (segs 0: the whole plan).
	seg, segs int64
	total     int64 // arrivals of the whole plan
}

// NewSchedule validates r and d and returns their schedule. It fails when
// the rate has more than nine decimal places, when Per times that scale
// overflows, or when the plan would hold more than 2^62 arrivals.
func NewSchedule(r Rate, d time.Duration) (Schedule, error) {
	num, den, err := exact(r, d)
	if err != nil {
		return Schedule{}, err
	}
	hi, step := bits.Mul64(uint64(r.Per), den)
	if hi != 0 || step > math.MaxInt64 {
		return Schedule{}, fmt.Errorf("rate %s: period too long to schedule", r)
	}
	s := Schedule{num: num, step: step, duration: d}
	// planned = #{i >= 0 : floor(i*step/num) < d} = #{i : i*step < d*num}
	//         = ceil(d*num / step).
	h, l := bits.Mul64(uint64(d), num)
	if h >= step {
		return Schedule{}, fmt.Errorf("rate %s over %s plans too many arrivals", r, d)
	}
	q, rem := bits.Div64(h, l, step)
	if rem != 0 {
		q++
	}
	if q > 1<<62 {
		return Schedule{}, fmt.Errorf("rate %s over %s plans too many arrivals", r, d)
	}
	s.planned = int64(q)
	s.total = s.planned
	return s, nil
}

// PlannedCount is how many arrivals the schedule of r over d holds,
// ceil(d * Count / Per) for the exact decimal fraction of Count, computed
// in arbitrary precision: it answers for any r and d, even those
// NewSchedule refuses as too large, so a caller can name the number next
// to its ceiling.
func PlannedCount(r Rate, d time.Duration) (*big.Int, error) {
	num, den, err := exact(r, d)
	if err != nil {
		return nil, err
	}
	top := new(big.Int).Mul(big.NewInt(int64(d)), new(big.Int).SetUint64(num))
	step := new(big.Int).Mul(big.NewInt(int64(r.Per)), new(big.Int).SetUint64(den))
	q, m := new(big.Int).QuoRem(top, step, new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q, nil
}

// exact checks r and d and returns Count as num/den.
func exact(r Rate, d time.Duration) (num, den uint64, err error) {
	if r.Per <= 0 || !(r.Count > 0) || math.IsInf(r.Count, 0) {
		return 0, 0, fmt.Errorf("rate %s must be positive", r)
	}
	if d <= 0 {
		return 0, 0, fmt.Errorf("duration %s must be positive", d)
	}
	num, den, ok := fraction(r.Count)
	if !ok {
		return 0, 0, fmt.Errorf("rate %s has too many decimal places; use at most 9 or a longer period such as 1/3s", r)
	}
	return num, den, nil
}

// fraction writes c as num/den with den a power of ten up to 1e9, exactly
// as far as float64 can tell: c*den must be an integer within a relative
// 1e-15 (a few ulps), so a decimal typed with up to nine places is
// recovered exactly and no count is rounded by more than a part in 1e15
// (less than one arrival of the largest plan).
func fraction(c float64) (num, den uint64, ok bool) {
	den = 1
	for range 10 {
		v := c * float64(den)
		if v >= 1<<62 {
			return 0, 0, false
		}
		r := math.Round(v)
		if r >= 1 && math.Abs(v-r) <= v*1e-15 {
			return uint64(r), den, true
		}
		den *= 10
	}
	return 0, 0, false
}

// Segment returns segment k (from 0) of n of the whole plan s: the
// arrivals i with i mod n == k, so that the n segments together hold
// every arrival exactly once and each keeps an even spacing (n times the
// gap, offset by k gaps): k6's execution segments, cut round-robin. Its
// Due, Pace and Expected count the segment's own arrivals (j = 0, 1, ...);
// Global(j) is arrival j's index in the whole plan.
func (s Schedule) Segment(k, n int64) (Schedule, error) {
	if s.segs > 1 {
		return Schedule{}, fmt.Errorf("schedule is already a segment")
	}
	if n < 1 || k < 0 || k >= n {
		return Schedule{}, fmt.Errorf("segment %d of %d: want 0 <= index < count", k, n)
	}
	seg := s
	seg.seg, seg.segs = k, n
	seg.planned = segCount(s.total, k, n)
	return seg, nil
}

// segCount is how many i in [0, total) have i mod n == k.
func segCount(total, k, n int64) int64 {
	if total <= k {
		return 0
	}
	return (total-k-1)/n + 1
}

// Global is the index in the whole plan of the schedule's arrival j.
func (s Schedule) Global(j int64) int64 {
	if s.segs <= 1 {
		return j
	}
	return s.seg + j*s.segs
}

// Segmented reports the segment (index, count) the schedule is, or
// (0, 1) for a whole plan.
func (s Schedule) Segmented() (index, count int64) {
	if s.segs <= 1 {
		return 0, 1
	}
	return s.seg, s.segs
}

// Total is the number of arrivals of the whole plan (Planned for a
// schedule that is not a segment).
func (s Schedule) Total() int64 { return s.total }

// Planned is the number of arrivals due before the end.
func (s Schedule) Planned() int64 { return s.planned }

// Duration is the length of the plan.
func (s Schedule) Duration() time.Duration { return s.duration }

// Due returns when arrival i falls due, as an offset from the start. It
// is defined for 0 <= i < Planned(); other i return false.
func (s Schedule) Due(i int64) (time.Duration, bool) {
	if i < 0 || i >= s.planned {
		return 0, false
	}
	i = s.Global(i)
	hi, lo := bits.Mul64(uint64(i), s.step)
	// i < planned guarantees i*step < d*num, so the quotient is below d and
	// hi < num: Div64 cannot overflow.
	q, _ := bits.Div64(hi, lo, s.num)
	return time.Duration(q), true
}

// Pace tells a dispatcher that has already released `started` arrivals and
// is at `elapsed` since the start how long to wait for the next one. stop is
// true when every planned arrival has been released. A negative or zero
// wait means the next arrival is already due (late by -wait).
func (s Schedule) Pace(elapsed time.Duration, started int64) (wait time.Duration, stop bool) {
	due, ok := s.Due(started)
	if !ok {
		return 0, true
	}
	return due - elapsed, false
}

// Expected is how many arrivals are due strictly before elapsed (capped at
// Planned): the count a dispatcher that kept up would have released by then.
func (s Schedule) Expected(elapsed time.Duration) int64 {
	if elapsed <= 0 {
		return 0
	}
	if elapsed >= s.duration {
		return s.planned
	}
	h, l := bits.Mul64(uint64(elapsed), s.num)
	q, rem := bits.Div64(h, l, s.step) // h < step because elapsed < duration
	if rem != 0 {
		q++
	}
	if s.segs > 1 {
		return segCount(int64(q), s.seg, s.segs)
	}
	return int64(q)
}
