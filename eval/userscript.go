package eval

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

func runUserScript(ctx context.Context, c redis.UniversalClient, opts Options) (Result, error) {
	if opts.Key != "" || opts.Identity != "" {
		return Result{}, exitcode.Usagef("with --script the keys follow the file: --script FILE KEY [KEY...] , ARG [ARG...]")
	}
	keys, args, err := ParseEvalArgs(opts.ScriptWords)
	if err != nil {
		return Result{}, err
	}
	src := opts.ScriptSource
	if src == "" {
		if src, err = ReadScript(opts.ScriptFile); err != nil {
			return Result{}, err
		}
	}
	sum := sha1.Sum([]byte(src))
	res := newResult(opts.Server)
	res.Algo = "script"
	if len(keys) > 0 {
		res.Key = keys[0]
	}
	res.Script = ScriptDoc{Name: filepath.Base(opts.ScriptFile), SHA1: hex.EncodeToString(sum[:]), Via: "evalsha", Keys: keys, Args: args}
	var call caller = &evalCaller{script: redis.NewScript(src), c: c}
	if opts.Function {
		fc, err := loadFunction(ctx, c, src)
		if err != nil {
			return Result{}, err
		}
		defer fc.unload()
		call = fc
		res.Script.Via, res.Script.Function = "fcall", fc.name
	}
	check, err := startTTLCheck(ctx, c, keys, args, src)
	if err != nil {
		return Result{}, err
	}
	argv := make([]any, len(args))
	for i, a := range args {
		argv[i] = a
	}
	shaped := true
	for i := 1; i <= opts.Count; i++ {
		if i > 1 {
			if err := opts.Sleep(ctx, opts.Interval); err != nil {
				return res, err
			}
		}
		start := time.Now()
		reply, err := call.call(ctx, keys, argv)
		lat := time.Since(start)
		if err != nil {
			return res, scriptError(i, err)
		}
		ttl := int64(-2)
		if len(keys) > 0 {
			if ttl, err = pttl(ctx, c, keys[0]); err != nil {
				return res, err
			}
		}
		call := Call{N: i, TTLMs: ttl, LatencyUs: lat.Microseconds(), Reply: jsonReply(reply)}
		if !decodeShaped(reply, &call) {
			shaped = false
		}
		res.Calls = append(res.Calls, call)
	}
	res.ReplyShape = "limiter"
	if !shaped {
		res.ReplyShape = "raw"
		for i := range res.Calls {
			c := &res.Calls[i]
			c.Allowed, c.Remaining, c.RetryMs, c.ResetMs = nil, nil, nil, nil
		}
	}
	res.Summary = summarize(res.Calls)
	if res.NoTTL, err = check.finish(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// scriptError explains a failed call of the user's script. An error the
// script raised (or a Redis error it hit) is bad input, exit 2.
func scriptError(n int, err error) error {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return redisError(fmt.Sprintf("call %d of the script", n), err)
	}
	msg := rerr.Error()
	if strings.Contains(msg, "CROSSSLOT") || strings.Contains(msg, "non local key") {
		return exitcode.Usagef("call %d of the script: %v; on Redis Cluster all keys must share one hash tag, e.g. rl:{user42}:a rl:{user42}:b, and be passed in KEYS", n, err)
	}
	return exitcode.Usagef("call %d of the script failed: %v", n, err)
}

// decodeShaped fills the decision fields of c when reply looks like a
// limiter reply: {allowed 0|1, remaining, ...}; with four or more integers
// the third and fourth are taken for retry and reset ms.
func decodeShaped(reply any, c *Call) bool {
	arr, ok := reply.([]any)
	if !ok || len(arr) < 2 {
		return false
	}
	ints := make([]int64, 0, len(arr))
	for _, v := range arr {
		x, ok := v.(int64)
		if !ok {
			break
		}
		ints = append(ints, x)
	}
	if len(ints) < 2 || (ints[0] != 0 && ints[0] != 1) {
		return false
	}
	allowed, remaining := ints[0] == 1, ints[1]
	c.Allowed, c.Remaining = &allowed, &remaining
	if len(ints) >= 4 {
		retry, reset := ints[2], ints[3]
		c.RetryMs, c.ResetMs = &retry, &reset
	}
	return true
}
