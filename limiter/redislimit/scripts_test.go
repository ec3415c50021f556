package redislimit

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func mustLimiter(t *testing.T, p limiter.Params) *limiter.Limiter {
	t.Helper()
	l, err := limiter.NewLimiter(p)
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
				for _, algo := range limiter.Scripted() {
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
						p.Cost = cost
						got, err := Allow(ctx, tg.Client, mustLimiter(t, p), key, now)
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

func randomParams(r *rand.Rand, algo limiter.Algo) limiter.Params {
	rates := []string{"5/s", "1/s", "0.5/s", "3/s", "300/m", "1000/h", "7/100ms", "2.5/s", "1/3s", "0.05025/s", "1/h", "1000000/s"}
	rt, _ := rate.Parse(rates[r.IntN(len(rates))])
	n := 1 + r.Int64N(12)
	window := time.Duration(1000+r.Int64N(9000)) * time.Millisecond
	return limiter.Params{Algo: algo, Capacity: n, Rate: rt, Limit: n, Window: window, Burst: n}
}

func maxCost(p limiter.Params) int64 {
	return min(3, p.Capacity, p.Limit, p.Burst)
}

// maxStepMs keeps several calls inside one refill period or window, so the
// sequences hit full, empty and partly refilled states.
func maxStepMs(p limiter.Params) int64 {
	_, period := p.Quota()
	return max(period.Milliseconds()/4, 1)
}
