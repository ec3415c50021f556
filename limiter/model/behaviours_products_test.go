package model_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/limtest"
)

// TestBehavioursAgainstReferences: the models of issue 31's behaviours
// decide every request as the reference targets of package limtest do
// (written apart, in the products' own style: wall-clock times, per-key
// records), over random parameters and random arrivals (bursts, gaps
// around the window, long idles), and the neighbouring model disagrees
// somewhere (each case's negative control).
func TestBehavioursAgainstReferences(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 1))
	type behaviour struct {
		name string
		// ref is the reference's spec, spec the model that is it, near
		// the neighbouring model that is not
		make func() (ref limtest.BehaviourSpec, spec, near string)
	}
	windowMs := func() int64 { return 100 * (1 + r.Int64N(30)) }
	behaviours := []behaviour{
		{"slowdown", func() (limtest.BehaviourSpec, string, string) {
			after, w, step := 1+r.IntN(8), windowMs(), 10*(1+r.Int64N(30))
			maxMs := step * (1 + r.Int64N(6))
			ref := limtest.BehaviourSpec{Kind: limtest.Slowdown, Limit: after, Window: ms(w), Step: ms(step), MaxDelay: ms(maxMs)}
			spec := fmt.Sprintf("slowdown:after=%d,window=%dms,step=%dms,max=%dms", after, w, step, maxMs)
			return ref, spec, fmt.Sprintf("slowdown:after=%d,window=%dms,step=%dms", after, w, step)
		}},
		{"block", func() (limtest.BehaviourSpec, string, string) {
			limit, w, block := 1+r.IntN(8), windowMs(), windowMs()*(1+r.Int64N(3))
			ref := limtest.BehaviourSpec{Kind: limtest.BlockAfterRefusal, Limit: limit, Window: ms(w), Block: ms(block)}
			return ref, fmt.Sprintf("fixed-window:limit=%d,window=%dms,block=%dms", limit, w, block), fmt.Sprintf("fixed-window:limit=%d,window=%dms", limit, w)
		}},
		{"elastic", func() (limtest.BehaviourSpec, string, string) {
			limit, w := 1+r.IntN(8), windowMs()
			ref := limtest.BehaviourSpec{Kind: limtest.ElasticExpiry, Limit: limit, Window: ms(w)}
			return ref, fmt.Sprintf("fixed-window:limit=%d,window=%dms,expiry=elastic", limit, w), fmt.Sprintf("fixed-window:limit=%d,window=%dms", limit, w)
		}},
		{"ticking", func() (limtest.BehaviourSpec, string, string) {
			limit, w := 1+r.IntN(8), windowMs()
			ref := limtest.BehaviourSpec{Kind: limtest.TickingWindow, Limit: limit, Window: ms(w)}
			return ref, fmt.Sprintf("fixed-window:limit=%d,window=%dms,align=creation", limit, w), fmt.Sprintf("fixed-window:limit=%d,window=%dms", limit, w)
		}},
		{"lossy bucket", func() (limtest.BehaviourSpec, string, string) {
			// rates whose token interval is whole ms: 1000 / rate
			every := []int64{50, 100, 125, 200, 250, 400, 500, 1000}[r.IntN(8)]
			rate := 1000 / float64(every)
			capacity := 1 + r.IntN(6)
			ref := limtest.BehaviourSpec{Kind: limtest.LossyBucket, Limit: capacity, Rate: rate}
			return ref, fmt.Sprintf("token-bucket:burst=%d,rate=%g/s,refill=whole", capacity, rate), fmt.Sprintf("token-bucket:burst=%d,rate=%g/s", capacity, rate)
		}},
		{"whole seconds", func() (limtest.BehaviourSpec, string, string) {
			limit, w := 2+r.IntN(8), 1+r.Int64N(3)
			ref := limtest.BehaviourSpec{Kind: limtest.WholeSeconds, Limit: limit, Window: time.Duration(w) * time.Second}
			return ref, fmt.Sprintf("fixed-window:limit=%d,window=%ds,timer=seconds,refuse-at=limit", limit, w),
				fmt.Sprintf("fixed-window:limit=%d,window=%ds,refuse-at=limit", limit, w)
		}},
	}
	for _, b := range behaviours {
		t.Run(b.name, func(t *testing.T) {
			nearDiffers := 0
			const cases = 300
			for c := range cases {
				ref, spec, near := b.make()
				beh := limtest.NewBehaviour(ref)
				m, nm := modelOf(t, spec), modelOf(t, near)
				now := 1_700_000_000_000 + r.Int64N(1000) // a Unix time in ms, any fraction of a second
				differs := false
				for i := range 150 {
					switch k := r.IntN(10); {
					case k < 5: // a burst: the same ms
					case k < 8:
						now += r.Int64N(ref.Window.Milliseconds()/4 + 40)
					case k < 9:
						now += r.Int64N(2*ref.Window.Milliseconds() + 200)
					default:
						now += r.Int64N(5000)
					}
					a := beh.Decide("k", time.UnixMilli(now))
					d := m.Allow(now, 1)
					delay := int64(0)
					if d.Allowed {
						delay = d.RetryMs
					}
					if d.Allowed != a.Allowed || delay != a.Delay.Milliseconds() {
						t.Fatalf("case %d, %s vs the reference %+v: request %d at +%d ms: model allowed %v delay %d ms, reference %v %s",
							c, spec, ref, i, now%100000, d.Allowed, delay, a.Allowed, a.Delay)
					}
					n := nm.Allow(now, 1)
					if n.Allowed != a.Allowed || n.Allowed && n.RetryMs != delay {
						differs = true
					}
				}
				if differs {
					nearDiffers++
				}
			}
			// the neighbour must be told apart in most cases
			if nearDiffers < cases/2 {
				t.Errorf("the neighbouring model differed from the reference in only %d of %d cases", nearDiffers, cases)
			}
			t.Logf("the neighbouring model differed in %d of %d cases", nearDiffers, cases)
		})
	}
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func modelOf(t *testing.T, spec string) model.Limiter {
	t.Helper()
	p, err := limiter.ParseSpec(spec)
	if err != nil {
		t.Fatalf("ParseSpec(%q): %v", spec, err)
	}
	l, err := limiter.NewLimiter(p)
	if err != nil {
		t.Fatal(err)
	}
	return l.Model()
}
