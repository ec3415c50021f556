package load

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/rate"
)

// fakeClock is virtual time: Sleep moves it forward by the wait plus
// oversleep (a real timer wakes a little late) and never blocks. When
// cancelAt > 0, the cancelAt-th Sleep cancels the run instead.
type fakeClock struct {
	now       time.Time
	oversleep time.Duration
	sleeps    []time.Duration
	cancelAt  int
	cancel    context.CancelFunc
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) bool {
	c.sleeps = append(c.sleeps, d)
	if len(c.sleeps) == c.cancelAt {
		c.cancel()
	}
	if ctx.Err() != nil {
		return false
	}
	c.now = c.now.Add(d + c.oversleep)
	return true
}

// handed is one iteration the dispatcher released: when it was due, how
// late, and the virtual time since the start when it was released.
type handed struct {
	i         int64
	due, late time.Duration
	at        time.Duration
}

// dispatchRun drives a dispatcher over r for d on clock; hand may move the
// clock (a slow hand-off, a stalled generator) or refuse (no VU).
func dispatchRun(t *testing.T, ctx context.Context, r string, d time.Duration, clock *fakeClock, hand func(i int64) bool) (dispatchCounts, []handed, int64) {
	t.Helper()
	s, err := rate.NewSchedule(rate.MustParse(r), d)
	if err != nil {
		t.Fatalf("NewSchedule(%s, %s): %v", r, d, err)
	}
	start := clock.now
	var got []handed
	var dropped int64
	dp := dispatcher{sched: s, clock: clock, start: start,
		hand: func(i int64, due, late time.Duration) bool {
			got = append(got, handed{i: i, due: due, late: late, at: clock.now.Sub(start)})
			return hand == nil || hand(i)
		},
		dropped: func(n int64) { dropped += n },
	}
	return dp.run(ctx), got, dropped
}

// With a clock that wakes on time, every iteration is released exactly at
// its due time, in order, late by nothing, and the waits between them are
// the schedule's gaps: for the plans eval --simulate shares (rate tests
// their due times), and a rate of 3/s whose gaps alternate.
func TestDispatcherReleasesOnDue(t *testing.T) {
	tests := []struct {
		rate string
		dur  time.Duration
		n    int64
	}{
		{"20/s", 30 * time.Second, 600},
		{"7/s", 1500 * time.Millisecond, 11},
		{"2.5/s", 13 * time.Second, 33},
		{"3/s", 2 * time.Second, 6},
	}
	for _, tt := range tests {
		t.Run(tt.rate, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(1000, 0)}
			c, got, dropped := dispatchRun(t, context.Background(), tt.rate, tt.dur, clock, nil)
			if c.sent != tt.n || c.droppedNoVU != 0 || c.droppedLate != 0 || c.stopped || dropped != 0 || int64(len(got)) != tt.n {
				t.Fatalf("counts %+v, %d handed, %d dropped; want %d sent, none dropped", c, len(got), dropped, tt.n)
			}
			s, _ := rate.NewSchedule(rate.MustParse(tt.rate), tt.dur)
			var prev time.Duration
			for k, h := range got {
				want, _ := s.Due(int64(k))
				if h.i != int64(k) || h.due != want || h.late != 0 || h.at != want {
					t.Fatalf("release %d = %+v, want iteration %d due and released at %v, late 0", k, h, k, want)
				}
				if k > 0 && clock.sleeps[k-1] != want-prev {
					t.Errorf("wait before %d = %v, want %v", k, clock.sleeps[k-1], want-prev)
				}
				prev = want
			}
			if len(clock.sleeps) != int(tt.n-1) {
				t.Errorf("%d waits, want %d (none before the first)", len(clock.sleeps), tt.n-1)
			}
		})
	}
}

