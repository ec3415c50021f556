package limiter

import (
	"fmt"
	"math"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// GCRA: the generic cell rate algorithm, rate per second with a burst.
const GCRA Algo = "gcra"

var gcra = Algorithm{
	Algo:      GCRA,
	Words:     "gcra",
	Params:    []Param{{Word: "rate", Key: "rate"}, {Word: "burst", Key: "burst"}},
	Script:    &gcraScript,
	StateType: "string",
	ACL:       "+evalsha +eval +time +pttl +get +set +type +del",
	Options:   []Option{blockOption},
	validate: func(p Params) error {
		perSec := p.Rate.PerSecond()
		if !(perSec > 0) || perSec > MaxGCRARate {
			return paramErr("rate", "gcra needs {rate} greater than 0 and at most %d/s, got %s", MaxGCRARate, ShowRate(p.Rate))
		}
		if p.Burst <= 0 || p.Burst > MaxCapacity {
			return paramErr("burst", "gcra needs {burst} from 1 to %d, got %d", MaxCapacity, p.Burst)
		}
		// The same expression as gcra.lua: emission interval (µs) x burst.
		if tol := math.Floor(1e6/perSec+0.5) * float64(p.Burst); tol > MaxGCRATolUs {
			return paramErr("burst", "gcra {burst} %d at {rate} %s spans %s; the most is 1e9 s (about 31 years): raise {rate} or lower {burst}",
				p.Burst, ShowRate(p.Rate), longDuration(tol/1000))
		}
		if cost := max(p.Cost, 1); cost > p.Burst {
			return paramErr("cost", "{cost} %d exceeds {burst} %d: no call could ever pass", cost, p.Burst)
		}
		return nil
	},
	args: func(p Params) []any {
		return []any{formatFloat(p.Rate.PerSecond()), p.Burst, max(p.Cost, 1)}
	},
	replyLen: 4,
	decode:   decodeFour,
	model:    func(p Params) model.Limiter { return model.NewGCRA(p.Rate.PerSecond(), p.Burst) },
	policy: func(p Params) Policy {
		return Policy{Quota: p.Burst, WindowSeconds: secs(float64(p.Burst) / p.Rate.PerSecond())}
	},
	describe:  func(p Params) string { return fmt.Sprintf("gcra %s burst %d", p.Rate, p.Burst) },
	perSecond: func(p Params) float64 { return p.Rate.PerSecond() },
	quota: func(p Params) (int64, time.Duration) {
		return p.Burst, time.Duration(float64(p.Burst) / p.Rate.PerSecond() * float64(time.Second))
	},
}
