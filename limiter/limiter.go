package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redisconn"
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

// Limits on parameters, the same the scripts check, so every ms, µs and
// micro-token quantity stays exact in Lua's doubles (below 2^53) and every
// TTL is a valid PEXPIRE.
const (
	MaxCapacity    = 1_000_000_000 // token-bucket tokens, gcra burst; micro-tokens stay below 2^53
	MaxRatePerSec  = 1_000_000_000 // token-bucket refill rate
	MaxFillMs      = 1e12          // token bucket: capacity / rate, ms to fill from empty (~31.7 years)
	MaxGCRARate    = 1_000_000     // the emission interval must be at least 1 µs
	MaxGCRATolUs   = 1e15          // gcra: emission interval x burst, µs (~31.7 years)
	MaxWindowLimit = 1_000_000     // sliding-window entries in one sorted set
	MaxFixedLimit  = 1e15          // fixed-window units per window
	MaxWindowMs    = 1e12          // sliding and fixed window length, ms (~31.7 years)
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
	// Force lets the script replace a key it did not write (another type,
	// other fields, no TTL: see ForeignKeyError). The zero value refuses
	// such a key before anything is written.
	Force bool
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
		return paramErr("", "unknown algorithm %q; use token-bucket, sliding-window, fixed-window or gcra", p.Algo)
	}
	if p.Cost < 0 {
		return paramErr("cost", "{cost} %d must be at least 1", p.Cost)
	}
	cost := max(p.Cost, 1)
	perSec := p.Rate.PerSecond()
	switch p.Algo {
	case TokenBucket:
		if p.Capacity <= 0 || p.Capacity > MaxCapacity {
			return paramErr("capacity", "token-bucket needs {capacity} from 1 to %d tokens, got %d", MaxCapacity, p.Capacity)
		}
		if !(perSec > 0) || perSec > MaxRatePerSec {
			return paramErr("rate", "token-bucket needs {rate} greater than 0 and at most %d/s (e.g. 5/s or 300/m), got %s", MaxRatePerSec, ShowRate(p.Rate))
		}
		// The same expression as token_bucket.lua, so both draw the line alike.
		if fill := float64(p.Capacity*model.Micro) / (perSec * 1000); fill > MaxFillMs {
			return paramErr("capacity", "token-bucket {capacity} %d at {rate} %s takes %s to fill; the most is 1e9 s (about 31 years): raise {rate} or lower {capacity}",
				p.Capacity, ShowRate(p.Rate), longDuration(fill))
		}
		if cost > p.Capacity {
			return paramErr("cost", "{cost} %d exceeds {capacity} %d: no call could ever pass", cost, p.Capacity)
		}
	case SlidingWindow, FixedWindow:
		maxLimit := int64(MaxWindowLimit)
		if p.Algo == FixedWindow {
			maxLimit = MaxFixedLimit
		}
		if p.Limit <= 0 || p.Limit > maxLimit {
			return paramErr("limit", "%s needs {limit} from 1 to %d, got %d", p.Algo, maxLimit, p.Limit)
		}
		if p.Window < time.Millisecond || p.Window%time.Millisecond != 0 {
			return paramErr("window", "%s needs {window} of whole milliseconds, at least 1ms (e.g. 10s or 1m), got %s", p.Algo, p.Window)
		}
		if p.Window.Milliseconds() > MaxWindowMs {
			return paramErr("window", "%s {window} %s is too long; the most is %s (1e12 ms)", p.Algo, p.Window, time.Duration(MaxWindowMs)*time.Millisecond)
		}
		if cost > p.Limit {
			return paramErr("cost", "{cost} %d exceeds {limit} %d: no call could ever pass", cost, p.Limit)
		}
	case GCRA:
		if !(perSec > 0) || perSec > MaxGCRARate {
			return paramErr("rate", "gcra needs {rate} greater than 0 and at most %d/s, got %s", MaxGCRARate, ShowRate(p.Rate))
		}
		if p.Burst <= 0 || p.Burst > MaxCapacity {
			return paramErr("burst", "gcra needs {burst} from 1 to %d, got %d", MaxCapacity, p.Burst)
		}
		// The same expression as gcra.lua: emission interval (µs) x burst.
		if tol := math.Floor(1e6/perSec+0.5) * float64(p.Burst); tol > MaxGCRATolUs {
			return paramErr("burst", "gcra {burst} %d at {rate} %s spans %s; the most is 1e9 s (about 31 years): raise {rate} or lower {burst}",
				p.Burst, ShowRate(p.Rate), longDuration(tol/1000))
		}
		if cost > p.Burst {
			return paramErr("cost", "{cost} %d exceeds {burst} %d: no call could ever pass", cost, p.Burst)
		}
	}
	return nil
}

