package limiter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func perSec(f float64) rate.Rate { return rate.Rate{Count: f, Per: time.Second} }

// boundCases are parameters on both sides of every limit: ok ones must
// pass Go's validation and run on the scripts; the others must be refused
// by both, Go with exit 2 and the script with its own error.
var boundCases = []struct {
	name string
	p    Params
	ok   bool
}{
	{"bucket capacity max", Params{Algo: TokenBucket, Capacity: 1e9, Rate: perSec(1e6)}, true},
	{"bucket capacity over", Params{Algo: TokenBucket, Capacity: 1e9 + 1, Rate: perSec(1e6)}, false},
	{"bucket rate max", Params{Algo: TokenBucket, Capacity: 5, Rate: perSec(1e9)}, true},
	{"bucket rate over", Params{Algo: TokenBucket, Capacity: 5, Rate: perSec(1.000001e9)}, false},
	{"bucket 1e9 at 1/s fills in 1e12 ms", Params{Algo: TokenBucket, Capacity: 1e9, Rate: perSec(1)}, true},
	{"bucket 1e9 at 0.999/s", Params{Algo: TokenBucket, Capacity: 1e9, Rate: perSec(0.999)}, false},
	{"bucket 1 at 1e-9/s", Params{Algo: TokenBucket, Capacity: 1, Rate: perSec(1e-9)}, true},
	{"bucket 1 at 0.9e-9/s", Params{Algo: TokenBucket, Capacity: 1, Rate: perSec(0.9e-9)}, false},
	{"bucket rate 1e-300/s", Params{Algo: TokenBucket, Capacity: 1, Rate: perSec(1e-300)}, false},
	{"bucket fast and deep", Params{Algo: TokenBucket, Capacity: 1e9, Rate: perSec(3e8)}, true},
	{"gcra rate max, burst max", Params{Algo: GCRA, Rate: perSec(1e6), Burst: 1e9}, true},
	{"gcra rate over", Params{Algo: GCRA, Rate: perSec(1e6 + 1), Burst: 5}, false},
	{"gcra burst over", Params{Algo: GCRA, Rate: perSec(1e6), Burst: 1e9 + 1}, false},
	{"gcra 1/s burst 1e9: 1e15 us", Params{Algo: GCRA, Rate: perSec(1), Burst: 1e9}, true},
	{"gcra 0.999999/s burst 1e9", Params{Algo: GCRA, Rate: perSec(0.999999), Burst: 1e9}, false},
	{"gcra 0.00001/s burst 1e4", Params{Algo: GCRA, Rate: perSec(0.00001), Burst: 1e4}, true},
	{"gcra rate 1e-300/s", Params{Algo: GCRA, Rate: perSec(1e-300), Burst: 1}, false},
	{"fixed limit max", Params{Algo: FixedWindow, Limit: 1e15, Window: time.Second}, true},
	{"fixed limit over", Params{Algo: FixedWindow, Limit: 1e15 + 1, Window: time.Second}, false},
	{"fixed limit 2^50", Params{Algo: FixedWindow, Limit: 1 << 50, Window: time.Second}, false},
	{"fixed window max", Params{Algo: FixedWindow, Limit: 5, Window: 1e12 * time.Millisecond}, true},
	{"fixed window over", Params{Algo: FixedWindow, Limit: 5, Window: (1e12 + 1) * time.Millisecond}, false},
	{"sliding limit max", Params{Algo: SlidingWindow, Limit: 1e6, Window: time.Second}, true},
	{"sliding limit over", Params{Algo: SlidingWindow, Limit: 1e6 + 1, Window: time.Second}, false},
	{"sliding window max", Params{Algo: SlidingWindow, Limit: 5, Window: 1e12 * time.Millisecond}, true},
	{"sliding window over", Params{Algo: SlidingWindow, Limit: 5, Window: (1e12 + 1) * time.Millisecond}, false},
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
				_, err := NewLimiter(tc.p)
				if !tc.ok {
					if code := exitcode.Code(err); code != exitcode.Usage || strings.Contains(err.Error(), "\n") {
						t.Fatalf("NewLimiter(%+v) = %v (exit %d), want a one-line exit-2 error", tc.p, err, code)
					}
					// The script refuses the same values with its own message.
					l := &Limiter{p: tc.p, script: compiled[tc.p.Algo]}
					l.p.Cost = 1
					_, err := l.Allow(ctx, tg.Client, key, serverMs(t, tg.Client))
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
func matchModel(t *testing.T, tg redistest.Target, key string, p Params, calls int) {
	t.Helper()
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 11))
	l := mustLimiter(t, p)
	m := l.Model()
	var quota, period int64 // largest cost; ms to restore the full quota
	switch p.Algo {
	case TokenBucket:
		quota, period = p.Capacity, int64(float64(p.Capacity)*1000/p.Rate.PerSecond())
	case GCRA:
		quota, period = p.Burst, int64(float64(p.Burst)*1000/p.Rate.PerSecond())
	case SlidingWindow:
		quota, period = min(p.Limit, 1000), p.Window.Milliseconds() // each unit is one ZADD
	default:
		quota, period = p.Limit, p.Window.Milliseconds()
	}
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
		l.p.Cost = cost
		got, err := l.Allow(ctx, tg.Client, key, now)
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
		p    Params
		arg  string
		want int // allowed of 3 quick calls
	}{
		{Params{Algo: TokenBucket, Capacity: 2, Rate: rate.MustParse("1000000/s")}, "1000000", 3},
		{Params{Algo: TokenBucket, Capacity: 2, Rate: rate.MustParse("0.00001/s")}, "0.00001", 2},
		{Params{Algo: GCRA, Burst: 2, Rate: rate.MustParse("1000000/s")}, "1000000", 3},
		{Params{Algo: GCRA, Burst: 2, Rate: rate.MustParse("0.00001/s")}, "0.00001", 2},
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
					d, err := l.Allow(context.Background(), tg.Client, key, base+i)
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
