package eval

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// SimOptions configure Simulate.
type SimOptions struct {
	Params   limiter.Params
	Arrivals rate.Rate     // constant arrival rate, e.g. 20/s
	For      time.Duration // virtual duration, e.g. 30s
	Server   redisconn.Server
}

// Bounds of one simulation, so its time and memory stay small: each
// arrival is one script call, each virtual second one per_second entry.
const (
	MaxArrivals = 1_000_000
	MaxSimFor   = 24 * time.Hour
)

// simBatch is how many calls go in one pipeline.
const simBatch = 1000

// ArrivalTimes returns the virtual ms of a constant arrival stream: the
// due times of rate.Schedule, the plan `load` follows too (arrival i at
// floor(i x Per / Count) ns from the start, for every i due before d),
// truncated to the millisecond (20/s for 30s: 0, 50, ..., 29950). d is at
// most MaxSimFor and the stream at most MaxArrivals calls; anything else
// is bad input.
func ArrivalTimes(r rate.Rate, d time.Duration) ([]int64, error) {
	if r.IsZero() || !(r.Count > 0) || r.Per <= 0 || math.IsInf(r.Count, 0) {
		return nil, exitcode.Usagef("--arrivals needs a rate greater than 0, e.g. 20/s")
	}
	if d <= 0 {
		return nil, exitcode.Usagef("--for needs a positive duration, e.g. 30s")
	}
	if d > MaxSimFor {
		return nil, exitcode.Usagef("--for %s is longer than the %s a simulation may cover; simulate a shorter span", d, MaxSimFor)
	}
	if gap := float64(r.Per) / r.Count; !(gap > 0) || math.IsInf(gap, 0) || math.IsNaN(gap) {
		return nil, exitcode.Usagef("--arrivals %s is too slow: the gap between arrivals is not a finite time; pass a rate such as 20/s or 1/h", limiter.ShowRate(r))
	}
	if n, err := rate.PlannedCount(r, d); err != nil {
		return nil, exitcode.Usagef("--arrivals %s: %v", limiter.ShowRate(r), err)
	} else if n.Cmp(big.NewInt(MaxArrivals)) > 0 {
		return nil, exitcode.Usagef("--arrivals %s for %s is %s calls; the most is %d: lower --arrivals or --for", limiter.ShowRate(r), d, n, MaxArrivals)
	}
	s, err := rate.NewSchedule(r, d)
	if err != nil {
		return nil, exitcode.Usagef("--arrivals %s: %v", limiter.ShowRate(r), err)
	}
	times := make([]int64, s.Planned())
	for i := range times {
		due, _ := s.Due(int64(i))
		times[i] = int64(due / time.Millisecond)
	}
	return times, nil
}

// Simulate runs the limiter's real script on the server for a constant
// arrival stream in virtual time: every call passes now_ms, so 30 s of
// arrivals take one pipelined round trip per thousand calls. It uses a
// fresh key of its own and deletes it afterwards. The pure Go model runs
// beside it, and the result says whether both decided alike.
func Simulate(ctx context.Context, c redis.UniversalClient, opts SimOptions) (SimResult, error) {
	l, err := limiter.NewLimiter(opts.Params)
	if err != nil {
		return SimResult{}, err
	}
	times, err := ArrivalTimes(opts.Arrivals, opts.For)
	if err != nil {
		return SimResult{}, err
	}
	p := l.Params()
	res := SimResult{
		Header: doc.Header{Kind: SimKind, Version: SimVersion, Server: &opts.Server}, Algo: string(p.Algo),
		Params: paramsDoc(l),
		Rate:   opts.Arrivals.String(), RatePerS: opts.Arrivals.PerSecond(), ForMs: opts.For.Milliseconds(), Arrivals: len(times),
		PerSecond: make([]int, int(math.Ceil(opts.For.Seconds()))), FirstRefMs: -1,
	}
	// Start virtual time at the server's clock, so real TTLs run behind it.
	now, err := c.Time(ctx).Result()
	if err != nil {
		return res, redisError("read the server clock", err)
	}
	base := now.UnixMilli()
	key := "ratelimit:simulate:{" + uuid.NewString() + "}"
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Del(dctx, key).Err()
	}()

	start := time.Now()
	// Loading first (a cluster client loads on every primary) saves a round
	// trip of NOSCRIPT answers; runVirtual copes without it too.
	if err := redislimit.Script(l).Load(ctx, c).Err(); err != nil {
		return res, redisError("load the "+string(p.Algo)+" script", err)
	}
	decisions, pipes, err := runVirtual(ctx, l, c, key, base, times)
	res.WallMs = float64(time.Since(start).Microseconds()) / 1000
	res.Pipelines = pipes
	if err != nil {
		return res, err
	}
	m := l.Model()
	res.Agrees = true
	for i, d := range decisions {
		want := m.Allow(base+times[i], p.Cost)
		if want.Allowed {
			res.Model++
		}
		if want.Allowed != d.Allowed || want.Remaining != d.Remaining {
			res.Agrees = false
		}
		if d.Allowed {
			res.Admitted++
			if s := int(times[i] / 1000); s < len(res.PerSecond) {
				res.PerSecond[s]++
			}
		} else if res.FirstRefMs < 0 {
			res.FirstRefMs = times[i]
		}
	}
	res.Refused = res.Arrivals - res.Admitted
	return res, nil
}

// runVirtual calls the script once per arrival at base+times[i] ms through
// pipelines of EVALSHA. When the server does not have the script (first
// use, SCRIPT FLUSH, restart, failover) the calls answer NOSCRIPT: the
// script is loaded and the calls resume at the first one that failed. The
// calls of a pipeline run in order on one connection, so none after it ran.
func runVirtual(ctx context.Context, l *limiter.Limiter, c redis.UniversalClient, key string, base int64, times []int64) ([]limiter.Decision, int, error) {
	sha := redislimit.Script(l).Hash()
	out := make([]limiter.Decision, 0, len(times))
	pipes := 0
	reloads := 0
	for len(out) < len(times) {
		from := len(out)
		to := min(from+simBatch, len(times))
		pipe := c.Pipeline()
		cmds := make([]*redis.Cmd, 0, to-from)
		for i := from; i < to; i++ {
			cmds = append(cmds, pipe.EvalSha(ctx, sha, []string{key}, l.Args(base+times[i], "sim-"+strconv.Itoa(i))...))
		}
		_, _ = pipe.Exec(ctx)
		pipes++
		for j, cmd := range cmds {
			reply, err := cmd.Result()
			if redislimit.IsNoScript(err) && reloads < 3 {
				for _, rest := range cmds[j:] {
					if !redislimit.IsNoScript(rest.Err()) {
						return nil, pipes, fmt.Errorf("simulate: the script cache changed during the run; run again")
					}
				}
				reloads++
				if err := redislimit.Script(l).Load(ctx, c).Err(); err != nil {
					return nil, pipes, redisError("reload the "+string(l.Params().Algo)+" script", err)
				}
				break
			}
			if err != nil {
				return nil, pipes, redisError(fmt.Sprintf("simulate call %d", from+j+1), err)
			}
			d, err := l.Decode(reply)
			if err != nil {
				return nil, pipes, err
			}
			out = append(out, d)
		}
	}
	return out, pipes, nil
}
