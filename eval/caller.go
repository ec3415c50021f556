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

// fcallCaller calls a function of a library. It never replaces a library
// of the same name: it uses one with the same code as it is, refuses one
// with other code, loads the library where it is missing (reloading it if
// the server lost it: FUNCTION FLUSH, restart) and deletes afterwards only
// what it loaded.
type fcallCaller struct {
	c    redis.UniversalClient
	lib  string // library name
	name string // function name
	code string // library code

	mu      sync.Mutex
	created map[string]bool // primaries (by address) where this run loaded the library
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

// loadFunction makes src available as a library on every primary and
// returns a caller for it. A server without FUNCTION (Redis before 7, the
// embedded miniredis) is bad input: the user asked for something this
// server cannot do; so is a library of the same name with other code.
func loadFunction(ctx context.Context, c redis.UniversalClient, src string) (*fcallCaller, error) {
	code, lib, fn, err := FunctionLibrary(src)
	if err != nil {
		return nil, err
	}
	f := &fcallCaller{c: c, lib: lib, name: fn, code: code, created: map[string]bool{}}
	if err := f.ensure(ctx); err != nil {
		f.unload()
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
	return eachPrimary(ctx, c, func(ctx context.Context, _ string, n redis.Cmdable) error { return fn(ctx, n) })
}

// eachPrimary runs fn on every primary of a cluster, concurrently, with the
// primary's address; or once on c with the address "".
func eachPrimary(ctx context.Context, c redis.UniversalClient, fn func(context.Context, string, redis.Cmdable) error) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return fn(ctx, n.Options().Addr, n) })
	}
	return fn(ctx, "", c)
}

// ensure loads the library on every primary that lacks it (FUNCTION LOAD,
// without REPLACE) and remembers where. If a library of the same name holds
// other code anywhere, it loads nothing and the answer is exit 2.
func (f *fcallCaller) ensure(ctx context.Context) error {
	var mu sync.Mutex
	missing := map[string]bool{}
	conflict, where := false, ""
	err := eachPrimary(ctx, f.c, func(ctx context.Context, addr string, n redis.Cmdable) error {
		libs, err := n.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: f.lib, WithCode: true}).Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		found := false
		for _, l := range libs {
			if l.Name != f.lib {
				continue
			}
			found = true
			if l.Code != f.code {
				conflict = true
				if addr != "" {
					where = " on " + addr
				}
			}
		}
		if !found {
			missing[addr] = true
		}
		return nil
	})
	if err != nil {
		if noFunctions(err) {
			return functionsUnsupported(err)
		}
		return redisError("list functions", err)
	}
	if conflict {
		return exitcode.Usagef("a function library named %s already exists%s with other code; --function does not replace it: rename your library (#!lua name=...) or remove that one with FUNCTION DELETE %s", f.lib, where, f.lib)
	}
	err = eachPrimary(ctx, f.c, func(ctx context.Context, addr string, n redis.Cmdable) error {
		if !missing[addr] {
			return nil
		}
		if err := n.FunctionLoad(ctx, f.code).Err(); err != nil {
			return err
		}
		f.mu.Lock()
		f.created[addr] = true
		f.mu.Unlock()
		return nil
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
		if lerr := f.ensure(ctx); lerr != nil {
			return nil, lerr
		}
		v, err = f.c.FCall(ctx, f.name, keys, args...).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// unload deletes the library from the primaries where this run loaded it.
func (f *fcallCaller) unload() {
	f.mu.Lock()
	created := len(f.created) > 0
	f.mu.Unlock()
	if !created {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = eachPrimary(ctx, f.c, func(ctx context.Context, addr string, n redis.Cmdable) error {
		f.mu.Lock()
		mine := f.created[addr]
		f.mu.Unlock()
		if !mine {
			return nil
		}
		return n.FunctionDelete(ctx, f.lib).Err()
	})
}
