package limiter

import (
	"fmt"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// LeakyBucket: nginx's limit_req, a leaky bucket in milli-requests. A key
// nginx has not seen starts empty: burst + 1 pass at once, then burst
// after draining; refused requests change nothing. delay=N is its
// two-stage mode (the first N of the burst at once, the rest delayed);
// without delay= it is nodelay. A model only: no embedded script.
const LeakyBucket Algo = "leaky-bucket"

var leakyBucket = Algorithm{
	Algo:    LeakyBucket,
	Aliases: []string{"leaky_bucket", "leaky", "nginx"},
	Words:   "leaky bucket",
	Params:  []Param{{Word: "rate", Key: "rate"}, {Word: "burst", Key: "burst"}},
	Options: []Option{{Key: "delay", Help: "nginx's delay=N: the first N requests of the burst at once, the rest delayed (default nodelay; 0: every excess request delayed)"}, blockOption},
	validate: func(p Params) error {
		if leakMilli(p) <= 0 || p.Rate.PerSecond() > MaxGCRARate {
			return paramErr("rate", "leaky-bucket needs {rate} of at least 0.001/s and at most %d/s (nginx counts milli-requests), got %s", MaxGCRARate, ShowRate(p.Rate))
		}
		if p.Burst < 0 || p.Burst > MaxCapacity {
			return paramErr("burst", "leaky-bucket needs {burst} from 0 to %d, got %d", MaxCapacity, p.Burst)
		}
		if p.DelaySet && p.Delay > p.Burst {
			return paramErr("burst", "leaky-bucket delay=%d exceeds {burst} %d", p.Delay, p.Burst)
		}
		if cost := max(p.Cost, 1); cost > p.Burst+1 {
			return paramErr("cost", "{cost} %d exceeds {burst} %d + 1: no call could ever pass", cost, p.Burst)
		}
		return nil
	},
	model: func(p Params) model.Limiter {
		delay := int64(-1)
		if p.DelaySet {
			delay = p.Delay
		}
		return model.NewLeakyBucket(leakMilli(p), p.Burst, delay)
	},
	policy: func(p Params) Policy {
		return Policy{Quota: p.Burst + 1, WindowSeconds: secs(float64(p.Burst+1) / p.Rate.PerSecond())}
	},
	describe: func(p Params) string {
		s := fmt.Sprintf("leaky bucket %s burst %d", p.Rate, p.Burst)
		if p.DelaySet {
			return s + fmt.Sprintf(", delay %d", p.Delay)
		}
		return s + ", nodelay"
	},
	perSecond: func(p Params) float64 { return float64(leakMilli(p)) / 1000 },
	quota: func(p Params) (int64, time.Duration) {
		return p.Burst + 1, time.Duration(float64(p.Burst+1) / p.Rate.PerSecond() * float64(time.Second))
	},
}

// leakMilli is the rate as nginx stores it: milli-requests per second,
// truncated (5r/s is 5000, 7r/m is 116).
func leakMilli(p Params) int64 {
	if p.Rate.Per <= 0 {
		return 0
	}
	return int64(p.Rate.Count * 1000 * float64(time.Second) / float64(p.Rate.Per))
}
