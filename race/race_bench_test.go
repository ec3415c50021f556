package race

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// benchServer starts a standalone redis-server that accepts 20000 clients
// (the default maxclients of 10000 cannot take 10000 goroutines plus the
// setup connection) and returns a client whose pool fits n goroutines.
func benchServer(b *testing.B, n int) redis.UniversalClient {
	b.Helper()
	redistest.Require(b)
	if _, err := EnsureFDLimit(FDsNeeded(n, false)); err != nil {
		b.Fatal(err)
	}
	sb, err := sandbox.Start(context.Background(), sandbox.Config{Args: []string{"--maxclients", "20000"}})
	if err != nil {
		b.Fatalf("start server: %v", err)
	}
	b.Cleanup(func() { _ = sb.Stop() })
	conn, err := redisconn.Open(context.Background(), redisconn.Options{URL: sb.URL, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatalf("connect: %v", err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	c := conn.NewClient(n + 8)
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// BenchmarkRace runs one trial per iteration for each strategy at 200 and
// at 10000 goroutines against a real standalone server. ns/op is the whole
// trial (warm-up of every connection, the race, reading and deleting the
// key); wall-ms/trial is the race alone, from the barrier opening to the
// last reply; admitted/trial shows that the strategy behaved as expected.
// Run it with bench/race.sh.
func BenchmarkRace(b *testing.B) {
	for _, n := range []int{200, 10000} {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			c := benchServer(b, n)
			for _, s := range Names() {
				b.Run(s, func(b *testing.B) {
					var wallMs, p99Ms float64
					admitted, trials := 0, 0
					for b.Loop() {
						res, err := Run(context.Background(), c, Options{Concurrency: n, Limit: DefaultLimit, Trials: 1, Strategies: []string{s}})
						if err != nil {
							b.Fatal(err)
						}
						st := res.Strategies[0]
						if st.Errors[0] > 0 {
							b.Fatalf("%s: %d errors, e.g. %s", s, st.Errors[0], st.ErrorSample)
						}
						wallMs += st.WallMs[0]
						p99Ms += st.TrialP99Ms[0]
						admitted += st.Allowed[0]
						trials++
					}
					b.ReportMetric(wallMs/float64(trials), "wall-ms/trial")
					b.ReportMetric(p99Ms/float64(trials), "p99-ms/trial")
					b.ReportMetric(float64(admitted)/float64(trials), "admitted/trial")
				})
			}
		})
	}
}
