package race

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// UserScript is the user's own limiter script (--script FILE --args "...").
type UserScript struct {
	// Path is the file as the user named it.
	Path string
	// Source is the Lua source.
	Source string
	// Args are the ARGV templates, see ParseArgs.
	Args []string
}

// Label is how reports name the script: its file's base name.
func (u *UserScript) Label() string { return filepath.Base(u.Path) }

// The placeholders --args understands.
const (
	PlaceholderLimit = "{limit}"  // the race's limit
	PlaceholderUUID  = "{uuid}"   // a fresh random UUID for every call
	PlaceholderNowMs = "{now_ms}" // the client's Unix time in ms at the call
)

var placeholderRE = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_]*\}`)

// ParseArgs splits --args at white space into ARGV templates and checks
// their placeholders: {limit}, {uuid} and {now_ms}, anywhere inside a word
// (e.g. "req-{uuid}"). Any other {name} is bad input, to catch typos.
func ParseArgs(s string) ([]string, error) {
	words := strings.Fields(s)
	for _, w := range words {
		for _, m := range placeholderRE.FindAllString(w, -1) {
			switch m {
			case PlaceholderLimit, PlaceholderUUID, PlaceholderNowMs:
			default:
				return nil, exitcode.Usagef("unknown placeholder %s in --args %q; use {limit}, {uuid} or {now_ms}", m, s)
			}
		}
	}
	return words, nil
}

// expandArgs fills the placeholders of templates for one call.
func expandArgs(templates []string, limit int64, newID func() string, now func() time.Time) []any {
	args := make([]any, len(templates))
	for i, w := range templates {
		if strings.IndexByte(w, '{') >= 0 {
			w = strings.ReplaceAll(w, PlaceholderLimit, strconv.FormatInt(limit, 10))
			if strings.Contains(w, PlaceholderUUID) {
				w = strings.ReplaceAll(w, PlaceholderUUID, newID())
			}
			if strings.Contains(w, PlaceholderNowMs) {
				w = strings.ReplaceAll(w, PlaceholderNowMs, strconv.FormatInt(now().UnixMilli(), 10))
			}
		}
		args[i] = w
	}
	return args
}

// Allowed reads the decision from a script's reply: the first element of
// an array reply, or the reply itself. 1 or true is allowed; 0, false and
// nil are refused; anything else is an error.
func Allowed(reply any) (bool, error) {
	v := reply
	if arr, ok := reply.([]any); ok {
		if len(arr) == 0 {
			return false, fmt.Errorf("script replied an empty array; want {allowed (1 or 0), ...}")
		}
		v = arr[0]
	}
	switch x := v.(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	case int64:
		if x == 0 || x == 1 {
			return x == 1, nil
		}
	case string:
		if x == "0" || x == "1" {
			return x == "1", nil
		}
	}
	return false, fmt.Errorf("script replied %v: the first element must be 1 (allowed) or 0 (refused)", reply)
}

// userStrategy races the user's script: EVALSHA with KEYS[1] = the trial's
// key and the expanded ARGV.
type userStrategy struct {
	script *UserScript
	limit  int64
	lua    *redis.Script
}

func newUserStrategy(u *UserScript, limit int64) *userStrategy {
	return &userStrategy{script: u, limit: limit, lua: redis.NewScript(u.Source)}
}

func (*userStrategy) name() string    { return User }
func (s *userStrategy) label() string { return s.script.Label() }
func (*userStrategy) atomic() bool    { return true }

func (s *userStrategy) prepare(ctx context.Context, node *redis.Client) error {
	if err := s.lua.Load(ctx, node).Err(); err != nil {
		if redisconn.Classify(err) == redisconn.NoPerm {
			return aclError(fmt.Sprintf("load --script %s", s.script.Path), err)
		}
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return exitcode.Usagef("load --script %s: %v", s.script.Path, err)
		}
		return fmt.Errorf("load --script %s: %w", s.script.Path, err)
	}
	return nil
}

func (s *userStrategy) call(ctx context.Context, c *redis.Conn, key string, _ int) outcome {
	args := expandArgs(s.script.Args, s.limit, uuid.NewString, time.Now)
	reply, err := s.lua.Run(ctx, c, []string{key}, args...).Result()
	if errors.Is(err, redis.Nil) { // Lua false: refused
		return outcome{}
	}
	if err != nil {
		return outcome{err: err}
	}
	ok, err := Allowed(reply)
	if err != nil {
		return outcome{err: err}
	}
	return outcome{admitted: ok, wrote: ok}
}

// final is unknown: the script's state is its own.
func (*userStrategy) final(context.Context, redis.UniversalClient, string) (*int64, error) {
	return nil, nil
}
