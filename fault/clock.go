package fault

import (
	"context"
	"time"
)

// Clock is the time an Injector schedules by. Tests inject one whose
// Sleep moves Now forward at once, so a plan's offsets are exact and no
// test waits for them.
type Clock interface {
	Now() time.Time
	// Sleep waits d (nothing when d <= 0) or until ctx is done, and then
	// returns ctx's error.
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the wall clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