// A clock that wakes 3 ms late makes every iteration after the first 3 ms
// late, never more (no drift), and the next wait is shorter by as much.
func TestDispatcherOversleep(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0), oversleep: 3 * time.Millisecond}
	c, got, _ := dispatchRun(t, context.Background(), "10/s", time.Second, clock, nil)
	if c.sent != 10 || len(got) != 10 {
		t.Fatalf("counts %+v, want 10 sent", c)
	}
	for k, h := range got {
		wantLate := 3 * time.Millisecond
		if k == 0 {
			wantLate = 0
		}
		if h.late != wantLate || h.due != time.Duration(k)*100*time.Millisecond {
			t.Errorf("release %d: due %v late %v, want %v late %v", k, h.due, h.late, time.Duration(k)*100*time.Millisecond, wantLate)
		}
	}
	want := []time.Duration{100 * time.Millisecond}
	for range 8 {
		want = append(want, 97*time.Millisecond)
	}
	if !slices.Equal(clock.sleeps, want) {
		t.Errorf("waits %v, want %v", clock.sleeps, want)
	}
}

// Drops, exactly: an iteration with no VU is dropped alone; after a stall
// every iteration more than MaxLateness late is dropped at once and the
// rest are released late, without a burst of the backlog.
func TestDispatcherDrops(t *testing.T) {
	t.Run("no VU and a short stall", func(t *testing.T) {
		clock := &fakeClock{now: time.Unix(0, 0)}
		c, got, dropped := dispatchRun(t, context.Background(), "10/s", time.Second, clock, func(i int64) bool {
			if i == 5 {
				clock.now = clock.now.Add(400 * time.Millisecond) // the generator stalls
			}
			return i != 3
		})
		// i=6 (due 600 ms) is reached at 900 ms, 300 ms late: dropped;
		// i=7..9 are 200, 100 and 0 ms late: released.
		if c.sent != 8 || c.droppedNoVU != 1 || c.droppedLate != 1 || dropped != 2 || c.stopped {
			t.Errorf("counts %+v, dropped %d; want 8 sent, 1 without a VU, 1 late", c, dropped)
		}
		var ids []int64
		var lates []time.Duration
		for _, h := range got {
			ids = append(ids, h.i)
			lates = append(lates, h.late)
		}
		ms := time.Millisecond
		if !slices.Equal(ids, []int64{0, 1, 2, 3, 4, 5, 7, 8, 9}) || !slices.Equal(lates, []time.Duration{0, 0, 0, 0, 0, 0, 200 * ms, 100 * ms, 0}) {
			t.Errorf("handed %v late %v; want 0-5 on time, 6 dropped, 7-9 late 200, 100, 0 ms", ids, lates)
		}
	})
	t.Run("a long stall", func(t *testing.T) {
		clock := &fakeClock{now: time.Unix(0, 0)}
		c, got, dropped := dispatchRun(t, context.Background(), "10/s", 2*time.Second, clock, func(i int64) bool {
			if i == 2 {
				clock.now = clock.now.Add(time.Second)
			}
			return true
		})
		// At 1.2 s every iteration due before 950 ms (3..9) is dropped at
		// once; 10, 11 and 12 go 200, 100 and 0 ms late, the rest on time.
		if c.sent != 13 || c.droppedLate != 7 || dropped != 7 || c.droppedNoVU != 0 {
			t.Errorf("counts %+v, dropped %d; want 13 sent, 7 late", c, dropped)
		}
		if len(got) != 13 || got[3].i != 10 || got[3].late != 200*time.Millisecond || got[5].i != 12 || got[5].late != 0 || got[12].i != 19 {
			t.Errorf("handed %+v", got)
		}
	})
}

