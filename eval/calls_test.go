package eval

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// TestCheckCalls (issue 26): -n 1000000000 and --interval 1000000h ran
// for ever. -n, --interval and the pauses of a whole run have ceilings,
// each refused (exit 2) naming it; up to them a run is accepted.
func TestCheckCalls(t *testing.T) {
	for _, c := range []struct {
		n        int
		interval time.Duration
		want     string // "" accepted
	}{
		{0, 0, ""}, {1, 0, ""}, {MaxCount, 0, ""}, {2, MaxInterval, ""}, {25, time.Hour, ""}, {86401, time.Second, ""},
		{1_000_000_000, 0, "ceiling of 100,000 calls"},
		{MaxCount + 1, 0, "ceiling of 100,000 calls"},
		{2, 1_000_000 * time.Hour, "ceiling of 1h"},
		{26, time.Hour, "ceiling of 24h"},
		{86402, time.Second, "ceiling of 24h"},
		{-1, 0, "at least 1"},
		{1, -time.Second, "negative"},
	} {
		err := CheckCalls(c.n, c.interval)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckCalls(%d, %s) = %v, want nil", c.n, c.interval, err)
		case c.want != "" && (exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckCalls(%d, %s) = %v, want exit 2 naming %q", c.n, c.interval, err, c.want)
		}
	}
}
