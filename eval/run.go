// Package eval runs rate-limiter Lua scripts against Redis: the embedded
// limiter scripts of package limiter (token bucket, sliding-window log,
// fixed window, GCRA), the user's own scripts in redis-cli --eval syntax,
// and simulations that drive a script through virtual time. It knows
// nothing of cobra; the command in cmd/eval.go fills Options and renders
// the Result.
package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/userfile"
	"github.com/ratelimit-dev/ratelimit/words"
)

// Options configure Run.
type Options struct {
	// Params choose and configure an embedded limiter script. Ignored when
	// ScriptFile is set.
	Params limiter.Params
	// Key is the key to limit; or give Identity to build "rl:{<id>}:<algo>".
	Key          string
	Identity     string
	HashIdentity bool // replace the identity with a short SHA-256 prefix

	Count    int           // calls to make; 0 means 1
	Interval time.Duration // pause between calls

	// ScriptFile is the user's Lua file and ScriptWords the words after it,
	// "KEY [KEY...] , ARG [ARG...]" as for redis-cli --eval.
	ScriptFile  string
	ScriptWords []string
	// ScriptSource is the file's content when the caller already read it
	// (with ReadScript); empty means Run reads ScriptFile.
	ScriptSource string

	// Function loads the script as a Redis Functions library and calls it
	// with FCALL instead of EVALSHA.
	Function bool

	// Reply says what each element of a user script's reply means
	// (--reply); the zero value is the default reading.
	Reply judge.Reply
	// Expect is the model the script implements (--expect): each call's
	// decision is compared with the model's at that call's time
	// (judge.Sequential); nil for none.
	Expect *judge.Expectation

	// Server is copied into the result.
	Server redisconn.Server

	// OwnServer says this process started the server and nobody else uses
	// it: a user script that runs past the client's timeout is then stopped
	// with SCRIPT KILL (FUNCTION KILL with Function) instead of being left
	// to block the server. Never set it for a server another process
	// started (a sandbox, a shared or production server).
	OwnServer bool
	// AllowNoTTL accepts keys a user script leaves without a TTL
	// (--allow-no-ttl); otherwise they fail the TTL check.
	AllowNoTTL bool

	// Now reads the clock for the {now_ms} placeholder; nil is time.Now.
	Now func() time.Time
	// Sleep waits between calls; nil sleeps on a real timer. Tests inject
	// one that only records.
	Sleep func(ctx context.Context, d time.Duration) error
	// NewID returns sliding-window request ids; nil means random UUIDs.
	NewID func() string
}

// paramsDoc is the document form of a limiter's parameters and policy.
func paramsDoc(l *limiter.Limiter) ParamsDoc {
	pol := l.Policy()
	return ParamsDoc{ParamsDoc: l.Params().Doc(), PolicyQuota: pol.Quota, PolicyWindowMs: pol.WindowSeconds * 1000}
}

// KeyFor builds the key of one identity, "rl:{<id>}:<algo>". The hash tag
// keeps all of one identity's keys in one Cluster slot. With hash the id is
// replaced by the first 16 hex digits of its SHA-256, so API keys never
// appear in key names.
func KeyFor(id string, algo limiter.Algo, hash bool) (string, error) {
	if id == "" {
		return "", exitcode.Usagef("--identity is empty; pass the caller's id, e.g. --identity user42")
	}
	if hash {
		sum := sha256.Sum256([]byte(id))
		id = hex.EncodeToString(sum[:])[:16]
	} else if strings.ContainsAny(id, "{}") {
		return "", exitcode.Usagef("--identity %q contains { or }, which would break the key's hash tag; add --hash-identity", id)
	}
	return fmt.Sprintf("rl:{%s}:%s", id, algo), nil
}

// Ceilings of a run of calls: every call is kept in the document and
// shown, and eval is for watching a limiter call by call, not for load.
const (
	// MaxCount bounds -n.
	MaxCount = 100_000
	// MaxInterval bounds --interval.
	MaxInterval = time.Hour
	// MaxSpan bounds the pauses of a whole run, (n-1) x --interval.
	MaxSpan = 24 * time.Hour
)

