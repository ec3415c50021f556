package redislimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// exactParams are limiters that admit exactly n from a fresh key within a
// test's few seconds (nothing refills meanwhile), one per scripted
// algorithm.
func exactParams(n int64) []limiter.Params {
	slow := rate.Rate{Count: 1, Per: time.Hour}
	return []limiter.Params{
		{Algo: limiter.TokenBucket, Capacity: n, Rate: slow},
		{Algo: limiter.GCRA, Rate: slow, Burst: n},
		{Algo: limiter.FixedWindow, Limit: n, Window: time.Hour},
		{Algo: limiter.SlidingWindow, Limit: n, Window: time.Hour},
	}
}

// Store.Allow, on the connections a store owns (a single-node client) or
// through Allow (a cluster client), admits exactly what the limiter
// allows, also when many goroutines decide on one key at once.
func TestStoreAdmitsExactly(t *testing.T) {
	ctx := context.Background()
	for _, tg := range redistest.All(t) {
		// one store per client, as serve has: a store per case would keep
		// the last case's connections for a second (idleAfter) and leave
		// the next ones waiting for the pool
		s := NewStore(tg.Client)
		for _, p := range exactParams(25) {
			t.Run(tg.Name+"/"+string(p.Algo), func(t *testing.T) {
				l, err := limiter.NewLimiter(p)
				if err != nil {
					t.Fatal(err)
				}
				_, owns := tg.Client.(*redis.Client)
				if (s.owned != nil) != owns {
					t.Fatalf("store owns connections: %v, want %v for %T", s.owned != nil, owns, tg.Client)
				}
				key := redistest.Key(t, string(p.Algo))
				redistest.Cleanup(t, tg.Client, key)
				var allowed, refused atomic.Int64
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for range 5 {
							d, err := s.Allow(ctx, l, key)
							if err != nil {
								t.Errorf("Allow: %v", err)
								return
							}
							if d.Allowed {
								allowed.Add(1)
							} else {
								refused.Add(1)
							}
						}
					})
				}
				wg.Wait()
				if allowed.Load() != 25 || refused.Load() != 15 {
					t.Errorf("allowed %d refused %d, want 25 15", allowed.Load(), refused.Load())
				}
			})
		}
	}
}

