package limiter

import (
	"errors"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// TestParamErrorNames: a bad parameter is exit 2 and a ParamError naming
// it by word, which each command can spell its own way.
func TestParamErrorNames(t *testing.T) {
	tests := []struct {
		p     Params
		param string
		plain string // Error()
		flags string // Named("--" + p)
	}{
		{Params{Algo: TokenBucket, Capacity: 0, Rate: rate.MustParse("1/s")}, "capacity",
			"token-bucket needs capacity from 1", "token-bucket needs --capacity from 1"},
		{Params{Algo: TokenBucket, Capacity: 5, Rate: rate.MustParse("1/s"), Cost: 9}, "cost",
			"cost 9 exceeds capacity 5", "--cost 9 exceeds --capacity 5"},
		{Params{Algo: SlidingWindow, Limit: 5, Window: 0}, "window",
			"sliding-window needs window of whole milliseconds", "sliding-window needs --window of whole milliseconds"},
		{Params{Algo: GCRA, Rate: rate.MustParse("1/s"), Burst: 0}, "burst",
			"gcra needs burst from 1", "gcra needs --burst from 1"},
	}
	for _, tt := range tests {
		_, err := NewLimiter(tt.p)
		var pe *ParamError
		if !errors.As(err, &pe) {
			t.Fatalf("NewLimiter(%+v) = %v, want a ParamError", tt.p, err)
		}
		if exitcode.Code(err) != exitcode.Usage {
			t.Errorf("NewLimiter(%+v): exit %d, want %d", tt.p, exitcode.Code(err), exitcode.Usage)
		}
		if pe.Param != tt.param {
			t.Errorf("NewLimiter(%+v): param %q, want %q", tt.p, pe.Param, tt.param)
		}
		if got := pe.Error(); !strings.HasPrefix(got, tt.plain) || strings.Contains(got, "--") {
			t.Errorf("Error() = %q, want it to start %q and name no flag", got, tt.plain)
		}
		if got := pe.Named(func(p string) string { return "--" + p }); !strings.HasPrefix(got, tt.flags) {
			t.Errorf("Named(--) = %q, want it to start %q", got, tt.flags)
		}
	}
}
