package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, OK},
		{"plain", errors.New("boom"), Internal},
		{"check failed", fmt.Errorf("race: %w", ErrCheckFailed), Failed},
		{"failf", Failf("script admitted %d of %d", 11, 10), Failed},
		{"usage", Usagef("bad rate %q", "abc"), Usage},
		{"wrapped usage", fmt.Errorf("eval: %w", Usagef("bad")), Usage},
		{"unreachable", UnreachableError(errors.New("connection refused")), Unreachable},
		{"wrapped unreachable", fmt.Errorf("x: %w", Unreachablef("dial %s", "127.0.0.1:1")), Unreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Code(tt.err); got != tt.want {
				t.Errorf("Code(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
	if UsageError(nil) != nil || UnreachableError(nil) != nil {
		t.Error("marking a nil error must give nil")
	}
	if !errors.Is(Failf("x"), ErrCheckFailed) {
		t.Error("Failf must wrap ErrCheckFailed")
	}
}