// A store's connection killed between two decisions (a Redis restart, a
// CLIENT KILL, a proxy's idle timeout) costs no decision: the next one
// runs again on the shared client, once, and the store takes a new
// connection after it. A flushed script cache is loaded again (EVAL).
func TestStoreSurvivesLostConnectionAndFlush(t *testing.T) {
	ctx := context.Background()
	tg := redistest.Standalone(t)
	admin := tg.Client.(*redis.Client)
	// a window that admits all: its count is the number of decisions made
	l, err := limiter.NewLimiter(limiter.Params{Algo: limiter.FixedWindow, Limit: 100, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ro := *admin.Options()
	c := redis.NewClient(&ro)
	t.Cleanup(func() { _ = c.Close() })
	s := NewStore(c)
	key := redistest.Key(t, "fw")
	redistest.Cleanup(t, admin, key)
	allowed := 0
	decide := func(what string) {
		t.Helper()
		d, err := s.Allow(ctx, l, key)
		if err != nil {
			t.Fatalf("Allow after %s: %v", what, err)
		}
		if d.Allowed {
			allowed++
		}
	}
	decide("nothing")
	decide("nothing")
	if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
		t.Fatalf("CLIENT KILL: %v", err)
	}
	decide("CLIENT KILL")
	decide("CLIENT KILL")
	if err := admin.ScriptFlush(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	decide("SCRIPT FLUSH")
	for range 5 {
		decide("SCRIPT FLUSH")
	}
	// a decision counted twice (or not at all) would show in the count
	if n, err := admin.HGet(ctx, key, "n").Int64(); err != nil || n != 10 {
		t.Errorf("the window counted %d requests (%v), want 10", n, err)
	}
	if allowed != 10 {
		t.Errorf("allowed %d of 10, want 10", allowed)
	}
}

// A key holding something the script did not write is refused the same
// way through the store as through Allow: exit 2, naming the key.
func TestStoreForeignKey(t *testing.T) {
	ctx := context.Background()
	tg := redistest.Standalone(t)
	l, err := limiter.NewLimiter(limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.Rate{Count: 1, Per: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	key := redistest.Key(t, "foreign")
	redistest.Cleanup(t, tg.Client, key)
	if err := tg.Client.Set(ctx, key, "not a bucket", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, want := Allow(ctx, tg.Client, l, key, 0)
	_, got := NewStore(tg.Client).Allow(ctx, l, key)
	if exitcode.Code(got) != exitcode.Usage || got == nil || want == nil || got.Error() != want.Error() {
		t.Errorf("Store.Allow = %v (exit %d), want Allow's %v", got, exitcode.Code(got), want)
	}
	var fk *limiter.ForeignKeyError
	if !errors.As(got, &fk) && !errors.As(want, &fk) {
		t.Logf("neither is a ForeignKeyError: %v", got)
	}
}

// A decision on the store's own connections allocates at most 4 objects:
// the reply (its slice and the integers above 255 it holds) and the
// decoding; the command is built once.
func TestStoreDecisionAllocs(t *testing.T) {
	ctx := context.Background()
	tg := redistest.Standalone(t)
	l, err := limiter.NewLimiter(limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(tg.Client)
	key := redistest.Key(t, "allocs")
	redistest.Cleanup(t, tg.Client, key)
	for range 3 { // the store takes and renews its connection
		if _, err := s.Allow(ctx, l, key); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := s.Allow(ctx, l, key); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Errorf("Store.Allow: %.1f allocations per decision, want at most 4", allocs)
	}
}

// A decision cut by the caller's deadline (serve's --limiter-timeout) may
// leave its reply on the way: the store gives that connection up, and the
// next decisions run as they should.
func TestStoreAfterDeadline(t *testing.T) {
	ctx := context.Background()
	tg := redistest.Standalone(t)
	admin := tg.Client.(*redis.Client)
	l, err := limiter.NewLimiter(limiter.Params{Algo: limiter.FixedWindow, Limit: 100, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ro := *admin.Options()
	c := redis.NewClient(&ro)
	t.Cleanup(func() { _ = c.Close() })
	s := NewStore(c)
	key := redistest.Key(t, "deadline")
	redistest.Cleanup(t, admin, key)
	if _, err := s.Allow(ctx, l, key); err != nil {
		t.Fatal(err)
	}
	// the pause lasts until this test ends it (a pause timed to end
	// by itself could end before the decision is sent on a busy machine)
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 30_000, "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	unpause := func() error { return admin.Do(ctx, "CLIENT", "UNPAUSE").Err() }
	t.Cleanup(func() { _ = unpause() })
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = s.Allow(short, l, key)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || s.Reason(err) != limiter.FailTimeout {
		t.Fatalf("Allow during a pause with a 50 ms deadline: %v (reason %v), want a timeout", err, s.Reason(err))
	}
	// the pause ends; the late decision runs (or is dropped with its
	// connection)
	if err := unpause(); err != nil {
		t.Fatalf("CLIENT UNPAUSE: %v", err)
	}
	for i := range 5 {
		if d, err := s.Allow(ctx, l, key); err != nil || !d.Allowed {
			t.Fatalf("decision %d after the deadline: %+v, %v", i, d, err)
		}
	}
	// 1 before, 5 after, and the one cut, which the server ran when the
	// pause ended or dropped with its connection
	if n, err := admin.HGet(ctx, key, "n").Int64(); err != nil || n < 6 || n > 7 {
		t.Errorf("the window counted %d (%v), want 6 or 7", n, err)
	}
}
