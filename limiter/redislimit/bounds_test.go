package redislimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/redis/go-redis/v9"
)

func perSec(f float64) rate.Rate { return rate.Rate{Count: f, Per: time.Second} }

// boundCases are parameters on both sides of every limit: ok ones must
// pass Go's validation and run on the scripts; the others must be refused
// by both, Go with exit 2 and the script with its own error.
var boundCases = []struct {
	name string
	p    limiter.Params
	ok   bool
}{
	{"bucket capacity max", limiter.Params{Algo: limiter.TokenBucket, Capacity: 1e9, Rate: perSec(1e6)}, true},
	{"bucket capacity over", limiter.Params{Algo: limiter.TokenBucket, Capacity: 1e9 + 1, Rate: perSec(1e6)}, false},
	{"bucket rate max", limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: perSec(1e9)}, true},
	{"bucket rate over", limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: perSec(1.000001e9)}, false},
	{"bucket 1e9 at 1/s fills in 1e12 ms", limiter.Params{Algo: limiter.TokenBucket, Capacity: 1e9, Rate: perSec(1)}, true},
	{"bucket 1e9 at 0.999/s", limiter.Params{Algo: limiter.TokenBucket, Capacity: 1e9, Rate: perSec(0.999)}, false},
	{"bucket 1 at 1e-9/s", limiter.Params{Algo: limiter.TokenBucket, Capacity: 1, Rate: perSec(1e-9)}, true},
	{"bucket 1 at 0.9e-9/s", limiter.Params{Algo: limiter.TokenBucket, Capacity: 1, Rate: perSec(0.9e-9)}, false},
	{"bucket rate 1e-300/s", limiter.Params{Algo: limiter.TokenBucket, Capacity: 1, Rate: perSec(1e-300)}, false},
	{"bucket fast and deep", limiter.Params{Algo: limiter.TokenBucket, Capacity: 1e9, Rate: perSec(3e8)}, true},
	{"gcra rate max, burst max", limiter.Params{Algo: limiter.GCRA, Rate: perSec(1e6), Burst: 1e9}, true},
	{"gcra rate over", limiter.Params{Algo: limiter.GCRA, Rate: perSec(1e6 + 1), Burst: 5}, false},
	{"gcra burst over", limiter.Params{Algo: limiter.GCRA, Rate: perSec(1e6), Burst: 1e9 + 1}, false},
	{"gcra 1/s burst 1e9: 1e15 us", limiter.Params{Algo: limiter.GCRA, Rate: perSec(1), Burst: 1e9}, true},
	{"gcra 0.999999/s burst 1e9", limiter.Params{Algo: limiter.GCRA, Rate: perSec(0.999999), Burst: 1e9}, false},
	{"gcra 0.00001/s burst 1e4", limiter.Params{Algo: limiter.GCRA, Rate: perSec(0.00001), Burst: 1e4}, true},
	{"gcra rate 1e-300/s", limiter.Params{Algo: limiter.GCRA, Rate: perSec(1e-300), Burst: 1}, false},
	{"fixed limit max", limiter.Params{Algo: limiter.FixedWindow, Limit: 1e15, Window: time.Second}, true},
	{"fixed limit over", limiter.Params{Algo: limiter.FixedWindow, Limit: 1e15 + 1, Window: time.Second}, false},
	{"fixed limit 2^50", limiter.Params{Algo: limiter.FixedWindow, Limit: 1 << 50, Window: time.Second}, false},
	{"fixed window max", limiter.Params{Algo: limiter.FixedWindow, Limit: 5, Window: 1e12 * time.Millisecond}, true},
	{"fixed window over", limiter.Params{Algo: limiter.FixedWindow, Limit: 5, Window: (1e12 + 1) * time.Millisecond}, false},
	{"sliding limit max", limiter.Params{Algo: limiter.SlidingWindow, Limit: 1e6, Window: time.Second}, true},
	{"sliding limit over", limiter.Params{Algo: limiter.SlidingWindow, Limit: 1e6 + 1, Window: time.Second}, false},
	{"sliding window max", limiter.Params{Algo: limiter.SlidingWindow, Limit: 5, Window: 1e12 * time.Millisecond}, true},
	{"sliding window over", limiter.Params{Algo: limiter.SlidingWindow, Limit: 5, Window: (1e12 + 1) * time.Millisecond}, false},
}

