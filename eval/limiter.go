package eval

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/eval/model"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// Algo names a limiter algorithm.
type Algo string

// The algorithms of the embedded scripts.
const (
	TokenBucket   Algo = "token-bucket"
	SlidingWindow Algo = "sliding-window"
	FixedWindow   Algo = "fixed-window"
	GCRA          Algo = "gcra"
)

// Algos lists the algorithms in a stable order.
func Algos() []Algo { return []Algo{TokenBucket, SlidingWindow, FixedWindow, GCRA} }

// ParseAlgo reads an algorithm name; a few common spellings are accepted.
func ParseAlgo(s string) (Algo, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "token-bucket", "token_bucket", "tokenbucket", "bucket":
		return TokenBucket, nil
	case "sliding-window", "sliding_window", "sliding-window-log", "sliding":
		return SlidingWindow, nil
	case "fixed-window", "fixed_window", "fixed":
		return FixedWindow, nil
	case "gcra":
		return GCRA, nil
	}
	return "", exitcode.Usagef("unknown algorithm %q; use token-bucket, sliding-window, fixed-window or gcra", s)
}

// Limits on parameters, so every value stays exact in Lua's doubles.
const (
	maxCapacity    = 1_000_000_000 // tokens; micro-tokens stay below 2^53
	maxRatePerSec  = 1_000_000_000
	maxGCRARate    = 1_000_000 // the emission interval must be at least 1 µs
	maxWindowLimit = 1_000_000 // sliding-window entries in one sorted set
)

// Params configure a limiter. Only the fields of the chosen algorithm are
// read: token-bucket Capacity, Rate; sliding-window and fixed-window Limit,
// Window; gcra Rate, Burst. Cost 0 means 1.
type Params struct {
	Algo     Algo
	Capacity int64
	Rate     rate.Rate
	Cost     int64
	Limit    int64
	Window   time.Duration
	Burst    int64
}

// Decision is the answer of one script call.
type Decision struct {
	Allowed   bool
	Remaining int64
	RetryMs   int64 // 0 if allowed, -1 if the cost can never pass
	ResetMs   int64 // ms until the full quota is back (fixed window: until the window ends)
	Reply     []any // the raw script reply
}

// Policy is the quota policy to advertise (RateLimit-Policy: q and w).
type Policy struct {
	Quota         int64
	WindowSeconds int64
}

// Limiter runs one embedded limiter script with fixed parameters. It is
// safe for concurrent use.
type Limiter struct {
	p      Params
	script *redis.Script
	// NewID returns sliding-window request ids; nil means a random UUID.
	NewID func() string
}

// NewLimiter validates p and returns its limiter. Bad parameters are exit-2
// errors that name the flag to fix.
func NewLimiter(p Params) (*Limiter, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Cost == 0 {
		p.Cost = 1
	}
	return &Limiter{p: p, script: compiled[p.Algo]}, nil
}

func (p Params) validate() error {
	if _, ok := compiled[p.Algo]; !ok {
		return exitcode.Usagef("unknown algorithm %q; use token-bucket, sliding-window, fixed-window or gcra", p.Algo)
	}
	if p.Cost < 0 {
		return exitcode.Usagef("--cost %d must be at least 1", p.Cost)
	}
	cost := max(p.Cost, 1)
	perSec := p.Rate.PerSecond()
	switch p.Algo {
	case TokenBucket:
		if p.Capacity <= 0 || p.Capacity > maxCapacity {
			return exitcode.Usagef("token-bucket needs --capacity from 1 to %d tokens, got %d", maxCapacity, p.Capacity)
		}
		if !(perSec > 0) || perSec > maxRatePerSec || math.IsInf(perSec, 0) {
			return exitcode.Usagef("token-bucket needs --rate greater than 0 (e.g. 5/s or 300/m), got %s", p.Rate)
		}
		if cost > p.Capacity {
			return exitcode.Usagef("--cost %d exceeds --capacity %d: no call could ever pass", cost, p.Capacity)
		}
	case SlidingWindow, FixedWindow:
		maxLimit := int64(maxWindowLimit)
		if p.Algo == FixedWindow {
			maxLimit = 1 << 50
		}
		if p.Limit <= 0 || p.Limit > maxLimit {
			return exitcode.Usagef("%s needs --limit from 1 to %d, got %d", p.Algo, maxLimit, p.Limit)
		}
		if p.Window < time.Millisecond || p.Window%time.Millisecond != 0 {
			return exitcode.Usagef("%s needs --window of whole milliseconds, at least 1ms (e.g. 10s or 1m), got %s", p.Algo, p.Window)
		}
		if cost > p.Limit {
			return exitcode.Usagef("--cost %d exceeds --limit %d: no call could ever pass", cost, p.Limit)
		}
	case GCRA:
		if !(perSec > 0) || perSec > maxGCRARate || math.IsInf(perSec, 0) {
			return exitcode.Usagef("gcra needs --rate greater than 0 and at most %d/s, got %s", maxGCRARate, p.Rate)
		}
		if p.Burst <= 0 || p.Burst > maxCapacity {
			return exitcode.Usagef("gcra needs --burst from 1 to %d, got %d", maxCapacity, p.Burst)
		}
		if cost > p.Burst {
			return exitcode.Usagef("--cost %d exceeds --burst %d: no call could ever pass", cost, p.Burst)
		}
	}
	return nil
}

