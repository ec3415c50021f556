package race

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// IsUnreachable reports whether err means the server could not be reached
// or stopped answering: a refused, reset or broken connection, end of
// file, an i/o or connection pool timeout, a server still loading its data
// (redisconn.Classify's Unreachable class). Error replies of the server
// (OOM, NOPERM, a script error) are not.
func IsUnreachable(err error) bool {
	return redisconn.Classify(err) == redisconn.Unreachable
}

// aclError is the exit-3 error for a command or key the ACL user may not
// use: the race cannot run with this user, and the message names the rule
// to add.
func aclError(what string, err error) error {
	if exitcode.Code(err) == exitcode.Unreachable {
		// already says what to add (eval's limiter names its script's rules)
		return exitcode.UnreachableError(fmt.Errorf("%s: %w", what, err))
	}
	hint := redisconn.ACLHint(err)
	msg := err.Error()
	if !strings.Contains(msg, "run the '") && strings.Contains(msg, "key") {
		hint = "the ACL user may not touch the run's keys: add ~race:* to its rules (ACL SETUSER <user> ~race:*), see README \"Safety\" for race's minimal ACL"
	}
	return exitcode.UnreachableError(fmt.Errorf("%s: %w; %s", what, err, hint))
}

// lostError is the exit-3 error for a server that could not be reached or
// went away while the run was doing something; pattern, when not empty,
// names keys of the run that may be left.
func lostError(addr, doing, pattern string, err error) error {
	hint := "check that it is up and run again"
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, redis.ErrPoolTimeout) {
		hint = "check that it is up, or raise --redis-timeout if it is only slow, and run again"
	}
	if pattern != "" {
		hint += fmt.Sprintf(" (the run's keys %s expire within an hour)", pattern)
	}
	return exitcode.UnreachableError(fmt.Errorf("redis at %s did not answer while %s: %w; %s", addr, doing, err, hint))
}

// callsError turns the failed calls of a trial into the run's error: exit
// 3 when any call failed because the server could not be reached (the
// trial says nothing about the limiter then), exit 3 naming the ACL rule
// to add when the ACL refused any call, exit 2 when every call of a
// user script failed (the script or its --args are wrong), exit 3 when the
// server refused every call of a built-in strategy with an error reply (it
// cannot serve the race: maxmemory, ACL, a replica). Other failed calls are
// counted and noted in the report.
func callsError(s strategy, tr trial, t int, addr, pattern string) error {
	failed, unreachable, noperm := 0, 0, 0
	var first, firstLost, firstACL error
	for _, o := range tr.outcomes {
		if o.err == nil {
			continue
		}
		failed++
		if first == nil {
			first = o.err
		}
		switch {
		case IsUnreachable(o.err):
			unreachable++
			if firstLost == nil {
				firstLost = o.err
			}
		case redisconn.Classify(o.err) == redisconn.NoPerm:
			noperm++
			if firstACL == nil {
				firstACL = o.err
			}
		}
	}
	n := len(tr.outcomes)
	switch {
	case unreachable > 0:
		return lostError(addr, fmt.Sprintf("racing %s in trial %d (%d of %d calls failed)", s.label(), t, unreachable, n), pattern, firstLost)
	case noperm > 0:
		// Even one refused call leaves the strategy half done (an INCR
		// without its PEXPIRE): the trial says nothing about the limiter.
		return aclError(fmt.Sprintf("redis at %s refused %d of %d %s calls in trial %d", addr, noperm, n, s.label(), t), firstACL)
	case failed == 0 || failed < n:
		return nil
	case s.name() == User:
		hint := "fix the script or its --args"
		var rerr redis.Error
		if !errors.As(first, &rerr) {
			hint = "its reply must start with 1 (allowed) or 0 (refused)"
		}
		return exitcode.Usagef("--script %s failed on every call in trial %d: %v; %s", s.label(), t, first, hint)
	default:
		return exitcode.UnreachableError(fmt.Errorf("redis at %s refused every %s call in trial %d: %w; make sure the server accepts writes to %s (maxmemory, ACL, not a replica) and run again",
			addr, s.label(), t, first, pattern))
	}
}
