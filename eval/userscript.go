package eval

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/redisconn"
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
	sc := noRetry(c)
	if sc != c {
		defer sc.Close()
	}
	var call caller = &evalCaller{script: redis.NewScript(src), c: sc}
	if opts.Function {
		fc, err := loadFunction(ctx, sc, src)
		if err != nil {
			return Result{}, err
		}
		defer fc.unload()
		call = fc
		res.Script.Via, res.Script.Function = "fcall", fc.name
	}
	check, err := startTTLCheck(ctx, c, keys, withoutPlaceholders(args), src)
	if err != nil {
		return Result{}, err
	}
	newID := opts.NewID
	if newID == nil {
		newID = uuid.NewString
	}
	res.Reply = opts.Reply.String()
	var other []int // calls whose reply is not limiter-shaped
	var clock callClock
	for i := 1; i <= opts.Count; i++ {
		if i > 1 {
			if err := opts.Sleep(ctx, opts.Interval); err != nil {
				return res, err
			}
		}
		start := clock.send() // before {now_ms} is read
		argv := expandArgs(args, i, newID, opts.Now)
		if i == 1 {
			res.Script.Args = argStrings(argv)
		}
		reply, err := call.call(ctx, keys, argv)
		lat := clock.done(start)
		if err != nil {
			if timedOut(ctx, err) {
				return res, scriptTimeout(ctx, c, opts, keys, i, err)
			}
			return res, scriptError(i, err)
		}
		ttl := int64(-2)
		if len(keys) > 0 {
			if ttl, err = pttl(ctx, c, keys[0]); err != nil {
				return res, err
			}
		}
		call := Call{N: i, TTLMs: ttl, LatencyMs: Millis(lat), Reply: jsonReply(reply)}
		if !decodeShaped(reply, &call, opts.Reply) {
			other = append(other, i)
		}
		res.Calls = append(res.Calls, call)
	}
	res.ReplyShape = "limiter"
	if len(other) > 0 {
		res.ReplyShape = "raw"
		if len(other) < len(res.Calls) {
			res.OtherShape = other
		}
		for i := range res.Calls {
			c := &res.Calls[i]
			c.Allowed, c.Remaining, c.RetryMs, c.ResetMs = nil, nil, nil, nil
		}
	}
	res.Summary = summarize(res.Calls)
	res.Expect = clock.judge(opts.Expect, res)
	if res.NoTTL, err = check.finish(ctx); err != nil {
		return res, err
	}
	if res.NoTTL != nil {
		res.NoTTL.Allowed = opts.AllowNoTTL && len(res.NoTTL.Keys) > 0
	}
	res.SetChecks()
	return res, nil
}

// ScriptACL lists the ACL rules eval --script needs besides a key pattern
// and the commands the script itself calls: EVALSHA and EVAL (after
// NOSCRIPT), and the no-TTL check's EXISTS, SCAN, PTTL, DUMP and TYPE.
// --function needs +fcall +function|list +function|load +function|delete
// instead of +evalsha +eval.
const ScriptACL = "+evalsha +eval +exists +scan +pttl +dump +type"

// The placeholders an argument of --script may hold, anywhere in a word
// ("req-{uuid}"), spelled as race's --args spells them. Other {text}
// stays as it is: an argument may be a hash-tagged key name.
const (
	PlaceholderUUID  = "{uuid}"   // a fresh random UUID for every call
	PlaceholderNowMs = "{now_ms}" // the client's Unix time in ms at the call
	PlaceholderN     = "{n}"      // the call's number: 1, 2, ...
)

func hasPlaceholder(w string) bool {
	return strings.Contains(w, PlaceholderUUID) || strings.Contains(w, PlaceholderNowMs) || strings.Contains(w, PlaceholderN)
}

// expandArgs fills the placeholders of the argument templates for call n.
func expandArgs(templates []string, n int, newID func() string, now func() time.Time) []any {
	out := make([]any, len(templates))
	for i, w := range templates {
		if strings.IndexByte(w, '{') >= 0 {
			w = strings.ReplaceAll(w, PlaceholderN, strconv.Itoa(n))
			if strings.Contains(w, PlaceholderUUID) {
				w = strings.ReplaceAll(w, PlaceholderUUID, newID())
			}
			if strings.Contains(w, PlaceholderNowMs) {
				w = strings.ReplaceAll(w, PlaceholderNowMs, strconv.FormatInt(now().UnixMilli(), 10))
			}
		}
		out[i] = w
	}
	return out
}

// withoutPlaceholders drops the arguments that change from call to call,
// which say nothing about the key names a script builds.
func withoutPlaceholders(args []string) []string {
	var out []string
	for _, a := range args {
		if !hasPlaceholder(a) {
			out = append(out, a)
		}
	}
	return out
}

// noRetry returns a client to the same server as c that never sends a
// command again after a timeout: go-redis would repeat a script call that
// got no reply in time, running the user's script a second time and, while
// the first run still blocks the server, reading its own BUSY reply as
// another client's. A client it cannot copy is returned as it is.
func noRetry(c redis.UniversalClient) redis.UniversalClient {
	switch x := c.(type) {
	case *redis.Client:
		o := *x.Options()
		o.MaxRetries = -1
		return redis.NewClient(&o)
	case *redis.ClusterClient:
		o := *x.Options()
		o.MaxRetries = -1
		return redis.NewClusterClient(&o)
	}
	return c
}

// scriptFailed is the user's script failing at run time: exit 1, the
// script being what is tested, with the server's message as it is.
type scriptFailed struct{ err error }