// A ParamError is a bad limiter parameter. Param is the parameter at
// fault ("capacity", "rate", "limit", "window", "burst", "cost"; "" for
// the algorithm); the message names parameters by these words. Commands
// show them as their own spelling with Named: eval and serve as flags
// (--capacity), load --expect as its model keys (burst=). Error names
// them as plain words. Every ParamError is bad input (exit 2).
type ParamError struct {
	Param string
	tmpl  string // the message with {param} where a parameter is named
}

func paramErr(param, format string, args ...any) error {
	return exitcode.UsageError(&ParamError{Param: param, tmpl: fmt.Sprintf(format, args...)})
}

func (e *ParamError) Error() string { return e.Named(func(p string) string { return p }) }

// Named is the message with each parameter spelled by name(param).
func (e *ParamError) Named(name func(param string) string) string {
	return paramRef.ReplaceAllStringFunc(e.tmpl, func(ref string) string { return name(ref[1 : len(ref)-1]) })
}

var paramRef = regexp.MustCompile(`\{(capacity|rate|limit|window|burst|cost)\}`)

// ShowRate prints a rate for a message: as given, unless that takes more
// than a few digits (1e-300/s), then in per-second scientific notation.
func ShowRate(r rate.Rate) string {
	if s := r.String(); len(s) <= 24 {
		return s
	}
	return strconv.FormatFloat(r.PerSecond(), 'g', 4, 64) + "/s"
}

// longDuration prints ms for a message, in years when it is that long.
func longDuration(ms float64) string {
	const year = 365.25 * 24 * 3600 * 1000
	if math.IsInf(ms, 0) || ms > 1e6*year {
		return "more than a million years"
	}
	if ms >= year {
		return strconv.FormatFloat(ms/year, 'f', 1, 64) + " years"
	}
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Second).String()
}

// Params returns the validated parameters (Cost at least 1).
func (l *Limiter) Params() Params { return l.p }

// RedisScript is the script as go-redis runs it (EVALSHA with EVAL on
// NOSCRIPT, or pipelined EvalSha with Load).
func (l *Limiter) RedisScript() *redis.Script { return l.script }

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

// formatFloat prints f as a plain decimal ("1000000", "0.00001", never
// "1e+06") with the fewest digits that read back as the same double: real
// Redis's Lua reads exponents, but the embedded miniredis's tonumber does
// not. The limits keep rates between 1e-9 and 1e9, so the digits are few.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

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
	switch {
	case l.p.Force && nowMs != 0:
		args = append(args, nowMs, "1")
	case l.p.Force:
		args = append(args, "", "1") // '' is the server's TIME
	case nowMs != 0:
		args = append(args, nowMs)
	}
	return args
}

func (l *Limiter) NextID() string {
	if l.NewID != nil {
		return l.NewID()
	}
	return uuid.NewString()
}

// Allow runs the script once for key: one EVALSHA round trip, falling back
// to EVAL when the server answers NOSCRIPT (after SCRIPT FLUSH, a restart or
// a failover). nowMs 0 means the server's TIME.
func (l *Limiter) Allow(ctx context.Context, rdb redis.Scripter, key string, nowMs int64) (Decision, error) {
	reply, err := l.script.Run(ctx, rdb, []string{key}, l.Args(nowMs, l.NextID())...).Result()
	if err != nil {
		return Decision{}, l.CallError(ctx, rdb, key, err)
	}
	return l.Decode(reply)
}

