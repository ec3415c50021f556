package redislimit

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// Store runs limiter decisions on one Redis client (a *redis.Client, a
// *redis.ClusterClient or the embedded server's client): what serve's
// middleware calls for every request. On a *redis.Client, decisions run
// on connections the store takes from the client's pool and keeps
// (owned.go), with their EVALSHA built once; on any other client, through
// Allow. It never closes the client.
type Store struct {
	Client redis.Scripter
	owned  *owned // nil: every decision goes through Allow
}

// NewStore returns the store of a client.
func NewStore(c redis.Scripter) *Store {
	s := &Store{Client: c}
	if rc, ok := c.(*redis.Client); ok {
		s.owned = newOwned(rc)
	}
	return s
}

// Allow decides one request for key on the server's clock.
func (s *Store) Allow(ctx context.Context, l *limiter.Limiter, key string) (limiter.Decision, error) {
	if s.owned == nil || Script(l) == nil {
		return Allow(ctx, s.Client, l, key, 0)
	}
	return s.owned.allow(ctx, s.Client, l, key)
}

// Probe runs two decisions of the limiter on key, a key no client can
// reach: one by EVAL (the fallback after NOSCRIPT, so a flushed script
// cache cannot turn every request into a failure later) and one by
// EVALSHA (what every request runs). Both run the script's own commands
// as the connected user, so a missing command or key permission shows
// now. The key is deleted afterwards; when the user may not DEL, it is
// set to expire in 1 ms, and failing that it expires with the TTL the
// script gave it. A NOPERM is an exit-3 error naming the rule to add;
// so is a server that cannot be reached or whose script fails. what
// names the probe in errors; acl is the whole minimal ACL to suggest.
func (s *Store) Probe(ctx context.Context, l *limiter.Limiter, key, what, acl string) error {
	defer s.drop(key)
	src := l.Script()
	id := ""
	if l.NeedsID() {
		id = NewID()
	}
	reply, err := s.Client.Eval(ctx, src.Source, []string{key}, l.Args(0, id)...).Result()
	if err == nil {
		_, err = l.Decode(reply)
	}
	if err != nil {
		return s.probeError(l, what+" (EVAL)", acl, err)
	}
	if _, err := Allow(ctx, s.Client, l, key, 0); err != nil {
		return s.probeError(l, what+" (EVALSHA)", acl, err)
	}
	return nil
}

func (s *Store) probeError(l *limiter.Limiter, what, acl string, err error) error {
	if redisconn.Classify(err) == redisconn.Canceled {
		return redisconn.Wrap(what, err)
	}
	if noPerm(err) {
		return exitcode.UnreachableError(fmt.Errorf("%s: %w; %s; serve's minimal ACL: %s", what, err, Hint(l, err), acl))
	}
	switch redisconn.Classify(err) {
	case redisconn.Other, redisconn.WrongType, redisconn.NoScript, redisconn.Moved, redisconn.ReadOnly:
		return exitcode.Unreachablef("%s: %v; the limiter cannot run on this server, so serve does not start", what, err)
	}
	return redisconn.Wrap(what, err)
}

// drop deletes the probe's key, which nothing else ever named.
func (s *Store) drop(key string) {
	c, ok := s.Client.(redis.Cmdable)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c.Del(ctx, key).Err() != nil {
		_ = c.PExpire(ctx, key, time.Millisecond).Err()
	}
}

// Reason sorts a failed decision. A script's error reply (foreign data
// under a key, WRONGTYPE) is the script refusing that key; an error of
// the caller's own deadline is a timeout.
func (s *Store) Reason(err error) limiter.Failure {
	if errors.Is(err, context.DeadlineExceeded) {
		return limiter.FailTimeout
	}
	if noPerm(err) {
		return limiter.FailNoPerm
	}
	var fk *limiter.ForeignKeyError
	if errors.As(err, &fk) {
		return limiter.FailScript
	}
	switch redisconn.Classify(err) {
	case redisconn.Other, redisconn.WrongType:
		return limiter.FailScript
	}
	return limiter.FailUnreachable
}

// Hint names the ACL rule to add for an ACL refusal of the limiter.
func (s *Store) Hint(l *limiter.Limiter, err error) string { return Hint(l, err) }

// noPerm reports whether err is an ACL refusal: NOPERM, or the form it
// takes on Redis 7 when a script calls a command its user may not run
// ("The user executing the script can't run this command ...").
func noPerm(err error) bool {
	return redisconn.Classify(err) == redisconn.NoPerm || strings.Contains(err.Error(), "user executing the script can't")
}

var scriptLine = regexp.MustCompile(`@user_script:(\d+)`)

// Hint names the ACL rule to add for an ACL refusal: redisconn.ACLHint
// for NOPERM, else the command at the script line the server names.
func Hint(l *limiter.Limiter, err error) string {
	if !strings.Contains(err.Error(), "user executing the script can't") {
		return redisconn.ACLHint(err)
	}
	if sub := scriptLine.FindStringSubmatch(err.Error()); sub != nil {
		src := l.Script()
		n, _ := strconv.Atoi(sub[1])
		if cmd := src.CommandAt(n); cmd != "" {
			return fmt.Sprintf("the limiter script calls %s (line %d), which the ACL user may not run: add +%s to its rules (ACL SETUSER <user> +%s)",
				strings.ToUpper(cmd), n, cmd, cmd)
		}
	}
	return "the ACL user may not run a command the limiter script calls (ACL LOG names it)"
}
