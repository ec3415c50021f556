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
	replayFile(t, "testdata/slow-first-answer.json", []replayCase{
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")}, true},
		{limiter.Params{Algo: limiter.GCRA, Burst: 10, Rate: rate.MustParse("5/s")}, true},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("6/s")}, false},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("4/s")}, false},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 11, Rate: rate.MustParse("5/s")}, false},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 9, Rate: rate.MustParse("5/s")}, false},
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 10, Window: 2 * time.Second}, false},
		{limiter.Params{Algo: limiter.FixedWindow, Limit: 10, Window: 2 * time.Second}, false},
	})
}

// TestReplayWindowSpreadBurst: another run the suite failed (cmd
// TestInitThenCheck, testdata/window-spread-burst.json, identity A of
// serve's sliding window of 10 per 2 s): the busy machine spread the
// first burst's sends over 84 ms, and which of its admissions expire
// before each refill request 2 s later is what the refill phase shows.
// Keeping 24 placements after each cluster lost the one that explains
// it (the model's state at the next cluster does not show when its
// entries expire); 160 kept it.
func TestReplayWindowSpreadBurst(t *testing.T) {
	replayFile(t, "testdata/window-spread-burst.json", []replayCase{
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 10, Window: 2 * time.Second}, true},
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 9, Window: 2 * time.Second}, false},
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 11, Window: 2 * time.Second}, false},
		{limiter.Params{Algo: limiter.FixedWindow, Limit: 10, Window: 2 * time.Second}, false},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")}, false},
	})
}

type replayCase struct {
	p    limiter.Params
	fits bool
}

// replayFile replays one identity's observations from file through each
// case's model and checks whether it fits.
func replayFile(t *testing.T, file string, cases []replayCase) {
	t.Helper()
	b, err := os.ReadFile(file)
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
	for _, tt := range cases {
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

// TestReplayWindowDecidedApart: a third run the suite failed (cmd
// TestInitThenCheck again, testdata/window-decided-apart.json, identity
// A of serve's sliding window of 10 per 2 s): the first burst's twelve
// requests took 60 to 130 ms to answer, and the target decided some of
// its admissions early and some late: two more expired just before the
// burst after the refill, the rest just after. No moment of that burst
// explains it unless the first burst's decisions are spread so, and
// the depth-first search gave the model up there as far off (missed by
// 5 at every moment of its own); the search by clusters finds the fit.
// Its neighbours still miss.
func TestReplayWindowDecidedApart(t *testing.T) {
	replayFile(t, "testdata/window-decided-apart.json", []replayCase{
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 10, Window: 2 * time.Second}, true},
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 9, Window: 2 * time.Second}, false},
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 11, Window: 2 * time.Second}, false},
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 10, Window: 2200 * time.Millisecond}, false},
		{limiter.Params{Algo: limiter.FixedWindow, Limit: 10, Window: 2 * time.Second}, false},
		{limiter.Params{Algo: limiter.FixedWindow, Limit: 10, Window: 2 * time.Second, Align: limiter.AlignClock}, false},
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s")}, false},
	})
}