// runError explains a failed call of the limiter's script on key: a key
// the script refused or one of another type is exit 2 (ForeignKeyError);
// a command the ACL user may not run, a BUSY server or an unreachable one
// is exit 3 with what to do.
func (l *Limiter) CallError(ctx context.Context, rdb any, key string, err error) error {
	if ferr := foreignKey(key, l.p.Algo, err); ferr != nil {
		return ferr
	}
	if werr := wrongType(ctx, rdb, key, l.p.Algo, err); werr != nil {
		return werr
	}
	return redisconn.ServerError(fmt.Sprintf("run %s script on %s", l.p.Algo, key), err, scriptACL[l.p.Algo])
}

// ForeignKeyPrefix starts the error reply a limiter script gives for a key
// it did not write: "FOREIGNKEY <type> <why>; ...".
const ForeignKeyPrefix = "FOREIGNKEY"

// ForeignKeyError is a key a limiter script refused to write because it
// holds data the script did not write (Params.Force replaces it). Errors
// of this type are exit 2.
type ForeignKeyError struct {
	Key  string
	Algo Algo
	Type string // the key's Redis type: hash, zset, string, list, ...
	Why  string // e.g. "has fields other than tokens and ts"
}

func (e *ForeignKeyError) Error() string {
	return fmt.Sprintf("key %s holds a %s the %s script did not write (the %s %s); nothing was written: pick another key, or pass --force to replace it",
		e.Key, e.Type, e.Algo, e.Type, e.Why)
}

// foreignKey turns a script's FOREIGNKEY reply into an exit-2
// *ForeignKeyError; it returns nil for any other error.
func foreignKey(key string, algo Algo, err error) error {
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.HasPrefix(rerr.Error(), ForeignKeyPrefix+" ") {
		return nil
	}
	msg := strings.TrimPrefix(rerr.Error(), ForeignKeyPrefix+" ")
	msg, _, _ = strings.Cut(msg, ";")
	typ, why, _ := strings.Cut(msg, " ")
	return exitcode.UsageError(&ForeignKeyError{Key: key, Algo: algo, Type: typ, Why: why})
}

// scriptACL lists the ACL rules a limiter script needs besides a key
// pattern: EVALSHA, EVAL (after NOSCRIPT), what the script calls (TYPE
// names a refused key's type, DEL replaces it with --force or ends a fixed
// window) and PTTL, which eval reads after each call.
var scriptACL = map[Algo]string{
	TokenBucket:   "+evalsha +eval +time +pttl +hmget +hlen +hset +pexpire +type +del",
	SlidingWindow: "+evalsha +eval +time +pttl +zrange +zremrangebyscore +zcard +zadd +pexpire +type +del",
	FixedWindow:   "+evalsha +eval +time +pttl +hmget +hlen +hincrby +hset +pexpire +type +del",
	GCRA:          "+evalsha +eval +time +pttl +get +set +type +del",
}

// ACL returns the ACL rules (besides a key pattern such as ~rl:*) the
// limiter's script needs, e.g. "+evalsha +eval +time ...".
func (l *Limiter) ACL() string { return scriptACL[l.p.Algo] }

// stateType is the Redis type each script keeps its state in.
var stateType = map[Algo]string{TokenBucket: "hash", SlidingWindow: "zset", FixedWindow: "hash", GCRA: "string"}

// StateType is the Redis type the algorithm's script keeps its state in:
// hash, zset or string.
func (a Algo) StateType() string { return stateType[a] }

// wrongType turns the server's WRONGTYPE answer for key into a one-line
// exit-2 error (the key is taken by other data: bad input); it returns nil
// for any other error. When rdb can, the key's actual type is named.
func wrongType(ctx context.Context, rdb any, key string, algo Algo, err error) error {
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		return nil
	}
	holds := "another type of value"
	if c, ok := rdb.(redis.Cmdable); ok {
		if t, terr := c.Type(ctx, key).Result(); terr == nil && t != "none" {
			holds = "a " + t
		}
	}
	return exitcode.Usagef("key %s holds %s, not the %s the %s script keeps there; nothing was written: pick another key, or pass --force to replace it",
		key, holds, stateType[algo], algo)
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