// TestBoundsAgreeWithScripts: Go's validation and the scripts' own checks
// draw every line in the same place, and at the limits the scripts still
// decide exactly like the models, with valid TTLs, on every target.
func TestBoundsAgreeWithScripts(t *testing.T) {
	ctx := context.Background()
	for _, tg := range redistest.All(t) {
		for _, tc := range boundCases {
			t.Run(tg.Name+"/"+tc.name, func(t *testing.T) {
				key := redistest.Key(t, "bound")
				redistest.Cleanup(t, tg.Client, key)
				_, err := limiter.NewLimiter(tc.p)
				if !tc.ok {
					if code := exitcode.Code(err); code != exitcode.Usage || strings.Contains(err.Error(), "\n") {
						t.Fatalf("NewLimiter(%+v) = %v (exit %d), want a one-line exit-2 error", tc.p, err, code)
					}
					// The script refuses the same values with its own message.
					p := tc.p
					p.Cost = 1
					src, _ := limiter.ScriptByName(string(p.Algo))
					_, err := redis.NewScript(src.Source).Run(ctx, tg.Client, []string{key}, p.Args(serverMs(t, tg.Client), "id")...).Result()
					prefix := strings.ReplaceAll(string(tc.p.Algo), "-", " ") + ": "
					if err == nil || !strings.Contains(err.Error(), prefix) {
						t.Fatalf("script with %+v = %v, want its own %q error", tc.p, err, prefix)
					}
					return
				}
				if err != nil {
					t.Fatalf("NewLimiter(%+v): %v", tc.p, err)
				}
				matchModel(t, tg, key, tc.p, 40)
			})
		}
	}
}

// matchModel drives the script through now_ms with random steps (up to
// about a fill period) and costs (up to the quota) and compares every
// decision with the model; every key written keeps a valid TTL.
func matchModel(t *testing.T, tg redistest.Target, key string, p limiter.Params, calls int) {
	t.Helper()
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 11))
	l := mustLimiter(t, p)
	m := l.Model()
	// the largest cost (at most 1000: a sliding-window unit is one ZADD)
	// and the ms to restore the full quota
	quota, restore := p.Quota()
	quota, period := min(quota, 1000), restore.Milliseconds()
	now := serverMs(t, tg.Client)
	for i := range calls {
		switch r.IntN(4) {
		case 0: // same ms
		case 1:
			now += r.Int64N(3)
		default:
			now += r.Int64N(max(period/3, 1) + 1)
		}
		cost := 1 + r.Int64N(quota)
		if r.IntN(3) == 0 {
			cost = 1
		}
		p.Cost = cost
		got, err := Allow(ctx, tg.Client, mustLimiter(t, p), key, now)
		if err != nil {
			t.Fatalf("seed %d call %d (now %d, cost %d): %v", seed, i, now, cost, err)
		}
		want := m.Allow(now, cost)
		if g := (model.Decision{Allowed: got.Allowed, Remaining: got.Remaining, RetryMs: got.RetryMs, ResetMs: got.ResetMs}); g != want {
			t.Fatalf("seed %d %+v call %d (now %d, cost %d): script %+v, model %+v", seed, p, i, now, cost, g, want)
		}
		if ttl, err := tg.Client.PTTL(ctx, key).Result(); err != nil || ttl == -time.Millisecond {
			t.Fatalf("call %d: PTTL = %d, %v; every write must set a TTL", i, ttl, err)
		}
	}
}

// TestPlainDecimalRates: rates whose shortest form has an exponent go to
// the scripts as plain decimals, which every target reads (the embedded
// server's Lua rejects "1e+06").
func TestPlainDecimalRates(t *testing.T) {
	tests := []struct {
		p    limiter.Params
		arg  string
		want int // allowed of 3 quick calls
	}{
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 2, Rate: rate.MustParse("1000000/s")}, "1000000", 3},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 2, Rate: rate.MustParse("0.00001/s")}, "0.00001", 2},
		{limiter.Params{Algo: limiter.GCRA, Burst: 2, Rate: rate.MustParse("1000000/s")}, "1000000", 3},
		{limiter.Params{Algo: limiter.GCRA, Burst: 2, Rate: rate.MustParse("0.00001/s")}, "0.00001", 2},
	}
	for _, tg := range redistest.All(t) {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%s %s", tg.Name, tt.p.Algo, tt.p.Rate), func(t *testing.T) {
				l := mustLimiter(t, tt.p)
				if args := strings.Fields(strings.Trim(fmt.Sprint(l.Args(0, "")), "[]")); !strings.Contains(strings.Join(args, " "), tt.arg) {
					t.Errorf("args = %q, want the rate as %s", args, tt.arg)
				}
				key := redistest.Key(t, "rate")
				redistest.Cleanup(t, tg.Client, key)
				// Three calls in one virtual ms, so the fast rate refills
				// nothing between them... except that 1e6/s is 1000 per ms:
				// the calls one ms apart all pass.
				base := serverMs(t, tg.Client)
				allowed := 0
				for i := range int64(3) {
					d, err := Allow(context.Background(), tg.Client, l, key, base+i)
					if err != nil {
						t.Fatalf("call %d: %v", i+1, err)
					}
					if d.Allowed {
						allowed++
					}
				}
				if allowed != tt.want {
					t.Errorf("allowed %d of 3 calls 1 ms apart, want %d", allowed, tt.want)
				}
				key2 := redistest.Key(t, "rate2")
				redistest.Cleanup(t, tg.Client, key2)
				matchModel(t, tg, key2, tt.p, 30)
			})
		}
	}
}
