package limiter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func mustLimiter(t *testing.T, p Params) *Limiter {
	t.Helper()
	l, err := NewLimiter(p)
	if err != nil {
		t.Fatalf("NewLimiter(%+v): %v", p, err)
	}
	return l
}

// serverMs reads the server clock, so virtual time starts near real time
// and keys' real TTLs stay ahead of the virtual clock.
func serverMs(t *testing.T, c redis.UniversalClient) int64 {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now.UnixMilli()
}

// TestScriptsMatchModels drives every script through now_ms on every target
// with random time steps and costs and compares each decision with the
// pure Go model: identical allowed, remaining, retry and reset.
func TestScriptsMatchModels(t *testing.T) {
	ctx := context.Background()
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, 7))
			for round := range 6 {
				for _, algo := range Algos() {
					p := randomParams(r, algo)
					l := mustLimiter(t, p)
					m := l.Model()
					key := redistest.Key(t, string(algo))
					redistest.Cleanup(t, tg.Client, key)
					now := serverMs(t, tg.Client)
					maxStep := maxStepMs(p)
					for i := range 120 {
						if r.IntN(4) > 0 {
							now += r.Int64N(maxStep + 1)
						}
						cost := 1 + r.Int64N(maxCost(p))
						l.p.Cost = cost
						got, err := l.Allow(ctx, tg.Client, key, now)
						if err != nil {
							t.Fatalf("seed %d round %d %s call %d: %v", seed, round, algo, i, err)
						}
						if ttl, err := tg.Client.PTTL(ctx, key).Result(); err != nil || ttl == -time.Millisecond {
							t.Fatalf("%s call %d: PTTL = %d, %v; every write must set a TTL", algo, i, ttl, err)
						}
						want := m.Allow(now, cost)
						if g := (model.Decision{Allowed: got.Allowed, Remaining: got.Remaining, RetryMs: got.RetryMs, ResetMs: got.ResetMs}); g != want {
							t.Fatalf("seed %d round %d %s %+v call %d (now %d, cost %d): script %+v, model %+v",
								seed, round, algo, p, i, now, cost, g, want)
						}
					}
				}
			}
		})
	}
}

func randomParams(r *rand.Rand, algo Algo) Params {
	rates := []string{"5/s", "1/s", "0.5/s", "3/s", "300/m", "1000/h", "7/100ms", "2.5/s", "1/3s", "0.05025/s", "1/h", "1000000/s"}
	rt, _ := rate.Parse(rates[r.IntN(len(rates))])
	n := 1 + r.Int64N(12)
	window := time.Duration(1000+r.Int64N(9000)) * time.Millisecond
	return Params{Algo: algo, Capacity: n, Rate: rt, Limit: n, Window: window, Burst: n}
}

func maxCost(p Params) int64 {
	return min(3, p.Capacity, p.Limit, p.Burst)
}

// maxStepMs keeps several calls inside one refill period or window, so the
// sequences hit full, empty and partly refilled states.
func maxStepMs(p Params) int64 {
	switch p.Algo {
	case TokenBucket, GCRA:
		return int64(2 * 1000 / p.Rate.PerSecond())
	default:
		return p.Window.Milliseconds() / 4
	}
}

func TestNewLimiterRejectsBadInput(t *testing.T) {
	five := rate.Rate{Count: 5, Per: time.Second}
	tests := []Params{
		{Algo: "leaky", Capacity: 5, Rate: five},
		{Algo: TokenBucket, Capacity: 0, Rate: five},
		{Algo: TokenBucket, Capacity: -1, Rate: five},
		{Algo: TokenBucket, Capacity: 5},
		{Algo: TokenBucket, Capacity: 5, Rate: five, Cost: 6},
		{Algo: TokenBucket, Capacity: 5, Rate: five, Cost: -1},
		{Algo: SlidingWindow, Limit: 0, Window: time.Second},
		{Algo: SlidingWindow, Limit: 3},
		{Algo: SlidingWindow, Limit: 3, Window: 1500 * time.Microsecond},
		{Algo: FixedWindow, Limit: 3, Window: -time.Second},
		{Algo: GCRA, Rate: five},
		{Algo: GCRA, Burst: 3},
		{Algo: GCRA, Burst: 3, Rate: rate.Rate{Count: 2e6, Per: time.Second}},
	}
	for _, p := range tests {
		t.Run(fmt.Sprintf("%+v", p), func(t *testing.T) {
			_, err := NewLimiter(p)
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Errorf("NewLimiter(%+v) = %v (exit %d), want exit %d", p, err, code, exitcode.Usage)
			}
		})
	}
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		p    Params
		want Policy
	}{
		{Params{Algo: TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}}, Policy{10, 2}},
		{Params{Algo: TokenBucket, Capacity: 5, Rate: rate.Rate{Count: 2, Per: time.Second}}, Policy{5, 3}},
		{Params{Algo: SlidingWindow, Limit: 100, Window: time.Minute}, Policy{100, 60}},
		{Params{Algo: FixedWindow, Limit: 3, Window: 500 * time.Millisecond}, Policy{3, 1}},
		{Params{Algo: GCRA, Burst: 20, Rate: rate.Rate{Count: 10, Per: time.Second}}, Policy{20, 2}},
	}
	for _, tt := range tests {
		if got := mustLimiter(t, tt.p).Policy(); got != tt.want {
			t.Errorf("Policy(%+v) = %+v, want %+v", tt.p, got, tt.want)
		}
	}
}
