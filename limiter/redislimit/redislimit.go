// Package redislimit runs the limiter scripts of package limiter on a
// Redis server: one EVALSHA round trip per decision (EVAL after NOSCRIPT),
// the reply decoded by the algorithm's registry entry, and every failure
// mapped to what the user should do. It is the only place a limiter meets
// a Redis client, so packages that only reason about limiters (load,
// report, serve) stay free of go-redis.
package redislimit

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

var (
	scriptsOnce sync.Once
	scripts     map[limiter.Algo]*redis.Script
)

// Script returns the limiter's script as go-redis runs it (EVALSHA with
// EVAL on NOSCRIPT, or pipelined EvalSha with Load); nil for an algorithm
// without a script.
func Script(l *limiter.Limiter) *redis.Script {
	scriptsOnce.Do(func() {
		scripts = map[limiter.Algo]*redis.Script{}
		for _, s := range limiter.Scripts() {
			scripts[limiter.Algo(s.Name)] = redis.NewScript(s.Source)
		}
	})
	return scripts[l.Params().Algo]
}

// NewID returns a request id for an algorithm that needs one per call.
func NewID() string { return uuid.NewString() }

// Allow runs the limiter's script once for key: one EVALSHA round trip,
// falling back to EVAL when the server answers NOSCRIPT (after SCRIPT
// FLUSH, a restart or a failover). nowMs 0 means the server's TIME. A
// request id is made only for an algorithm that needs one.
func Allow(ctx context.Context, rdb redis.Scripter, l *limiter.Limiter, key string, nowMs int64) (limiter.Decision, error) {
	s := Script(l)
	if s == nil {
		return limiter.Decision{}, fmt.Errorf("%s has no script to run; it is a model only", l.Params().Algo)
	}
	id := ""
	if l.NeedsID() {
		id = NewID()
	}
	reply, err := s.Run(ctx, rdb, []string{key}, l.Args(nowMs, id)...).Result()
	if err != nil {
		return limiter.Decision{}, CallError(ctx, rdb, l, key, err)
	}
	return l.Decode(reply)
}

// CallError explains a failed call of the limiter's script on key: a key
// the script refused or one of another type is exit 2; a command the ACL
// user may not run, a BUSY server or an unreachable one is exit 3 with
// what to do.
func CallError(ctx context.Context, rdb any, l *limiter.Limiter, key string, err error) error {
	algo := l.Params().Algo
	if ferr := limiter.ForeignKey(key, algo, err); ferr != nil {
		return ferr
	}
	if err != nil && strings.Contains(err.Error(), "WRONGTYPE") {
		holds := ""
		if c, ok := rdb.(redis.Cmdable); ok {
			if t, terr := c.Type(ctx, key).Result(); terr == nil {
				holds = t
			}
		}
		return limiter.WrongTypeError(key, algo, holds)
	}
	return redisconn.ServerError(fmt.Sprintf("run %s script on %s", algo, key), err, l.ACL())
}

// IsNoScript reports whether err is the server's NOSCRIPT answer.
func IsNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}
