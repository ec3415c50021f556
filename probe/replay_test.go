package probe

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// TestReplayFirstAnswerSlow: a fingerprint the suite once failed under
// load (testdata/slow-first-answer.json, identity A of serve's token
// bucket of 10 at 5/s): the burst's first request took 125 ms to answer,
// so the bucket's refill began anywhere in that span, and only a moment
// in its middle explains both the burst refused at +0.21s and the single
// request admitted at +0.27s. The depth-first search spent its budget
// below the first request's earliest and latest moments and called the
// bucket a miss by 4; the search by clusters finds the fit. Its
// neighbours still miss.
func TestReplayFirstAnswerSlow(t *testing.T) {
	b, err := os.ReadFile("testdata/slow-first-answer.json")
	if err != nil {
		t.Fatal(err)
	}
	var obsv []Observation
	if err := json.Unmarshal(b, &obsv); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	var group []shot
	for _, o := range obsv {
		group = append(group, shot{obs: obs{Sent: at(o.SentMs), Done: at(o.DoneMs), Status: o.Status, Batch: o.Batch}, phase: o.Phase, key: o.Identity})
	}
	f := &fp{start: t0}
	for _, tt := range []struct {
		p    limiter.Params
		fits bool
	}{
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")}, true},
		{limiter.Params{Algo: limiter.GCRA, Burst: 10, Rate: rate.MustParse("5/s")}, true},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("6/s")}, false},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("4/s")}, false},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 11, Rate: rate.MustParse("5/s")}, false},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 9, Rate: rate.MustParse("5/s")}, false},
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 10, Window: 2 * time.Second}, false},
		{limiter.Params{Algo: limiter.FixedWindow, Limit: 10, Window: 2 * time.Second}, false},
	} {
		l, err := limiter.NewLimiter(tt.p)
		if err != nil {
			t.Fatal(err)
		}
		c := Candidate{Exact: true}
		replayGroup(l, group, &c, f.why)
		if fits := c.Mismatches == 0; fits != tt.fits {
			t.Errorf("%s: fits %v (misses %d: %s), want %v", tt.p.Spec(), fits, c.Mismatches, c.RuledOutBy, tt.fits)
		}
	}
}
