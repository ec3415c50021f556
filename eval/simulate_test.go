package eval

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestArrivalTimes(t *testing.T) {
	tests := []struct {
		r     string
		d     time.Duration
		n     int
		first []int64
		last  int64
	}{
		{"20/s", 30 * time.Second, 600, []int64{0, 50, 100}, 29950},
		{"3/s", time.Second, 3, []int64{0, 333, 666}, 666},
		{"300/m", 2 * time.Second, 10, []int64{0, 200, 400}, 1800},
		{"1/s", 2500 * time.Millisecond, 3, []int64{0, 1000, 2000}, 2000},
		{"1/h", 30 * time.Second, 1, []int64{0}, 0},
		{"1/h", 24 * time.Hour, 24, []int64{0, 3_600_000}, 23 * 3_600_000},
		{"1000/s", 1000 * time.Second, 1_000_000, []int64{0, 1, 2}, 999_999},
	}
	for _, tt := range tests {
		got, err := ArrivalTimes(rate.MustParse(tt.r), tt.d)
		if err != nil {
			t.Fatalf("ArrivalTimes(%s, %s): %v", tt.r, tt.d, err)
		}
		if len(got) != tt.n || !slices.Equal(got[:len(tt.first)], tt.first) || got[len(got)-1] != tt.last {
			t.Errorf("ArrivalTimes(%s, %s) = %d times %v...%d, want %d %v...%d", tt.r, tt.d, len(got), got[:3], got[len(got)-1], tt.n, tt.first, tt.last)
		}
	}
	for _, bad := range []struct {
		r rate.Rate
		d time.Duration
	}{
		{rate.Rate{}, time.Second},
		{rate.MustParse("1/s"), 0},
		{rate.MustParse("1000000/s"), time.Hour},
		{rate.MustParse("1e-300/s"), 30 * time.Second}, // the gap is +Inf ns
		{rate.Rate{Count: 5e-324, Per: time.Hour}, time.Second},
		{rate.MustParse("1/h"), 1000 * time.Hour}, // 3.6M per-second entries
		{rate.MustParse("1/s"), 24*time.Hour + time.Millisecond},
		{rate.MustParse("1000/s"), 1000*time.Second + time.Millisecond}, // one call over
		{rate.Rate{Count: 1.0 / 3, Per: time.Second}, time.Second},      // not a decimal the shared schedule holds
	} {
		times, err := ArrivalTimes(bad.r, bad.d)
		if exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") || len(err.Error()) > 200 {
			t.Errorf("ArrivalTimes(%v, %s) = %d times, err %v; want a one-line usage error", bad.r, bad.d, len(times), err)
		}
	}
}

// TestSimulateBadInput: bad arrival streams are exit-2 errors from
// Simulate itself, not panics, before anything is sent.
func TestSimulateBadInput(t *testing.T) {
	tg := redistest.Embedded(t)
	p := limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")}
	for _, bad := range []SimOptions{
		{Params: p, Arrivals: rate.MustParse("1e-300/s"), For: 30 * time.Second},
		{Params: p, Arrivals: rate.MustParse("1/h"), For: 1000 * time.Hour},
	} {
		if _, err := Simulate(context.Background(), tg.Client, bad); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("Simulate(%v for %s) = %v, want exit 2", bad.Arrivals, bad.For, err)
		}
	}
}

