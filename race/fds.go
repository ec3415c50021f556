package race

import (
	"errors"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// FDLimit is the process's open-file limit before and after EnsureFDLimit.
type FDLimit struct {
	Before, After, Hard uint64
}

// Raised reports whether EnsureFDLimit raised the soft limit.
func (l FDLimit) Raised() bool { return l.After > l.Before }

// errNoRlimit means the platform has no RLIMIT_NOFILE to read or raise.
var errNoRlimit = errors.New("open-file limit not available on this platform")

// FDsNeeded is a generous estimate of the file descriptors a run of
// concurrency goroutines needs: one connection each (two with the embedded
// server, which holds the other end in this process) plus headroom.
func FDsNeeded(concurrency int, embedded bool) uint64 {
	per := uint64(1)
	if embedded {
		per = 2
	}
	return per*uint64(max(concurrency, 0)) + 64
}

// EnsureFDLimit raises the soft RLIMIT_NOFILE towards the hard limit when
// it is below need. When even the hard limit is too low it returns an exit-2
// error that says how to raise it. On platforms without the limit it does
// nothing.
func EnsureFDLimit(need uint64) (FDLimit, error) {
	return ensureFDLimit(need, getNofile, setNofile)
}

func ensureFDLimit(need uint64, get func() (cur, hard uint64, err error), set func(cur uint64) error) (FDLimit, error) {
	cur, hard, err := get()
	if err != nil {
		return FDLimit{}, nil // unknown: let the dials report what happens
	}
	l := FDLimit{Before: cur, After: cur, Hard: hard}
	if cur >= need {
		return l, nil
	}
	if hard < need {
		return l, exitcode.Usagef("this run needs about %d open files but the hard limit is %d (soft %d); raise it with 'ulimit -n %d' (as root, or in /etc/security/limits.conf) or lower --concurrency", need, hard, cur, need)
	}
	// Prefer the hard limit; fall back to just what is needed (an infinite
	// hard limit cannot be set as the soft one on Linux).
	for _, target := range []uint64{hard, need} {
		if err := set(target); err == nil {
			l.After = target
			return l, nil
		}
	}
	return l, exitcode.Usagef("this run needs about %d open files but the limit is %d and raising it failed; raise it with 'ulimit -n %d' or lower --concurrency", need, cur, need)
}
