package redisconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// Class says what kind of trouble a Redis error is. Every command asks
// Classify rather than keeping its own list of error prefixes.
type Class int

// The classes of Redis errors.
const (
	// Other is any error not listed below (a script's own error reply,
	// OOM, a syntax error).
	Other Class = iota
	// Unreachable: the server could not be reached or stopped answering
	// (refused, reset, EOF, i/o timeout, pool timeout).
	Unreachable
	// Busy: the server answered BUSY: a script or function is running
	// beyond lua-time-limit and blocks every other client.
	Busy
	// NoPerm: the ACL user may not run a command or touch a key.
	NoPerm
	// ReadOnly: the node is a replica (READONLY).
	ReadOnly
	// Moved: the key lives on another cluster node (MOVED, ASK) or the
	// keys span slots (CROSSSLOT).
	Moved
	// NoScript: the script cache does not hold the digest (NOSCRIPT).
	NoScript
	// WrongType: the key holds another type (WRONGTYPE).
	WrongType
	// Canceled: the caller's context was cancelled (Ctrl-C).
	Canceled
)

var classNames = map[Class]string{
	Other: "other", Unreachable: "unreachable", Busy: "busy", NoPerm: "noperm",
	ReadOnly: "readonly", Moved: "moved", NoScript: "noscript", WrongType: "wrongtype", Canceled: "canceled",
}

func (c Class) String() string { return classNames[c] }

// Classify returns the class of err; nil is Other.
func Classify(err error) Class {
	if err == nil {
		return Other
	}
	if errors.Is(err, context.Canceled) {
		return Canceled
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		switch {
		case redis.HasErrorPrefix(rerr, "BUSY"):
			return Busy
		case redis.HasErrorPrefix(rerr, "NOPERM"), strings.Contains(msg, "NOPERM "),
			// Redis 7.0 inside a script: "The user executing the script can't run this command or subcommand"
			strings.Contains(msg, "user executing the script can't"), strings.Contains(msg, "can't run this command or subcommand"):
			return NoPerm
		case redis.HasErrorPrefix(rerr, "READONLY"):
			return ReadOnly
		case redis.HasErrorPrefix(rerr, "MOVED"), redis.HasErrorPrefix(rerr, "ASK"), redis.HasErrorPrefix(rerr, "CROSSSLOT"):
			return Moved
		case redis.HasErrorPrefix(rerr, "NOSCRIPT"):
			return NoScript
		case redis.HasErrorPrefix(rerr, "WRONGTYPE"), strings.Contains(msg, "WRONGTYPE "):
			return WrongType
		case redis.HasErrorPrefix(rerr, "LOADING"), redis.HasErrorPrefix(rerr, "MASTERDOWN"), redis.HasErrorPrefix(rerr, "CLUSTERDOWN"):
			return Unreachable
		}
		if !isNetError(err) {
			return Other
		}
	}
	if isNetError(err) {
		return Unreachable
	}
	return Other
}

func isNetError(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// Wrap turns a Redis error met while doing what into the exit-coded error
// a user reads: unreachable is exit 3; NOPERM is exit 3 naming the ACL
// rule to add (the server cannot be used by this user); BUSY is exit 3
// saying a script blocks the server and how to stop it; a cancelled run
// keeps context.Canceled for the caller's exit 130. Other errors are
// returned wrapped but unmarked, for the caller to decide.
func Wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	switch Classify(err) {
	case Canceled:
		return fmt.Errorf("%s: %w", what, err)
	case Unreachable:
		return exitcode.UnreachableError(fmt.Errorf("%s: %w; check that the server is up and --redis (or REDIS_URL) points at it", what, err))
	case NoPerm:
		return exitcode.UnreachableError(fmt.Errorf("%s: %w; %s", what, err, ACLHint(err)))
	case Busy:
		return exitcode.UnreachableError(fmt.Errorf("%s: %w; %s", what, err, busyHint))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// busyHint says what a BUSY answer means and how to end it.
const busyHint = "a script or function has run past lua-time-limit and blocks the server: stop it with SCRIPT KILL (or FUNCTION KILL), or wait for it"

// ACLHint names the ACL rule that would let the user run what NOPERM
// refused, read from the server's message (e.g. "this user has no
// permissions to run the 'evalsha' command" or "... access one of the
// keys used as arguments").
func ACLHint(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "run the '"); i >= 0 {
		rest := msg[i+len("run the '"):]
		if j := strings.Index(rest, "'"); j > 0 {
			return fmt.Sprintf("the ACL user may not run %s: add +%s to its rules (ACL SETUSER <user> +%s), see README \"Safety\" for each command's minimal ACL",
				strings.ToUpper(rest[:j]), strings.ToLower(rest[:j]), strings.ToLower(rest[:j]))
		}
	}
	if strings.Contains(msg, "keys") {
		return "the ACL user may not touch this key: add a key pattern covering it (e.g. ~rl:*), see README \"Safety\" for each command's minimal ACL"
	}
	if strings.Contains(msg, "channel") {
		return "the ACL user may not use this channel: add a channel pattern (&...)"
	}
	return "the ACL user lacks a permission: see README \"Safety\" for each command's minimal ACL"
}

// ServerError wraps a Redis error met while doing what. Unreachable, BUSY
// and NOPERM are exit 3 with what to do (redisconn.Wrap), and so is the
// form NOPERM takes inside a script on Redis 7.0 ("The user executing the
// script can't run this command"): acl then names the rules the script
// needs, or the hint points at ACL LOG. Any other error reply means the
// server would not serve the call (OOM, READONLY, ...): exit 3 as well. A
// cancelled run keeps context.Canceled for the caller. It is the one
// mapping of a failed command or script call to an exit code: eval, race,
// serve and the limiter all call it.
func ServerError(what string, err error, acl string) error {
	if err == nil {
		return nil
	}
	if ScriptNoPerm(err) {
		hint := "run ACL LOG to see which command or key it refused"
		if acl != "" {
			hint = "the script needs " + acl + " (ACL SETUSER <user> " + acl + "), see README \"Safety\""
		}
		return exitcode.UnreachableError(fmt.Errorf("%s: %w; the ACL user may not run a command (or touch a key) the script uses: %s", what, err, hint))
	}
	switch Classify(err) {
	case Canceled, Unreachable, Busy, NoPerm:
		return Wrap(what, err)
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return exitcode.UnreachableError(fmt.Errorf("%s: the server refused: %w", what, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// ScriptNoPerm reports whether err is Redis 7.0's answer to a script
// calling a command, or touching a key, its ACL user may not.
func ScriptNoPerm(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.Contains(msg, "user executing the script can't") || strings.Contains(msg, "can't run this command or subcommand")
}