// TestAcceptanceSimulate: 20/s for 30 s against a bucket of 10 at 5/s
// predicts exactly 159 admitted; a sliding window of 100 per 60 s exactly
// 100; same on every target, well under a second, leaving no key behind.
func TestAcceptanceSimulate(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		p         limiter.Params
		admitted  int
		perSecond []int // first seconds
	}{
		{"token bucket", limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}}, 159, []int{14, 5, 5}},
		{"sliding window", limiter.Params{Algo: limiter.SlidingWindow, Limit: 100, Window: time.Minute}, 100, []int{20, 20, 20, 20, 20, 0}},
		{"gcra", limiter.Params{Algo: limiter.GCRA, Rate: rate.Rate{Count: 5, Per: time.Second}, Burst: 10}, 159, []int{14, 5, 5}},
		{"fixed window", limiter.Params{Algo: limiter.FixedWindow, Limit: 10, Window: time.Second}, 300, []int{10, 10, 10}},
	}
	for _, tg := range redistest.All(t) {
		for _, tt := range tests {
			t.Run(tg.Name+"/"+tt.name, func(t *testing.T) {
				res, err := Simulate(ctx, tg.Client, SimOptions{Params: tt.p, Arrivals: rate.MustParse("20/s"), For: 30 * time.Second, Server: tg.Server})
				if err != nil {
					t.Fatalf("Simulate: %v", err)
				}
				if res.Arrivals != 600 || res.Admitted != tt.admitted || res.Refused != 600-tt.admitted {
					t.Errorf("arrivals %d admitted %d refused %d, want 600 %d %d", res.Arrivals, res.Admitted, res.Refused, tt.admitted, 600-tt.admitted)
				}
				if !res.Agrees || res.Model != tt.admitted {
					t.Errorf("model admitted %d, agrees %v; want %d, true", res.Model, res.Agrees, tt.admitted)
				}
				sum := 0
				for _, n := range res.PerSecond {
					sum += n
				}
				if len(res.PerSecond) != 30 || sum != res.Admitted || !slices.Equal(res.PerSecond[:len(tt.perSecond)], tt.perSecond) {
					t.Errorf("per second = %v, want 30 seconds summing to %d starting %v", res.PerSecond, res.Admitted, tt.perSecond)
				}
				// Speed is BenchmarkSimulate's business, not a timed test's.
				t.Logf("%s: 600 arrivals simulated in %.1f ms", tg.Name, res.WallMs)
				if res.Kind != "simulate" || res.Version != 2 || res.Pipelines != 1 {
					t.Errorf("kind %q version %d pipelines %d", res.Kind, res.Version, res.Pipelines)
				}
				var left atomic.Int64 // ForEachMaster calls back concurrently
				err = primaries(ctx, tg.Client, func(ctx context.Context, n redis.Cmdable) error {
					keys, _, err := n.Scan(ctx, 0, "ratelimit:simulate:*", 10000).Result()
					left.Add(int64(len(keys)))
					return err
				})
				if err != nil || left.Load() != 0 {
					t.Errorf("simulation keys left behind: %d, %v", left.Load(), err)
				}
			})
		}
	}
}

// TestSimulateSurvivesScriptFlush: with the script cache flushed before
// the run and again between two pipelines, the simulation loads the script,
// resumes where NOSCRIPT stopped it, and still decides like the model.
func TestSimulateSurvivesScriptFlush(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			l := mustLimiter(t, limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}})
			key := redistest.Key(t, "simflush")
			redistest.Cleanup(t, tg.Client, key)
			times, _ := ArrivalTimes(rate.MustParse("20/s"), 100*time.Second) // 2000 calls: 2 pipelines
			base := serverMs(t, tg.Client)
			m := l.Model()
			var ds []limiter.Decision
			for _, part := range [][]int64{times[:1000], times[1000:]} {
				flushScripts(t, tg.Client, key)
				got, pipes, err := runVirtual(ctx, l, tg.Client, key, base, part)
				if err != nil {
					t.Fatalf("runVirtual: %v", err)
				}
				if pipes != 2 {
					t.Errorf("pipelines = %d, want 2 (NOSCRIPT, then the calls)", pipes)
				}
				ds = append(ds, got...)
			}
			for i, d := range ds {
				if w := m.Allow(base+times[i], 1); w.Allowed != d.Allowed || w.Remaining != d.Remaining {
					t.Fatalf("call %d: script %+v, model %+v", i, d, w)
				}
			}
		})
	}
}

// TestSimulateSlowRefillAtAnyFrequency: a bucket of 1 at 0.0501/s (50.1
// micro-tokens per ms: a token every 19960.08 ms) admits 2 in 20 s whether
// asked 50 or 200 times a second, on every target, and the script agrees
// with the model. Rounding the refill down per call (250.5 micro-tokens
// every 5 ms) used to admit only 1 at 200/s.
func TestSimulateSlowRefillAtAnyFrequency(t *testing.T) {
	p := limiter.Params{Algo: limiter.TokenBucket, Capacity: 1, Rate: rate.MustParse("0.0501/s")}
	for _, tg := range redistest.All(t) {
		for _, arrivals := range []string{"50/s", "200/s"} {
			t.Run(tg.Name+"/"+arrivals, func(t *testing.T) {
				res, err := Simulate(context.Background(), tg.Client, SimOptions{Params: p, Arrivals: rate.MustParse(arrivals), For: 20 * time.Second})
				if err != nil {
					t.Fatalf("Simulate: %v", err)
				}
				if res.Admitted != 2 || !res.Agrees || res.Model != 2 {
					t.Errorf("admitted %d (model %d, agrees %v) of %d, want 2 by both", res.Admitted, res.Model, res.Agrees, res.Arrivals)
				}
			})
		}
	}
}
