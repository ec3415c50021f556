// Package exitcode maps errors to the process exit codes documented in the
// README: 0 ok, 1 a check or verdict failed, 2 usage or bad input, 3 Redis or
// the target unreachable.
package exitcode

import (
	"errors"
	"fmt"
)

// The documented exit codes.
const (
	OK          = 0
	Failed      = 1
	Usage       = 2
	Unreachable = 3
	// Internal is a bug in ratelimit itself (an error no part of the tool
	// classified, a recovered panic): never read as a verdict.
	Internal = 4
	// Interrupted is the shells' convention for a run stopped by SIGINT
	// (128 + 2), so an interrupted run never reads as a failed verdict.
	Interrupted = 130
)

// ErrCheckFailed is returned (usually wrapped with the failing check's name)
// when a command ran to the end but its verdict is "fail".
var ErrCheckFailed = errors.New("check failed")

type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// UsageError marks err as bad input (exit 2). A nil err stays nil.
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: Usage, err: err}
}

// Usagef formats a bad-input error (exit 2).
func Usagef(format string, args ...any) error {
	return &codedError{code: Usage, err: fmt.Errorf(format, args...)}
}

// UnreachableError marks err as "Redis or the target cannot be reached"
// (exit 3). A nil err stays nil.
func UnreachableError(err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: Unreachable, err: err}
}

// Unreachablef formats an unreachable error (exit 3).
func Unreachablef(format string, args ...any) error {
	return &codedError{code: Unreachable, err: fmt.Errorf(format, args...)}
}

// Failf formats a failed-verdict error (exit 1) that wraps ErrCheckFailed.
func Failf(format string, args ...any) error {
	return &codedError{code: Failed, err: fmt.Errorf(format+": %w", append(args, ErrCheckFailed)...)}
}

// Internalf formats an internal error (exit 4): a bug, not the user's input
// nor a verdict.
func Internalf(format string, args ...any) error {
	return &codedError{code: Internal, err: fmt.Errorf(format, args...)}
}

// Code returns the exit code for err: 0 for nil, the code of the outermost
// marked error, 1 for ErrCheckFailed, and 4 (internal) for anything
// unmarked, so an error nobody classified never reads as a failed verdict.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	if errors.Is(err, ErrCheckFailed) {
		return Failed
	}
	return Internal
}