// Params returns the validated parameters (Cost at least 1).
func (l *Limiter) Params() Params { return l.p }

// Script returns the embedded script the limiter runs.
func (l *Limiter) Script() Script {
	s, _ := ScriptByName(string(l.p.Algo))
	return s
}

// Model returns a fresh pure Go twin of the limiter's script.
func (l *Limiter) Model() model.Limiter {
	switch l.p.Algo {
	case TokenBucket:
		return model.NewTokenBucket(l.p.Capacity, l.p.Rate.PerSecond())
	case SlidingWindow:
		return model.NewSlidingWindow(l.p.Limit, l.p.Window.Milliseconds())
	case FixedWindow:
		return model.NewFixedWindow(l.p.Limit, l.p.Window.Milliseconds())
	default:
		return model.NewGCRA(l.p.Rate.PerSecond(), l.p.Burst)
	}
}

// Policy returns the quota and the time in whole seconds (rounded up) in
// which it is fully restored: a bucket of 10 at 5/s is q=10, w=2.
func (l *Limiter) Policy() Policy {
	secs := func(f float64) int64 { return max(1, int64(math.Ceil(f))) }
	switch l.p.Algo {
	case TokenBucket:
		return Policy{Quota: l.p.Capacity, WindowSeconds: secs(float64(l.p.Capacity) / l.p.Rate.PerSecond())}
	case SlidingWindow, FixedWindow:
		return Policy{Quota: l.p.Limit, WindowSeconds: secs(l.p.Window.Seconds())}
	default:
		return Policy{Quota: l.p.Burst, WindowSeconds: secs(float64(l.p.Burst) / l.p.Rate.PerSecond())}
	}
}

// formatFloat prints f so that Lua's tonumber reads back the same double.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Args returns the script's ARGV for one call, in the documented order;
// nowMs 0 leaves the server's TIME in charge. id is the sliding-window
// request id (ignored by the other algorithms).
func (l *Limiter) Args(nowMs int64, id string) []any {
	var args []any
	switch l.p.Algo {
	case TokenBucket:
		args = []any{l.p.Capacity, formatFloat(l.p.Rate.PerSecond()), l.p.Cost}
	case SlidingWindow:
		args = []any{l.p.Window.Milliseconds(), l.p.Limit, id, l.p.Cost}
	case FixedWindow:
		args = []any{l.p.Window.Milliseconds(), l.p.Limit, l.p.Cost}
	case GCRA:
		args = []any{formatFloat(l.p.Rate.PerSecond()), l.p.Burst, l.p.Cost}
	}
	if nowMs != 0 {
		args = append(args, nowMs)
	}
	return args
}

func (l *Limiter) newID() string {
	if l.NewID != nil {
		return l.NewID()
	}
	return uuid.NewString()
}

// Allow runs the script once for key: one EVALSHA round trip, falling back
// to EVAL when the server answers NOSCRIPT (after SCRIPT FLUSH, a restart or
// a failover). nowMs 0 means the server's TIME.
func (l *Limiter) Allow(ctx context.Context, rdb redis.Scripter, key string, nowMs int64) (Decision, error) {
	reply, err := l.script.Run(ctx, rdb, []string{key}, l.Args(nowMs, l.newID())...).Result()
	if err != nil {
		return Decision{}, fmt.Errorf("run %s script on %s: %w", l.p.Algo, key, err)
	}
	return l.Decode(reply)
}

// Decode turns a raw reply of the limiter's script into a Decision.
func (l *Limiter) Decode(reply any) (Decision, error) {
	arr, ok := reply.([]any)
	want := 4
	if l.p.Algo == FixedWindow {
		want = 3
	}
	if !ok || len(arr) != want {
		return Decision{}, fmt.Errorf("%s script replied %v, want %d integers", l.p.Algo, reply, want)
	}
	n := make([]int64, len(arr))
	for i, v := range arr {
		x, ok := v.(int64)
		if !ok {
			return Decision{}, fmt.Errorf("%s script replied %v: element %d is %T, want an integer", l.p.Algo, reply, i+1, v)
		}
		n[i] = x
	}
	d := Decision{Allowed: n[0] == 1, Remaining: n[1], Reply: arr}
	if l.p.Algo == FixedWindow {
		d.ResetMs = n[2]
		if !d.Allowed {
			d.RetryMs = n[2]
			if l.p.Cost > l.p.Limit {
				d.RetryMs = -1
			}
		}
		return d, nil
	}
	d.RetryMs, d.ResetMs = n[2], n[3]
	return d, nil
}

// IsNoScript reports whether err is the server's NOSCRIPT answer.
func IsNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}