// The dispatcher stops when its context ends, whether between iterations
// or during a wait, and reports it.
func TestDispatcherStops(t *testing.T) {
	t.Run("between iterations", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clock := &fakeClock{now: time.Unix(0, 0)}
		c, got, _ := dispatchRun(t, ctx, "10/s", time.Second, clock, func(i int64) bool {
			if i == 4 {
				cancel()
			}
			return true
		})
		if !c.stopped || c.sent != 5 || len(got) != 5 {
			t.Errorf("counts %+v, %d handed; want stopped after 5", c, len(got))
		}
	})
	t.Run("during a wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clock := &fakeClock{now: time.Unix(0, 0), cancelAt: 3, cancel: cancel}
		c, got, _ := dispatchRun(t, ctx, "10/s", time.Second, clock, nil)
		if !c.stopped || c.sent != 3 || len(got) != 3 || len(clock.sleeps) != 3 {
			t.Errorf("counts %+v, %d handed, %d waits; want stopped in the third wait after 3", c, len(got), len(clock.sleeps))
		}
	})
}

// The real clock waits the whole wait, and no longer than a cancelled
// context allows.
func TestRealClockSleep(t *testing.T) {
	var c realClock
	for range 2 { // the second wait reuses the timer
		start := time.Now()
		if !c.Sleep(context.Background(), 5*time.Millisecond) {
			t.Fatal("Sleep(5ms) = false with a live context")
		}
		if el := time.Since(start); el < 5*time.Millisecond {
			t.Errorf("Sleep(5ms) returned after %v", el)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	start := time.Now()
	if c.Sleep(ctx, time.Hour) {
		t.Fatal("Sleep(1h) = true, want false once the context ends")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("a cancelled Sleep took %v", el)
	}
	if c.Sleep(ctx, time.Hour) {
		t.Error("Sleep on an ended context = true")
	}
}

// In a run the dispatcher shares its counter with the VUs, which claim
// iterations themselves: it sees only to those no VU claimed within grace
// of their due time, and leaves one to the VUs (however late) while leave
// says so, hearing how late its last wait ended.
func TestDispatcherSharesClaims(t *testing.T) {
	ms := time.Millisecond
	s, err := rate.NewSchedule(rate.MustParse("10/s"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Unix(0, 0), oversleep: 2 * ms}
	start := clock.now
	var next atomic.Int64
	next.Store(5) // VUs claimed 0-4 before the dispatcher looked
	var got []handed
	var told []time.Duration
	dp := dispatcher{sched: s, clock: clock, start: start, next: &next, grace: 5 * ms,
		leave: func(_, overslept time.Duration) bool {
			told = append(told, overslept)
			return len(told) == 1 // the first unclaimed iteration is left once
		},
		hand: func(i int64, due, late time.Duration) bool {
			got = append(got, handed{i: i, due: due, late: late, at: clock.now.Sub(start)})
			if i == 6 {
				next.Add(1) // meanwhile a VU claims 7
			}
			return i != 8 // no VU for 8
		},
	}
	c := dp.run(context.Background())
	// 5: due 500 ms, looked at 507 (grace and oversleep), left, looked at
	// again at 514; 6 at 607; 7 claimed; 8 at 807 (dropped); 9 at 907.
	want := []handed{
		{i: 5, due: 500 * ms, late: 14 * ms, at: 514 * ms},
		{i: 6, due: 600 * ms, late: 7 * ms, at: 607 * ms},
		{i: 8, due: 800 * ms, late: 7 * ms, at: 807 * ms},
		{i: 9, due: 900 * ms, late: 7 * ms, at: 907 * ms},
	}
	if !slices.Equal(got, want) {
		t.Errorf("handed %+v, want %+v", got, want)
	}
	if c.sent != 3 || c.droppedNoVU != 1 || c.droppedLate != 0 || c.stopped || next.Load() != 10 {
		t.Errorf("counts %+v, next %d; want 3 handed, 1 without a VU, all 10 claimed", c, next.Load())
	}
	if len(told) != 5 || told[0] != 2*ms || told[1] != 2*ms {
		t.Errorf("leave heard %v, want the 2 ms oversleep of each wait, five times", told)
	}
}
