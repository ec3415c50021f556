package eval

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// BenchmarkScriptDecisions measures token-bucket decisions per second on a
// real server: RATELIMIT_BENCH_CONC goroutines (default 50, redis-benchmark's
// default -c) each make one EVALSHA round trip per decision on one key, as
// redis-benchmark does. RATELIMIT_BENCH_REDIS=URL benchmarks that server
// instead of a fresh sandbox (bench/eval.sh uses it to run redis-benchmark
// against the same one).
func BenchmarkScriptDecisions(b *testing.B) {
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
	ro.PoolSize, ro.MinIdleConns = conc, conc
	c := redis.NewClient(ro)
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	// The same parameters as bench/eval.sh gives redis-benchmark.
	l, err := limiter.NewLimiter(limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	key := "rl:{bench}:tb"
	b.Cleanup(func() { _ = c.Del(context.Background(), key).Err() })
	if _, err := redislimit.Allow(ctx, c, l, key, 0); err != nil { // loads the script, warms a connection
		b.Fatal(err)
	}
	var next atomic.Int64
	var failed atomic.Pointer[error]
	b.ResetTimer()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := redislimit.Allow(ctx, c, l, key, 0); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(conc), "conns")
}

// BenchmarkSimulate measures one `eval --simulate` of the acceptance case
// (a bucket of 10 at 5/s, 20/s arrivals for 30 s: 600 script calls in
// virtual time) on a real standalone server and on the embedded one; the
// issue asks for well under a second of wall time.
func BenchmarkSimulate(b *testing.B) {
	opts := SimOptions{
		Params:   limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}},
		Arrivals: rate.Rate{Count: 20, Per: time.Second},
		For:      30 * time.Second,
	}
	for _, tg := range []redistest.Target{redistest.Standalone(b), redistest.Embedded(b)} {
		b.Run(tg.Name, func(b *testing.B) {
			for b.Loop() {
				res, err := Simulate(context.Background(), tg.Client, opts)
				if err != nil {
					b.Fatal(err)
				}
				if res.Admitted != 159 {
					b.Fatalf("admitted %d, want 159", res.Admitted)
				}
			}
		})
	}
}
