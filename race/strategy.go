package race

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// Names lists the built-in strategies in their default order.
func Names() []string { return []string{Naive, Multi, Watch, Incr, Script} }

// strategy is one way of deciding a request against a key. call runs on
// the goroutine's own connection; prepare runs once before the first trial;
// final reads what Redis recorded after a trial.
type strategy interface {
	name() string
	label() string
	atomic() bool
	prepare(ctx context.Context, node *redis.Client) error
	call(ctx context.Context, c *redis.Conn, key string, i int) outcome
	final(ctx context.Context, client redis.UniversalClient, key string) (*int64, error)
}

var builtins = map[string]func(Options) strategy{
	Naive: func(o Options) strategy { return &getSet{limit: o.Limit} },
	Multi: func(o Options) strategy { return &getSet{limit: o.Limit, multi: true} },
	Watch: func(o Options) strategy { return &watch{limit: o.Limit, attempts: o.WatchAttempts} },
	Incr:  func(o Options) strategy { return &incr{limit: o.Limit} },
	Script: func(o Options) strategy {
		return &tokenBucket{limit: o.Limit}
	},
}

// decide stands for the application's decision between its read and its
// write: it yields the processor once, as a server runs other requests in
// between. Without it, a goroutine whose GET reply is already in the
// socket buffer sends its SET at once, and on a machine with few cores,
// where the server is often woken on the same core as the sender, each
// goroutine then runs GET and SET back to back: the harness would serialise
// the race that truly parallel clients have. The yield lets the goroutines
// already released send their reads first; it holds nobody back (no second
// barrier), and the atomic strategies make no decision between a read and
// a write, so it does not touch them.
func decide() { runtime.Gosched() }

// counter is what the counter strategies share: the final value is the
// integer in the key, 0 when it does not exist.
type counter struct{}

func (counter) prepare(context.Context, *redis.Client) error { return nil }

func (counter) final(ctx context.Context, client redis.UniversalClient, key string) (*int64, error) {
	v, err := readCount(ctx, client, key)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func readCount(ctx context.Context, c redis.Cmdable, key string) (int64, error) {
	v, err := c.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return v, err
}

// getSet is naive (GET, decide, SET) and, with multi, the same with the SET
// wrapped in MULTI/EXEC, which changes nothing: the decision still happens
// between the read and the write.
type getSet struct {
	counter
	limit int64
	multi bool
}

func (s *getSet) name() string {
	if s.multi {
		return Multi
	}
	return Naive
}

func (s *getSet) label() string {
	if s.multi {
		return "GET+MULTI/SET"
	}
	return "naive GET+SET"
}

func (s *getSet) atomic() bool { return false }

func (s *getSet) call(ctx context.Context, c *redis.Conn, key string, _ int) outcome {
	used, err := readCount(ctx, c, key)
	if err != nil {
		return outcome{err: err}
	}
	decide()
	if used >= s.limit {
		return outcome{}
	}
	if s.multi {
		_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, used+1, KeyTTL)
			return nil
		})
	} else {
		err = c.Set(ctx, key, used+1, KeyTTL).Err()
	}
	if err != nil {
		return outcome{err: err}
	}
	return outcome{admitted: true, wrote: true}
}

// watch is optimistic locking: WATCH, GET, decide, MULTI/SET/EXEC; EXEC
// fails when another client wrote the key after WATCH, and the request
// starts over, at most attempts times, then gives up (refused).
type watch struct {
	counter
	limit    int64
	attempts int
}

func (*watch) name() string  { return Watch }
func (*watch) label() string { return "WATCH/MULTI" }
func (*watch) atomic() bool  { return true }

