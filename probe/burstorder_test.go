package probe

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A burst's answers come back in any order: the request sent alone after
// it is judged against the lowest remaining the burst was told (where the
// counter stands), not the last answer in the list. A request that skips
// values still fails.
func TestRemainingAfterBurstInAnyOrder(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	answer := func(sent, done time.Duration, r int) obs {
		h := http.Header{}
		h.Set("RateLimit-Policy", `"default";q=1000;w=60`)
		h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=60`, r))
		return obs{Identity: "A", Sent: at.Add(sent), Done: at.Add(done), Status: 200, Batch: 1, Header: h}
	}
	burst := []obs{ // five in flight together, answered out of order
		answer(0, 9*time.Millisecond, 997),
		answer(0, 8*time.Millisecond, 995),
		answer(0, 7*time.Millisecond, 998),
		answer(0, 6*time.Millisecond, 996),
		answer(0, 5*time.Millisecond, 999), // listed last, decided first
	}
	for _, tt := range []struct {
		next int
		fail bool
	}{{994, false}, {992, true}} {
		a := append(append([]obs(nil), burst...), answer(20*time.Millisecond, 21*time.Millisecond, tt.next))
		a[5].Batch = 0
		d := &data{q: 1000, w: time.Minute, a: a}
		c := d.headers()
		failed := c.Status == Fail && strings.Contains(strings.Join(c.Evidence, " "), "across one admitted request")
		if failed != tt.fail {
			t.Errorf("r=%d after a burst down to 995: %s %q, want failed %v", tt.next, c.Status, c.Message, tt.fail)
		}
	}
}
