package eval

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// caller runs one script call: EVALSHA or FCALL.
type caller interface {
	call(ctx context.Context, keys []string, args []any) (any, error)
}

// evalCaller calls a script by its digest, falling back to EVAL on NOSCRIPT.
type evalCaller struct {
	script *redis.Script
	c      redis.Scripter
}

func (e *evalCaller) call(ctx context.Context, keys []string, args []any) (any, error) {
	v, err := e.script.Run(ctx, e.c, keys, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil // the script returned nil or false
	}
	return v, err
}

// fcallCaller calls a function of a library it loaded with FUNCTION LOAD
// REPLACE, reloading it once if the server lost it (FUNCTION FLUSH, restart).
type fcallCaller struct {
	c       redis.UniversalClient
	lib     string // library name
	name    string // function name
	code    string // library code
	created bool   // the library did not exist before: delete it afterwards
}

var (
	libName = regexp.MustCompile(`^#!lua\s+name=([A-Za-z0-9_]+)`)
	// register_function('name', ...), register_function("name", ...) or
	// register_function{function_name = 'name', ...}
	registered = regexp.MustCompile(`register_function\s*(?:\(\s*|\{[^}]*?function_name\s*=\s*)['"]([A-Za-z0-9_]+)['"]`)
)

// FunctionLibrary returns the Redis Functions library for a script: a
// library (starting with "#!lua name=") as it is, with its first registered
// function; an EVAL-style script wrapped as the body of a function taking
// KEYS and ARGV, in a library named after its digest.
func FunctionLibrary(src string) (code, lib, fn string, err error) {
	if strings.HasPrefix(src, "#!lua") {
		m := libName.FindStringSubmatch(src)
		if m == nil {
			return "", "", "", exitcode.Usagef("the script starts with #!lua but has no name=LIBRARY on that line")
		}
		f := registered.FindStringSubmatch(src)
		if f == nil {
			return "", "", "", exitcode.Usagef("library %s registers no function with redis.register_function('name', ...)", m[1])
		}
		return src, m[1], f[1], nil
	}
	sum := sha1.Sum([]byte(src))
	name := "ratelimit_eval_" + hex.EncodeToString(sum[:])[:12]
	code = "#!lua name=" + name + "\n" +
		"redis.register_function('" + name + "', function(KEYS, ARGV)\n" +
		src + "\nend)\n"
	return code, name, name, nil
}

// loadFunction loads src as a library on every primary and returns a caller
// for it. A server without FUNCTION (Redis before 7, the embedded miniredis)
// is bad input: the user asked for something this server cannot do.
func loadFunction(ctx context.Context, c redis.UniversalClient, src string) (*fcallCaller, error) {
	code, lib, fn, err := FunctionLibrary(src)
	if err != nil {
		return nil, err
	}
	f := &fcallCaller{c: c, lib: lib, name: fn, code: code}
	existed, err := f.exists(ctx)
	if err != nil {
		return nil, err
	}
	f.created = !existed
	if err := f.load(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

func noFunctions(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := strings.ToLower(rerr.Error())
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown subcommand")
}

func functionsUnsupported(err error) error {
	return exitcode.Usagef("this server does not support Redis Functions (FUNCTION needs Redis 7 or later; the embedded miniredis has none): %v; drop --function or pass --redis with a Redis 7 server", err)
}

// primaries runs fn on every primary of a cluster, or once on c.
func primaries(ctx context.Context, c redis.UniversalClient, fn func(context.Context, redis.Cmdable) error) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return fn(ctx, n) })
	}
	return fn(ctx, c)
}

func (f *fcallCaller) exists(ctx context.Context) (bool, error) {
	var mu sync.Mutex
	found := false
	err := primaries(ctx, f.c, func(ctx context.Context, n redis.Cmdable) error {
		libs, err := n.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: f.lib}).Result()
		if err != nil {
			return err
		}
		for _, l := range libs {
			if l.Name == f.lib {
				mu.Lock()
				found = true
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		if noFunctions(err) {
			return false, functionsUnsupported(err)
		}
		return false, redisError("list functions", err)
	}
	return found, nil
}

func (f *fcallCaller) load(ctx context.Context) error {
	err := primaries(ctx, f.c, func(ctx context.Context, n redis.Cmdable) error {
		return n.FunctionLoadReplace(ctx, f.code).Err()
	})
	if err == nil {
		return nil
	}
	if noFunctions(err) {
		return functionsUnsupported(err)
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return exitcode.Usagef("load the script as function library %s: %v", f.lib, err)
	}
	return redisError("load function library "+f.lib, err)
}

func (f *fcallCaller) call(ctx context.Context, keys []string, args []any) (any, error) {
	v, err := f.c.FCall(ctx, f.name, keys, args...).Result()
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "function not found") {
		if lerr := f.load(ctx); lerr != nil {
			return nil, lerr
		}
		v, err = f.c.FCall(ctx, f.name, keys, args...).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// unload deletes the library if this run created it.
func (f *fcallCaller) unload() {
	if !f.created {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = primaries(ctx, f.c, func(ctx context.Context, n redis.Cmdable) error {
		return n.FunctionDelete(ctx, f.lib).Err()
	})
}