func (s *watch) call(ctx context.Context, c *redis.Conn, key string, _ int) outcome {
	var o outcome
	for attempt := 1; attempt <= s.attempts; attempt++ {
		if attempt > 1 {
			o.retries++
		}
		if err := c.Do(ctx, "WATCH", key).Err(); err != nil {
			o.err = err
			return o
		}
		used, err := readCount(ctx, c, key)
		if err != nil {
			_ = c.Do(ctx, "UNWATCH").Err()
			o.err = err
			return o
		}
		decide()
		if used >= s.limit {
			if err := c.Do(ctx, "UNWATCH").Err(); err != nil {
				o.err = err
			}
			return o
		}
		_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, used+1, KeyTTL)
			return nil
		})
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			o.err = err
			return o
		}
		o.admitted, o.wrote = true, true
		return o
	}
	o.gaveUp = true
	return o
}

// incr is INCR then compare: the increment is atomic, so at most limit
// callers see a value up to the limit. The first caller sets the TTL.
type incr struct {
	counter
	limit int64
}

func (*incr) name() string  { return Incr }
func (*incr) label() string { return "INCR" }
func (*incr) atomic() bool  { return true }

func (s *incr) call(ctx context.Context, c *redis.Conn, key string, _ int) outcome {
	n, err := c.Incr(ctx, key).Result()
	if err != nil {
		return outcome{err: err}
	}
	o := outcome{admitted: n <= s.limit, wrote: true}
	if n == 1 {
		if err := c.PExpire(ctx, key, KeyTTL).Err(); err != nil {
			o.err = err
		}
	}
	return o
}

// refillPer is the time in which the race's token bucket would refill
// completely: a little under KeyTTL, so the TTL the script sets on every
// write (the time until the bucket is full again, plus a second) stays
// within KeyTTL like every other key of the run.
const refillPer = KeyTTL - 2*time.Second

// tokenBucket is the project's token bucket script with capacity = limit.
// Every call of a run passes the same now_ms (the script's optional clock
// argument, read when the run prepares), so no time passes for the bucket
// and nothing refills during a trial, however long it takes or whatever
// the limit; the refill rate, limit tokens per refillPer, only bounds the
// key's TTL.
type tokenBucket struct {
	limit   int64
	limiter *limiter.Limiter
	nowMs   int64
}

func (*tokenBucket) name() string  { return Script }
func (*tokenBucket) label() string { return "Lua script" }
func (*tokenBucket) atomic() bool  { return true }

func (s *tokenBucket) newLimiter() (*limiter.Limiter, error) {
	refill := rate.Rate{Count: float64(s.limit), Per: refillPer}
	return limiter.NewLimiter(limiter.Params{Algo: limiter.TokenBucket, Capacity: s.limit, Rate: refill, Cost: 1})
}

func (s *tokenBucket) prepare(ctx context.Context, node *redis.Client) error {
	l, err := s.newLimiter()
	if err != nil {
		return err
	}
	s.limiter, s.nowMs = l, time.Now().UnixMilli()
	// Loaded before the barrier, so every call is one EVALSHA that hits.
	if err := redislimit.Script(l).Load(ctx, node).Err(); err != nil {
		return fmt.Errorf("load the token bucket script: %w", err)
	}
	return nil
}

func (s *tokenBucket) call(ctx context.Context, c *redis.Conn, key string, _ int) outcome {
	d, err := redislimit.Allow(ctx, c, s.limiter, key, s.nowMs)
	if err != nil {
		return outcome{err: err}
	}
	return outcome{admitted: d.Allowed, wrote: d.Allowed}
}

// final returns the whole tokens taken from the bucket: capacity minus
// the whole tokens left (the script stores micro-tokens).
func (s *tokenBucket) final(ctx context.Context, client redis.UniversalClient, key string) (*int64, error) {
	v, err := client.HGet(ctx, key, "tokens").Result()
	taken := int64(0)
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return nil, err
	default:
		micro, perr := strconv.ParseFloat(v, 64)
		if perr != nil {
			return nil, fmt.Errorf("token bucket state tokens=%q: %w", v, perr)
		}
		taken = s.limit - int64(math.Floor(micro/1e6))
	}
	return &taken, nil
}
