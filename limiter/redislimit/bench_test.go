package redislimit

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/wire"
)

// BenchmarkDecisions measures token-bucket decisions on a real server
// through the two paths: Store.Allow (what serve calls: connections the
// store owns, EVALSHA built once) and Allow on a shared client
// (Script.Run: a pool turn and a health check per call). "seq" runs one
// decision at a time, so allocs/op is one decision's; "conc" runs
// RATELIMIT_BENCH_CONC goroutines (default 50, redis-benchmark's -c) on
// one key, as redis-benchmark does, and reports decisions/s.
// RATELIMIT_BENCH_REDIS=URL benchmarks that server instead of a sandbox
// (bench/eval.sh runs redis-benchmark against the same one).
//
//	go test -run '^$' -bench Decisions -benchmem ./limiter/redislimit
func BenchmarkDecisions(b *testing.B) {
	conc := 50
	if v := os.Getenv("RATELIMIT_BENCH_CONC"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("RATELIMIT_BENCH_CONC=%q: want a positive integer", v)
		}
		conc = n
	}
	url := os.Getenv("RATELIMIT_BENCH_REDIS")
	if url == "" {
		url = redistest.StandaloneSandbox(b).URL
	}
	ro, err := redis.ParseURL(url)
	if err != nil {
		b.Fatalf("parse %s: %v", url, err)
	}
	// commands inside the wait for their replies, as redisconn dials
	// the client serve decides through
	ro.Dialer = wire.Dialer(redis.NewDialer(ro))
	// The same parameters as bench/eval.sh gives redis-benchmark.
	l, err := limiter.NewLimiter(limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	key := "rl:{bench}:tb"
	for _, path := range []string{"store", "shared"} {
		// one more connection than goroutines: a store keeps one free
		// for the client's other commands
		ro.PoolSize, ro.MinIdleConns = conc+1, conc+1
		c := redis.NewClient(ro)
		ctx := context.Background()
		allow := func(ctx context.Context, key string) (limiter.Decision, error) { return Allow(ctx, c, l, key, 0) }
		var s *Store
		if path == "store" {
			s = NewStore(c)
			allow = func(ctx context.Context, key string) (limiter.Decision, error) { return s.Allow(ctx, l, key) }
		}
		if _, err := allow(ctx, key); err != nil { // loads the script, warms a connection
			b.Fatal(err)
		}
		b.Run(path+"-seq", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := allow(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(path+"-conc", func(b *testing.B) {
			var next atomic.Int64
			var failed atomic.Pointer[error]
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range conc {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := allow(ctx, key); err != nil {
							e := err // escapes only when it is set
							failed.CompareAndSwap(nil, &e)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if err := failed.Load(); err != nil {
				b.Fatal(*err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			b.ReportMetric(float64(conc), "conns")
		})
		_ = c.Del(ctx, key).Err()
		if s != nil {
			// the store's idle deciders give their connections back
			// before the client closes (a connection put back into a
			// closed pool makes go-redis log a line)
			waitReaped(b, s.owned)
		}
		_ = c.Close()
	}
}

// waitReaped waits until o holds no connection (every decider idle for
// idleAfter gave its own back), at most a few seconds.
func waitReaped(tb testing.TB, o *owned) {
	tb.Helper()
	for end := time.Now().Add(3*idleAfter + time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		o.mu.Lock()
		made := o.made
		o.mu.Unlock()
		if made == 0 {
			return
		}
	}
	tb.Errorf("the store still holds connections %s after its last decision", 3*idleAfter+time.Second)
}
