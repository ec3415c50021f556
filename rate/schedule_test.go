package rate

import (
	"math"
	"testing"
	"time"
)

func TestSchedulePlanned(t *testing.T) {
	tests := []struct {
		rate string
		dur  time.Duration
		want int64
	}{
		{"3/s", time.Second, 3},                     // 0, 1/3, 2/3
		{"7/s", 1500 * time.Millisecond, 11},        // 0 .. 10/7 = 1.4286 s
		{"20/s", 30 * time.Second, 600},             // the example
		{"5/100ms", time.Second, 50},                // every 20 ms
		{"5/100ms", 990 * time.Millisecond, 50},     // 49*20 = 980 ms < 990
		{"5/100ms", 980 * time.Millisecond, 49},     // 980 ms is not before the end
		{"300/m", 10 * time.Second, 50},             // 5/s
		{"1000/h", time.Hour, 1000},                 // 3.6 s apart
		{"0.5/s", 3 * time.Second, 2},               // 0, 2 s
		{"2.5/s", time.Second, 3},                   // 0, 0.4, 0.8
		{"1/s", time.Nanosecond, 1},                 // only i = 0
		{"3/s", 1000*time.Millisecond + 1, 4},       // 1 s is before 1 s + 1 ns
		{"1000000/s", 3 * time.Second, 3_000_000},   // 1 µs apart
		{"3/s", 333333334 * time.Nanosecond, 2},     // due(1) = 333333333 ns < end
		{"3/s", 333333333 * time.Nanosecond, 1},     // due(1) is the end itself
		{"1/ns", time.Millisecond, 1_000_000},       // the finest rate
		{"0.000000001/s", 1000 * time.Second, 1},    // one in ~31.7 years
		{"10/2s", 10 * time.Second, 50},             // 200 ms apart
		{"1000000000/h", time.Hour, 1_000_000_000},  // large count, long period
		{"7/s", 24 * 365 * time.Hour, 7 * 31536000}, // a year without overflow
	}
	for _, tt := range tests {
		t.Run(tt.rate+"/"+tt.dur.String(), func(t *testing.T) {
			s, err := NewSchedule(MustParse(tt.rate), tt.dur)
			if err != nil {
				t.Fatalf("NewSchedule: %v", err)
			}
			if got := s.Planned(); got != tt.want {
				t.Errorf("Planned() = %d, want %d", got, tt.want)
			}
			// Cross-check against the definition: the last planned
			// iteration is due before the end and the next is not.
			if last, ok := s.Due(s.Planned() - 1); !ok || last >= tt.dur {
				t.Errorf("Due(planned-1) = %v, %v; want < %v", last, ok, tt.dur)
			}
			if _, ok := s.Due(s.Planned()); ok {
				t.Errorf("Due(planned) ok; want false")
			}
			if got := s.Expected(tt.dur); got != tt.want {
				t.Errorf("Expected(duration) = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestScheduleDue(t *testing.T) {
	tests := []struct {
		rate string
		dur  time.Duration
		want []time.Duration
	}{
		{"3/s", time.Second, []time.Duration{0, 333333333, 666666666}},
		{"7/s", 1500 * time.Millisecond, []time.Duration{
			0, 142857142, 285714285, 428571428, 571428571, 714285714,
			857142857, 1000000000, 1142857142, 1285714285, 1428571428,
		}},
		{"5/100ms", 100 * time.Millisecond, []time.Duration{0, 20e6, 40e6, 60e6, 80e6}},
		{"2.5/s", time.Second, []time.Duration{0, 400e6, 800e6}},
	}
	for _, tt := range tests {
		t.Run(tt.rate, func(t *testing.T) {
			s, err := NewSchedule(MustParse(tt.rate), tt.dur)
			if err != nil {
				t.Fatalf("NewSchedule: %v", err)
			}
			if s.Planned() != int64(len(tt.want)) {
				t.Fatalf("Planned() = %d, want %d", s.Planned(), len(tt.want))
			}
			for i, want := range tt.want {
				if got, _ := s.Due(int64(i)); got != want {
					t.Errorf("Due(%d) = %d, want %d", i, got, want)
				}
			}
		})
	}
}

// No drift: the 600th arrival of 20/s is exactly at 29.95 s, and the due
// times of a long run stay within a nanosecond of i/rate.
func TestScheduleNoDrift(t *testing.T) {
	s, err := NewSchedule(MustParse("3/s"), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int64{1, 2, 3, 1000, 99_999, 259_199} {
		got, _ := s.Due(i)
		exact := float64(i) * 1e9 / 3
		if d := float64(got) - exact; d > 0 || d <= -1 {
			t.Errorf("Due(%d) = %d, want floor(%f)", i, got, exact)
		}
	}
	s, _ = NewSchedule(MustParse("20/s"), 30*time.Second)
	if got, _ := s.Due(599); got != 29950*time.Millisecond {
		t.Errorf("Due(599) = %v, want 29.95s", got)
	}
}

func TestSchedulePace(t *testing.T) {
	s, err := NewSchedule(MustParse("10/s"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		elapsed time.Duration
		started int64
		wait    time.Duration
		stop    bool
	}{
		{0, 0, 0, false},
		{0, 1, 100 * time.Millisecond, false},
		{30 * time.Millisecond, 1, 70 * time.Millisecond, false},
		{250 * time.Millisecond, 2, -50 * time.Millisecond, false}, // late by 50 ms
		{990 * time.Millisecond, 9, -90 * time.Millisecond, false},
		{990 * time.Millisecond, 10, 0, true},
		{5 * time.Second, 10, 0, true},
	}
	for _, tt := range tests {
		wait, stop := s.Pace(tt.elapsed, tt.started)
		if wait != tt.wait || stop != tt.stop {
			t.Errorf("Pace(%v, %d) = %v, %v; want %v, %v", tt.elapsed, tt.started, wait, stop, tt.wait, tt.stop)
		}
	}
}

func TestScheduleExpected(t *testing.T) {
	s, err := NewSchedule(MustParse("7/s"), 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		elapsed time.Duration
		want    int64
	}{
		{-time.Second, 0},
		{0, 0},               // nothing is due strictly before 0
		{1, 1},               // i=0 is due at 0 < 1 ns
		{142857142, 1},       // due(1) is not before itself
		{142857143, 2},       //
		{time.Second, 7},     // 0 .. 6/7
		{time.Second + 1, 8}, // 7/7 = 1 s exactly
		{1500 * time.Millisecond, 11},
		{time.Hour, 11},
	}
	for _, tt := range tests {
		if got := s.Expected(tt.elapsed); got != tt.want {
			t.Errorf("Expected(%v) = %d, want %d", tt.elapsed, got, tt.want)
		}
	}
}

func TestScheduleRejects(t *testing.T) {
	tests := []struct {
		name string
		r    Rate
		d    time.Duration
	}{
		{"zero rate", Rate{}, time.Second},
		{"negative count", Rate{Count: -1, Per: time.Second}, time.Second},
		{"NaN count", Rate{Count: math.NaN(), Per: time.Second}, time.Second},
		{"infinite count", Rate{Count: math.Inf(1), Per: time.Second}, time.Second},
		{"zero duration", Rate{Count: 1, Per: time.Second}, 0},
		{"negative duration", Rate{Count: 1, Per: time.Second}, -time.Second},
		{"a third", Rate{Count: 1.0 / 3, Per: time.Second}, time.Second},
		{"period overflows with scale", Rate{Count: 0.000000001, Per: 1 << 40}, time.Second},
		{"too many iterations", Rate{Count: 1e18, Per: time.Nanosecond}, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := NewSchedule(tt.r, tt.d); err == nil {
				t.Errorf("NewSchedule(%v, %v) = %+v, want error", tt.r, tt.d, s)
			}
		})
	}
}

func FuzzSchedule(f *testing.F) {
	f.Add(uint64(3), uint8(0), int64(time.Second), int64(time.Second))
	f.Add(uint64(7), uint8(0), int64(time.Second), int64(1500*time.Millisecond))
	f.Add(uint64(25), uint8(1), int64(time.Second), int64(time.Second))
	f.Fuzz(func(t *testing.T, count uint64, scale uint8, per, dur int64) {
		if count == 0 || count > 1e12 || per <= 0 || dur <= 0 {
			return
		}
		c := float64(count) / math.Pow10(int(scale%6))
		s, err := NewSchedule(Rate{Count: c, Per: time.Duration(per)}, time.Duration(dur))
		if err != nil {
			return
		}
		n := s.Planned()
		if n < 1 {
			t.Fatalf("Planned() = %d, want >= 1 (i=0 is due at 0)", n)
		}
		last, ok := s.Due(n - 1)
		if !ok || last >= time.Duration(dur) || last < 0 {
			t.Fatalf("Due(%d) = %v, %v; want in [0, %v)", n-1, last, ok, time.Duration(dur))
		}
		if n > 1 {
			prev, _ := s.Due(n - 2)
			if prev > last {
				t.Fatalf("Due not monotonic: %v > %v", prev, last)
			}
		}
	})
}

// The three plans issue 15 names: load and eval --simulate share this
// schedule, so these due times are what both plan. Every due time is given
// by its closed form i*Per/Count, floored to the nanosecond.
func TestScheduleSharedPlans(t *testing.T) {
	tests := []struct {
		rate    string
		dur     time.Duration
		planned int64
		due     func(i int64) time.Duration // exact floor(i*Per/Count)
		lastMs  int64
	}{
		{"20/s", 30 * time.Second, 600, func(i int64) time.Duration { return time.Duration(i) * 50 * time.Millisecond }, 29950},
		{"7/s", 1500 * time.Millisecond, 11, func(i int64) time.Duration { return time.Duration(i * 1e9 / 7) }, 1428},
		{"2.5/s", 13 * time.Second, 33, func(i int64) time.Duration { return time.Duration(i) * 400 * time.Millisecond }, 12800},
	}
	for _, tt := range tests {
		t.Run(tt.rate, func(t *testing.T) {
			s, err := NewSchedule(MustParse(tt.rate), tt.dur)
			if err != nil {
				t.Fatalf("NewSchedule(%s, %s): %v", tt.rate, tt.dur, err)
			}
			if s.Planned() != tt.planned {
				t.Fatalf("Planned() = %d, want %d", s.Planned(), tt.planned)
			}
			for i := range tt.planned {
				if got, _ := s.Due(i); got != tt.due(i) {
					t.Errorf("Due(%d) = %d, want %d", i, got, tt.due(i))
				}
			}
			if last, _ := s.Due(tt.planned - 1); last.Milliseconds() != tt.lastMs {
				t.Errorf("last due = %v, want %d ms", last, tt.lastMs)
			}
			n, err := PlannedCount(MustParse(tt.rate), tt.dur)
			if err != nil || n.Int64() != tt.planned {
				t.Errorf("PlannedCount = %v, %v; want %d", n, err, tt.planned)
			}
		})
	}
}

// PlannedCount answers exactly where NewSchedule would overflow, and
// refuses what NewSchedule refuses for the rate itself.
func TestPlannedCount(t *testing.T) {
	n, err := PlannedCount(Rate{Count: 1e18, Per: time.Nanosecond}, time.Duration(math.MaxInt64))
	if err != nil || n.String() != "9223372036854775807000000000000000000" {
		t.Errorf("PlannedCount(1e18/ns, max) = %v, %v", n, err)
	}
	for _, r := range []Rate{{}, {Count: -1, Per: time.Second}, {Count: 1.0 / 3, Per: time.Second}} {
		if n, err := PlannedCount(r, time.Second); err == nil {
			t.Errorf("PlannedCount(%v) = %v, want an error", r, n)
		}
	}
	if n, err := PlannedCount(MustParse("1/s"), 0); err == nil {
		t.Errorf("PlannedCount(1/s, 0) = %v, want an error", n)
	}
}

// BenchmarkScheduleDue measures the due-time arithmetic per arrival.
func BenchmarkScheduleDue(b *testing.B) {
	s, err := NewSchedule(Rate{Count: 7, Per: time.Second}, 1000*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	var sink time.Duration
	for i := 0; b.Loop(); i++ {
		d, _ := s.Due(int64(i) % s.Planned())
		sink += d
	}
	_ = sink
}

// TestSegmentsPartitionThePlan: the n segments of a plan hold every
// arrival exactly once, at the whole plan's due times, each evenly spaced,
// and each segment's Expected counts its own arrivals due before a time.
func TestSegmentsPartitionThePlan(t *testing.T) {
	for _, c := range []struct {
		rate string
		d    time.Duration
		n    int64
	}{{"20/s", 30 * time.Second, 4}, {"7/s", 3 * time.Second, 3}, {"2.5/s", 2 * time.Second, 6}, {"3/s", time.Second, 5}} {
		whole, err := NewSchedule(MustParse(c.rate), c.d)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]int, whole.Planned())
		var sum int64
		for k := range c.n {
			seg, err := whole.Segment(k, c.n)
			if err != nil {
				t.Fatal(err)
			}
			sum += seg.Planned()
			for j := range seg.Planned() {
				i := seg.Global(j)
				seen[i]++
				got, _ := seg.Due(j)
				want, _ := whole.Due(i)
				if got != want {
					t.Fatalf("%s/%d seg %d: arrival %d due %s, the whole plan's %d at %s", c.rate, c.n, k, j, got, i, want)
				}
				// Expected just after a due time counts it and those before
				if e := seg.Expected(got + 1); e != j+1 {
					t.Fatalf("%s seg %d: Expected(%s+1ns) = %d, want %d", c.rate, k, got, e, j+1)
				}
			}
			if _, ok := seg.Due(seg.Planned()); ok {
				t.Errorf("seg %d has an arrival past its plan", k)
			}
		}
		if sum != whole.Planned() {
			t.Errorf("%s/%d: segments plan %d, the whole %d", c.rate, c.n, sum, whole.Planned())
		}
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("%s/%d: arrival %d in %d segments", c.rate, c.n, i, n)
			}
		}
	}
	// 20/s in 4 segments: 5/s each, offset by 50 ms
	whole, _ := NewSchedule(MustParse("20/s"), time.Second)
	for k := range int64(4) {
		seg, _ := whole.Segment(k, 4)
		d0, _ := seg.Due(0)
		d1, _ := seg.Due(1)
		if d0 != time.Duration(k)*50*time.Millisecond || d1-d0 != 200*time.Millisecond || seg.Planned() != 5 {
			t.Errorf("segment %d: first due %s, gap %s, planned %d", k, d0, d1-d0, seg.Planned())
		}
	}
	if _, err := whole.Segment(4, 4); err == nil {
		t.Error("segment 4 of 4 accepted")
	}
}