func (e *scriptFailed) Error() string        { return e.err.Error() }
func (e *scriptFailed) Unwrap() error        { return e.err }
func (e *scriptFailed) Is(target error) bool { return target == exitcode.ErrCheckFailed }

// scriptError explains a failed call of the user's script. A script that
// does not compile is bad input (exit 2), and so is one that meets a key of
// another type or, on a cluster, keys of several slots; an error raised
// while it runs (a Lua runtime error, redis.error_reply, a failed
// redis.call) is the script failing, exit 1; NOPERM, BUSY and an
// unreachable server are exit 3.
func scriptError(n int, err error) error {
	var rerr redis.Error
	if !errors.As(err, &rerr) || redisconn.ScriptNoPerm(err) {
		return redisError(fmt.Sprintf("call %d of the script", n), err)
	}
	switch redisconn.Classify(err) {
	case redisconn.Busy:
		return redisconn.Wrap(fmt.Sprintf("call %d of the script: the server is busy with another client's script", n), err)
	case redisconn.NoPerm, redisconn.Canceled, redisconn.Unreachable:
		return redisError(fmt.Sprintf("call %d of the script", n), err)
	}
	msg := rerr.Error()
	switch {
	case strings.Contains(msg, "CROSSSLOT") || strings.Contains(msg, "non local key"):
		return exitcode.Usagef("call %d of the script: %v; on Redis Cluster all keys must share one hash tag, e.g. rl:{user42}:a rl:{user42}:b, and be passed in KEYS", n, err)
	// miniredis words runtime errors "Error compiling script" too, but
	// with a stack traceback.
	case strings.Contains(msg, "Error compiling script") && !strings.Contains(msg, "stack traceback"):
		return exitcode.Usagef("the script does not compile: %v", err)
	case redisconn.Classify(err) == redisconn.WrongType:
		return exitcode.Usagef("call %d of the script: %v; a key it was given holds another type: pick another key", n, err)
	}
	return &scriptFailed{fmt.Errorf("call %d of the script failed: %w", n, err)}
}

// timedOut reports whether err is the client giving up waiting for a
// reply (the caller's own context still running).
func timedOut(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// scriptTimeout explains a call of the user's script that got no reply in
// time: the script is most likely still running and, past
// busy-reply-threshold (lua-time-limit), blocks every client of the
// server. On a server of our own (OwnServer) it is stopped. Exit 1: the
// script is what is tested.
func scriptTimeout(ctx context.Context, c redis.UniversalClient, opts Options, keys []string, n int, err error) error {
	kill := "SCRIPT KILL"
	if opts.Function {
		kill = "FUNCTION KILL"
	}
	what := fmt.Sprintf("call %d of the script got no reply in time (%v): the script is probably still running on the server and blocks every other client", n, err)
	switch {
	case opts.Server.Embedded:
		return &scriptFailed{fmt.Errorf("%s; the embedded server cannot stop a running script: it runs until this process exits; fix the script or test it on a real server (ratelimit sandbox)", what)}
	case !opts.OwnServer:
		return &scriptFailed{fmt.Errorf("%s; stop it with redis-cli %s (it may be stopped only while it has written nothing), or raise --redis-timeout if it is just slow", what, kill)}
	}
	if kerr := killScript(ctx, c, keys, opts.Function); kerr != nil {
		return &scriptFailed{fmt.Errorf("%s; %s did not stop it: %v", what, kill, kerr)}
	}
	return &scriptFailed{fmt.Errorf("%s; this process started the server and stopped the script with %s", strings.Replace(what, " and blocks every other client", "", 1), kill)}
}

// killAttempts bounds the SCRIPT KILL retries: the server reads commands
// only once the script has run past busy-reply-threshold, so the first
// attempts may time out.
const killAttempts = 10

// killScript stops the script (or function) running on the node that owns
// keys[0] (every primary when there are no keys), retrying while the
// server does not answer yet. A script that ended by itself is fine.
func killScript(ctx context.Context, c redis.UniversalClient, keys []string, function bool) error {
	kill := func(ctx context.Context, n redis.Cmdable) error {
		var err error
		for range killAttempts {
			if function {
				err = n.FunctionKill(ctx).Err()
			} else {
				err = n.ScriptKill(ctx).Err()
			}
			if err == nil || (err != nil && strings.HasPrefix(err.Error(), "NOTBUSY")) {
				return nil
			}
			if !timedOut(ctx, err) && redisconn.Classify(err) != redisconn.Unreachable {
				return err
			}
		}
		return err
	}
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return kill(ctx, c)
	}
	if len(keys) > 0 {
		n, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return err
		}
		return kill(ctx, n)
	}
	return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return kill(ctx, n) })
}

// decodeShaped fills the decision fields of c when reply reads as a
// limiter's decision as r says (judge.Reply.Decide). The default reading
// asks for {allowed 0/1, remaining, ...} with integers: the third element
// is retry ms and the fourth reset ms when they are integers too.
func decodeShaped(reply any, c *Call, r judge.Reply) bool {
	if len(r.Fields) == 0 {
		arr, ok := reply.([]any)
		if !ok || len(arr) < 2 {
			return false
		}
		for _, v := range arr[:2] {
			if _, ok := v.(int64); !ok {
				return false
			}
		}
	}
	d, _, ok := r.Decide(reply)
	if !ok {
		return false
	}
	allowed := d.Allowed
	c.Allowed, c.Remaining, c.RetryMs, c.ResetMs = &allowed, d.Remaining, d.RetryMs, d.ResetMs
	return true
}
