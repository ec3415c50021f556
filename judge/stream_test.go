package judge

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/ratelimit-dev/ratelimit/limiter"
)

// randomArrivals is a run of n arrivals over ids identities: sends in
// order with gaps of up to 120 ms (ties included), latencies up to 600 ms,
// a mix of statuses with transport errors.
func randomArrivals(rng *rand.Rand, n, ids int) []Arrival {
	as := make([]Arrival, n)
	var t int64
	statuses := []int{200, 200, 200, 429, 429, 0, 503, 302}
	for i := range as {
		if rng.IntN(8) > 0 {
			t += rng.Int64N(120e6)
		}
		lat := rng.Int64N(600e6)
		if rng.IntN(20) == 0 {
			lat = 0
		}
		as[i] = Arrival{Identity: rng.IntN(ids), DueNs: t, SendNs: t, DoneNs: t + lat, Status: statuses[rng.IntN(len(statuses))]}
	}
	return as
}

// streamJudge feeds in's arrivals to a StreamJudge the way a recording
// reaches it: by send time, then (in any interleaving) by done time.
func streamFeed(t *testing.T, x Expectation, in Input, rng *rand.Rand) Judged {
	t.Helper()
	j := NewStream(x, in.StartMs)
	byDone := slices.Clone(in.Arrivals)
	slices.SortStableFunc(byDone, func(a, b Arrival) int { return int(a.DoneNs - b.DoneNs) })
	// the policy may be known before the first arrival or only later
	policyAt := rng.IntN(len(in.Arrivals) + 1)
	si, di := 0, 0
	for si < len(in.Arrivals) || di < len(byDone) {
		if si == policyAt {
			if err := j.SetPolicy(in.Policy); err != nil {
				t.Fatal(err)
			}
		}
		if di == len(byDone) || si < len(in.Arrivals) && rng.IntN(2) == 0 {
			if err := j.Send(in.Arrivals[si]); err != nil {
				t.Fatal(err)
			}
			si++
			continue
		}
		if err := j.Done(byDone[di]); err != nil {
			t.Fatal(err)
		}
		di++
	}
	if err := j.SetPolicy(in.Policy); err != nil {
		t.Fatal(err)
	}
	return j.Finish(in.Identities, in.JitterMs, in.Policy)
}

// TestStreamOrderFree: on random runs of every model, and --expect auto
// with and without a policy, a Stream fed the way a recording reaches it
// (sends and ends interleaved at random, the policy learnt at any point)
// returns exactly what Judge returns on all the arrivals at once, and for
// an explicit model the count agrees with a replay written here from
// scratch (each identity's sends sorted, one fresh model each).
func TestStreamOrderFree(t *testing.T) {
	specs := []string{"token-bucket:burst=10,rate=5/s", "sliding-window:limit=7,window=2s", "fixed-window:limit=12,window=3s", "gcra:rate=4/s,burst=3", "auto"}
	policies := []string{`"default";q=10;w=2`, `"default";q=7;w=3`, "", `"x";q=0;w=2`}
	rng := rand.New(rand.NewPCG(17, 2026))
	for trial := range 400 {
		spec := specs[trial%len(specs)]
		x, err := ParseExpect(spec)
		if err != nil {
			t.Fatal(err)
		}
		ids := 1 + rng.IntN(4)
		in := Input{
			Arrivals:   randomArrivals(rng, rng.IntN(250), ids),
			Identities: ids,
			StartMs:    1_780_000_000_000 + rng.Int64N(1000),
			JitterMs:   rng.Float64() * 40,
			Policy:     policies[rng.IntN(len(policies))],
		}
		want := Judge(*x, in)
		got := streamFeed(t, *x, in, rng)
		if !x.Auto {
			if n := naiveCount(x.Parts[0], in); n != want.Expected {
				t.Fatalf("trial %d, %s: Judge expects %d, the naive replay %d", trial, spec, want.Expected, n)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d, %s, %d arrivals, %d identities, policy %q:\nstream %+v\njudge  %+v", trial, spec, len(in.Arrivals), ids, in.Policy, got, want)
		}
	}
}

// TestStreamOrder: an arrival fed before the last one of its identity is
// refused; other identities may come in any order.
func TestStreamOrder(t *testing.T) {
	x, _ := ParseExpect("token-bucket:burst=10,rate=5/s")
	j := NewStream(*x, 0)
	for _, a := range []Arrival{{Identity: 0, SendNs: 5e6, Status: 200}, {Identity: 1, SendNs: 1e6, Status: 200}, {Identity: 0, SendNs: 6e6, Status: 0}} {
		if err := j.Send(a); err != nil {
			t.Fatalf("Send(%+v) = %v", a, err)
		}
	}
	if err := j.Send(Arrival{Identity: 0, SendNs: 4e6, Status: 429}); !errors.Is(err, ErrOutOfOrder) {
		t.Errorf("Send before the last send of its identity = %v, want ErrOutOfOrder", err)
	}
	if err := j.Done(Arrival{Identity: 0, DoneNs: 9e6, Status: 200}); err != nil {
		t.Fatal(err)
	}
	if err := j.Done(Arrival{Identity: 0, DoneNs: 8e6, Status: 200}); !errors.Is(err, ErrOutOfOrder) {
		t.Errorf("Done before the last done of its identity = %v, want ErrOutOfOrder", err)
	}
}

// naiveCount replays every arrival through one fresh model of
// p per identity, each identity's sends sorted: the oracle the one replay
// is held against.
func naiveCount(p limiter.Params, in Input) int64 {
	per := map[int][]int64{}
	for _, a := range in.Arrivals {
		per[a.Identity%in.Identities] = append(per[a.Identity%in.Identities], a.SendNs)
	}
	var n int64
	for _, sends := range per {
		slices.Sort(sends)
		l, _ := limiter.NewLimiter(p)
		m := l.Model()
		for _, s := range sends {
			if m.Allow(in.StartMs+s/1e6, 1).Allowed {
				n++
			}
		}
	}
	return n
}
