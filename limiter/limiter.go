package limiter

import (
	"fmt"
	"strings"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// Decision is the answer of one script call.
type Decision struct {
	Allowed   bool
	Remaining int64
	RetryMs   int64 // 0 if allowed, -1 if the cost can never pass
	ResetMs   int64 // ms until the full quota is back (fixed window: until the window ends)
	Reply     []any // the raw script reply
}

// Policy is the quota policy to advertise (RateLimit-Policy: q and w).
type Policy struct {
	Quota         int64
	WindowSeconds int64
}

// Limiter is one algorithm with fixed, validated parameters: its script's
// arguments are built once, its replies decoded, its model made. It is
// safe for concurrent use. Running it on a server is redislimit's job.
type Limiter struct {
	p     Params
	e     *Algorithm
	fixed []any // the script's ARGV before now_ms and force (the id slot empty)
}

// NewLimiter validates p and returns its limiter. Bad parameters are exit-2
// errors that name the parameter to fix (ParamError).
func NewLimiter(p Params) (*Limiter, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.Cost = max(p.Cost, 1)
	e := Lookup(p.Algo)
	l := &Limiter{p: p, e: e}
	if e.args != nil {
		l.fixed = e.args(p)
	}
	return l, nil
}

// Params returns the validated parameters (Cost at least 1).
func (l *Limiter) Params() Params { return l.p }

// Algorithm returns the limiter's registry entry.
func (l *Limiter) Algorithm() *Algorithm { return l.e }

// Script returns the embedded script the limiter runs; the zero Script
// for an algorithm that is a model only (see HasScript).
func (l *Limiter) Script() Script {
	if l.e.Script == nil {
		return Script{}
	}
	return *l.e.Script
}

// HasScript reports whether the limiter is an embedded script: its
// algorithm has one and no option asks for another behaviour (what eval,
// race and serve need).
func (l *Limiter) HasScript() bool { return l.e.Script != nil && l.e.defaultOptions(l.p) }

// Model returns a fresh pure Go twin of the limiter; with block= the
// algorithm's model inside a block (model.NewBlocking).
func (l *Limiter) Model() model.Limiter {
	if l.p.Block > 0 {
		return model.NewBlocking(func() model.Limiter { return l.e.model(l.p) }, l.p.Block.Milliseconds())
	}
	return l.e.model(l.p)
}

// Policy returns the quota and the time in whole seconds (rounded up) in
// which it is fully restored: a bucket of 10 at 5/s is q=10, w=2.
func (l *Limiter) Policy() Policy { return l.e.policy(l.p) }

// NeedsID reports whether every call needs a unique request id.
func (l *Limiter) NeedsID() bool { return l.e.NeedsID }

// ACL returns the ACL rules (besides a key pattern such as ~rl:*) the
// limiter's script needs, e.g. "+evalsha +eval +time ...".
func (l *Limiter) ACL() string { return l.e.ACL }

// Args returns the script's ARGV for one call, in the documented order;
// nowMs 0 leaves the server's TIME in charge. id is the request id of an
// algorithm that NeedsID (ignored by the others). The fixed part is built
// once; a call copies it and adds what varies.
func (l *Limiter) Args(nowMs int64, id string) []any {
	if l.fixed == nil {
		return nil // a model only: no script to call
	}
	n := len(l.fixed)
	args := make([]any, n, n+2)
	copy(args, l.fixed)
	if l.e.NeedsID {
		args[l.e.idAt] = id
	}
	switch {
	case l.p.Force && nowMs != 0:
		args = append(args, nowMs, "1")
	case l.p.Force:
		args = append(args, "", "1") // '' is the server's TIME
	case nowMs != 0:
		args = append(args, nowMs)
	}
	return args
}

// Args returns the script's ARGV for p without validating it: what a
// test of a script's own checks sends. Limiter.Args is the validated form
// every command uses.
func (p Params) Args(nowMs int64, id string) []any {
	e := Lookup(p.Algo)
	if e == nil || e.Script == nil {
		return nil
	}
	l := Limiter{p: p, e: e, fixed: e.args(p)}
	return l.Args(nowMs, id)
}

// Decode turns a raw reply of the limiter's script into a Decision.
func (l *Limiter) Decode(reply any) (Decision, error) {
	arr, ok := reply.([]any)
	if !ok || len(arr) != l.e.replyLen {
		return Decision{}, fmt.Errorf("%s script replied %v, want %d integers", l.p.Algo, reply, l.e.replyLen)
	}
	var n [4]int64
	for i, v := range arr {
		x, ok := v.(int64)
		if !ok {
			return Decision{}, fmt.Errorf("%s script replied %v: element %d is %T, want an integer", l.p.Algo, reply, i+1, v)
		}
		n[i] = x
	}
	d := l.e.decode(l.p, n[:len(arr)])
	d.Reply = arr
	return d, nil
}

// ForeignKeyPrefix starts the error reply a limiter script gives for a key
// it did not write: "FOREIGNKEY <type> <why>; ...".
const ForeignKeyPrefix = "FOREIGNKEY"

// ForeignKeyError is a key a limiter script refused to write because it
// holds data the script did not write (Params.Force replaces it). Errors
// of this type are exit 2.
type ForeignKeyError struct {
	Key  string
	Algo Algo
	Type string // the key's Redis type: hash, zset, string, list, ...
	Why  string // e.g. "has fields other than tokens and ts"
}

func (e *ForeignKeyError) Error() string {
	return fmt.Sprintf("key %s holds a %s the %s script did not write (the %s %s); nothing was written: pick another key, or pass --force to replace it",
		e.Key, e.Type, e.Algo, e.Type, e.Why)
}

// serverError is an error reply of a server (go-redis's redis.Error has
// this method), so this package needs no Redis client to read one.
type serverError interface {
	error
	RedisError()
}

// ForeignKey turns a script's FOREIGNKEY reply into an exit-2
// *ForeignKeyError; it returns nil for any other error.
func ForeignKey(key string, algo Algo, err error) error {
	var rerr serverError
	for e := err; e != nil; {
		if r, ok := e.(serverError); ok {
			rerr = r
			break
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	if rerr == nil || !strings.HasPrefix(rerr.Error(), ForeignKeyPrefix+" ") {
		return nil
	}
	msg := strings.TrimPrefix(rerr.Error(), ForeignKeyPrefix+" ")
	msg, _, _ = strings.Cut(msg, ";")
	typ, why, _ := strings.Cut(msg, " ")
	return exitcode.UsageError(&ForeignKeyError{Key: key, Algo: algo, Type: typ, Why: why})
}

// WrongTypeError is the server's WRONGTYPE answer for a limiter's key, as
// one exit-2 line; holds is the key's actual type when known ("" if not).
func WrongTypeError(key string, algo Algo, holds string) error {
	what := "another type of value"
	if holds != "" && holds != "none" {
		what = "a " + holds
	}
	return exitcode.Usagef("key %s holds %s, not the %s the %s script keeps there; nothing was written: pick another key, or pass --force to replace it",
		key, what, algo.StateType(), algo)
}

// Failure sorts why a decision failed: the reason label serve counts
// failures under.
type Failure int

// The reasons a decision fails.
const (
	FailTimeout     Failure = iota // no answer within the caller's deadline
	FailUnreachable                // connection refused or reset, BUSY, READONLY, ...
	FailNoPerm                     // the ACL refused the script or the key (NOPERM)
	FailScript                     // the script answered an error (a key holding foreign data, WRONGTYPE, ...)
	NumFailures
)

var failureNames = [NumFailures]string{"timeout", "unreachable", "noperm", "script"}

func (f Failure) String() string { return failureNames[f] }
