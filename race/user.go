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
	"github.com/ratelimit-dev/ratelimit/judge"
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
	// Reply says what each reply element means (--reply); the zero value
	// reads the first element, or the reply itself, as the decision.
	Reply judge.Reply
	// Expect is the model the script implements (--expect): each trial's
	// admissions are judged against it over the trial as it ran (see
	// judge.Trial) instead of against the limit; nil for none.
	Expect *judge.Expectation
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

// Allowed reads the decision from a script's reply as r says (see
// judge.Reply.Decide): by default the first element of an array reply, or
// the reply itself, where 1 or true is allowed and 0, false and nil are
// refused; anything else is an error.
func Allowed(reply any, r judge.Reply) (bool, error) {
	d, why, ok := r.Decide(reply)
	if !ok {
		return false, fmt.Errorf("script replied %s: %s", shortReply(reply), why)
	}
	return d.Allowed, nil
}

// shortReply shows a reply in an error, cut at 80 characters.
func shortReply(reply any) string {
	s := fmt.Sprint(reply)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
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
	ok, err := Allowed(reply, s.script.Reply)
	if err != nil {
		return outcome{err: err}
	}
	return outcome{admitted: ok, wrote: ok}
}

// final is unknown: the script's state is its own.
func (*userStrategy) final(context.Context, redis.UniversalClient, string) (*int64, error) {
	return nil, nil
}
