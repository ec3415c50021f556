package rate_test

// An external test: it is the one place that looks at both users of the
// schedule, which may not import each other (eval and load are domain
// packages and share only through rate).

import (
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// eval --simulate and load plan identical arrivals for the same rate and
// duration: as many, and each at the millisecond load's dispatcher
// releases it (eval's virtual clock counts whole milliseconds).
func TestSimulateAndLoadPlanAlike(t *testing.T) {
	tests := []struct {
		rate    string
		dur     time.Duration
		planned int
		lastMs  int64
	}{
		{"20/s", 30 * time.Second, 600, 29950},
		{"7/s", 1500 * time.Millisecond, 11, 1428},
		{"2.5/s", 13 * time.Second, 33, 12800},
	}
	for _, tt := range tests {
		t.Run(tt.rate, func(t *testing.T) {
			r := rate.MustParse(tt.rate)
			plan, err := load.Plan(r, tt.dur, load.MaxPlanned)
			if err != nil {
				t.Fatalf("load.Plan(%s, %s): %v", tt.rate, tt.dur, err)
			}
			times, err := eval.ArrivalTimes(r, tt.dur)
			if err != nil {
				t.Fatalf("eval.ArrivalTimes(%s, %s): %v", tt.rate, tt.dur, err)
			}
			if len(times) != tt.planned || plan.Planned() != int64(tt.planned) {
				t.Fatalf("eval plans %d arrivals, load %d; want %d", len(times), plan.Planned(), tt.planned)
			}
			for i, ms := range times {
				due, ok := plan.Due(int64(i))
				if !ok || due.Milliseconds() != ms {
					t.Fatalf("arrival %d: eval at %d ms, load due at %v", i, ms, due)
				}
			}
			if times[len(times)-1] != tt.lastMs {
				t.Errorf("last arrival at %d ms, want %d", times[len(times)-1], tt.lastMs)
			}
		})
	}
}
