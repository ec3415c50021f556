package limtest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limtest"
)

// TestBehave: the reference targets answer over HTTP as their decisions
// say: a block refuses past the window, a slowdown holds the request, the
// reset goes out as an HTTP-date in GMT or UTC.
func TestBehave(t *testing.T) {
	t.Parallel()
	t.Run("block", func(t *testing.T) {
		u := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.BlockAfterRefusal, Limit: 2, Window: 100 * time.Millisecond, Block: 10 * time.Second, KeyHeader: "X-Client-Id"})
		wantStatuses(t, burst(t, u, 3, "X-Client-Id", "a"), 200, 200, 429)
		time.Sleep(150 * time.Millisecond) // the window is over, the block is not
		wantStatuses(t, burst(t, u, 1, "X-Client-Id", "a"), 429)
		wantStatuses(t, burst(t, u, 1, "X-Client-Id", "b"), 200)
	})
	t.Run("slowdown", func(t *testing.T) {
		u := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.Slowdown, Limit: 1, Window: 10 * time.Second, Step: 300 * time.Millisecond})
		burst(t, u, 1)
		start := time.Now()
		wantStatuses(t, burst(t, u, 1), 200)
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Errorf("the second request took %s, want at least the 300 ms step", took)
		}
	})
	for _, zone := range []string{"GMT", "UTC"} {
		t.Run("date "+zone, func(t *testing.T) {
			u := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.TickingWindow, Limit: 1, Window: 10 * time.Second, DateReset: true, DateZone: zone})
			rs := burst(t, u, 2)
			wantStatuses(t, rs, 200, 429)
			v := header(t, rs[1], "X-RateLimit-Reset", `[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d `+zone)
			at, err := http.ParseTime(v[:len(v)-3] + "GMT")
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Until(at); d < 9*time.Second || d > 11*time.Second {
				t.Errorf("X-RateLimit-Reset %s is %s away, want the window's end, about 10 s", v, d)
			}
			header(t, rs[1], "Retry-After", "10|9")
		})
	}
}