// CheckCalls checks -n and --interval against the ceilings (exit 2 naming
// the one passed); count 0 means 1.
func CheckCalls(count int, interval time.Duration) error {
	switch {
	case count < 0:
		return exitcode.Usagef("--count %d must be at least 1", count)
	case count > MaxCount:
		return exitcode.Usagef("-n %d is above the ceiling of %s calls (each is kept and shown); for load use 'ratelimit load' or 'eval --simulate'", count, words.Commas(MaxCount))
	case interval < 0:
		return exitcode.Usagef("--interval %s must not be negative", interval)
	case interval > MaxInterval:
		return exitcode.Usagef("--interval %s is above the ceiling of %s", words.Span(interval), words.Span(MaxInterval))
	case count > 1 && interval > 0 && time.Duration(count-1) > MaxSpan/interval:
		return exitcode.Usagef("-n %d with --interval %s would pause for %.0fh in all, above the ceiling of %s", count, interval, float64(count-1)*interval.Hours(), words.Span(MaxSpan))
	}
	return nil
}

// Run makes the calls Options ask for and returns what each one answered.
func Run(ctx context.Context, c redis.UniversalClient, opts Options) (Result, error) {
	if err := CheckCalls(opts.Count, opts.Interval); err != nil {
		return Result{}, err
	}
	if opts.Count == 0 {
		opts.Count = 1
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ScriptFile != "" {
		return runUserScript(ctx, c, opts)
	}
	return runLimiter(ctx, c, opts)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func runLimiter(ctx context.Context, c redis.UniversalClient, opts Options) (Result, error) {
	if len(opts.ScriptWords) > 0 {
		return Result{}, exitcode.Usagef("unexpected arguments %q; give one KEY, or use --script FILE KEY , ARG", opts.ScriptWords)
	}
	l, err := limiter.NewLimiter(opts.Params)
	if err != nil {
		return Result{}, err
	}
	key, err := ResolveKey(opts, l.Params().Algo)
	if err != nil {
		return Result{}, err
	}
	p := l.Params()
	res := newResult(opts.Server)
	res.Algo = string(p.Algo)
	res.Key = key
	res.IdentityHashed = opts.Identity != "" && opts.HashIdentity
	pd := paramsDoc(l)
	res.Params = &pd
	s := l.Script()
	var call caller = &evalCaller{script: redislimit.Script(l), c: c}
	res.Script = ScriptDoc{Name: s.File, SHA1: s.SHA1(), Via: "evalsha", Keys: []string{key}}
	if opts.Function {
		fc, err := loadFunction(ctx, c, s.Source)
		if err != nil {
			return Result{}, err
		}
		defer fc.unload()
		call = fc
		res.Script.Via, res.Script.Function = "fcall", fc.name
	}
	res.ReplyShape = "limiter"
	var clock callClock
	for i := 1; i <= opts.Count; i++ {
		if i > 1 {
			if err := opts.Sleep(ctx, opts.Interval); err != nil {
				return res, err
			}
		}
		id := ""
		if l.NeedsID() {
			id = opts.newID()
		}
		args := l.Args(0, id)
		if i == 1 {
			res.Script.Args = argStrings(args)
		}
		start := clock.send()
		reply, err := call.call(ctx, []string{key}, args)
		lat := clock.done(start)
		if err != nil {
			return res, redislimit.CallError(ctx, c, l, key, err)
		}
		d, err := l.Decode(reply)
		if err != nil {
			return res, err
		}
		ttl, err := pttl(ctx, c, key)
		if err != nil {
			return res, err
		}
		res.Calls = append(res.Calls, Call{
			N: i, Allowed: &d.Allowed, Remaining: &d.Remaining, RetryMs: &d.RetryMs, ResetMs: &d.ResetMs,
			TTLMs: ttl, LatencyMs: Millis(lat), Reply: jsonReply(reply),
		})
	}
	res.Summary = summarize(res.Calls)
	res.Expect = clock.judge(opts.Expect, res)
	res.SetChecks()
	return res, nil
}

// callClock keeps when each call was sent and answered, for --expect: the
// replay's time base is the first call's send (wall clock).
type callClock struct {
	base    time.Time
	startMs int64
	spans   [][2]int64 // ns after base
}

// send notes a call's send and returns it.
func (k *callClock) send() time.Time {
	now := time.Now()
	if k.base.IsZero() {
		k.base, k.startMs = now, now.UnixMilli()
	}
	return now
}

// done notes the answer of the call sent at start and returns its latency.
func (k *callClock) done(start time.Time) time.Duration {
	end := time.Now()
	k.spans = append(k.spans, [2]int64{int64(start.Sub(k.base)), int64(end.Sub(k.base))})
	return end.Sub(start)
}

// judge compares the calls' decisions with x (nil: no --expect) over the
// spans kept; replies that are not decisions leave nothing to compare,
// which fails.
func (k *callClock) judge(x *judge.Expectation, res Result) *judge.Sequence {
	if x == nil {
		return nil
	}
	if res.ReplyShape != "limiter" || len(k.spans) != len(res.Calls) {
		return &judge.Sequence{Model: x.Spec, Description: x.Describe(), Calls: int64(len(res.Calls))}
	}
	calls := make([]judge.Call, len(res.Calls))
	for i, c := range res.Calls {
		calls[i] = judge.Call{SendNs: k.spans[i][0], DoneNs: k.spans[i][1], Allowed: *c.Allowed}
	}
	s := judge.Sequential(*x, k.startMs, calls)
	return &s
}

func newResult(s redisconn.Server) Result {
	return Result{Header: doc.Header{Kind: Kind, Version: Version, Server: &s}, Calls: []Call{}}
}

// Millis is d in milliseconds at microsecond resolution, the unit of every
// duration in a document.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ResolveKey returns the key Run will use: KEY, or the one built from
// --identity. Both or neither are bad input.
func ResolveKey(opts Options, algo limiter.Algo) (string, error) {
	switch {
	case opts.Key != "" && opts.Identity != "":
		return "", exitcode.Usagef("give either KEY or --identity, not both")
	case opts.Identity != "":
		return KeyFor(opts.Identity, algo, opts.HashIdentity)
	case opts.HashIdentity:
		return "", exitcode.Usagef("--hash-identity needs --identity ID, and --identity is empty or missing (an unset variable?); pass a non-empty ID, or KEY without --hash-identity")
	case opts.Key == "":
		return "", exitcode.Usagef("no key: pass KEY (e.g. rl:{user42}:tb) or a non-empty --identity ID (an empty one is an unset variable?)")
	}
	return opts.Key, nil
}

func summarize(calls []Call) Summary {
	var s Summary
	for _, c := range calls {
		if c.Allowed == nil {
			continue
		}
		if *c.Allowed {
			s.Allowed++
			continue
		}
		s.Refused++
		if c.RetryMs != nil {
			r := *c.RetryMs
			s.RetryMs = &r
		}
	}
	return s
}

// pttl returns PTTL key in ms: -1 no TTL, -2 no key.
func pttl(ctx context.Context, c redis.UniversalClient, key string) (int64, error) {
	v, err := c.Do(ctx, "PTTL", key).Int64()
	if err != nil {
		return 0, redisError("read the ttl of "+key, err)
	}
	return v, nil
}

func argStrings(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = fmt.Sprint(a)
	}
	return out
}

// jsonReply turns a go-redis reply into values encoding/json renders
// faithfully: error elements become {"error": "..."}, maps get string keys,
// and the RESP3 doubles JSON has no number for become the strings "NaN",
// "+Inf" and "-Inf".
func jsonReply(v any) any {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 1):
			return "+Inf"
		case math.IsInf(x, -1):
			return "-Inf"
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonReply(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonReply(e)
		}
		return out
	case error:
		return map[string]any{"error": x.Error()}
	}
	return v
}

// redisError wraps a Redis error met while doing what (outside a script),
// as redisconn.ServerError does.
func redisError(what string, err error) error { return redisconn.ServerError(what, err, "") }

// ReadScript reads the user's script file: a regular file (never a FIFO
// or device, which could block or never end) of at most userfile.MaxScript
// bytes. Failures are bad input (exit 2). It is the one reader of script
// files: eval and race both call it.
func ReadScript(path string) (string, error) {
	b, err := userfile.Read(path, "script", userfile.MaxScript)
	if err != nil {
		return "", err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return "", exitcode.Usagef("script %s is empty", path)
	}
	return string(b), nil
}

// newID returns a request id for a limiter that needs one: NewID's, or a
// random UUID.
func (o Options) newID() string {
	if o.NewID != nil {
		return o.NewID()
	}
	return redislimit.NewID()
}
