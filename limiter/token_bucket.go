package limiter

import (
	"fmt"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// TokenBucket: a bucket of capacity tokens refilled at rate per second.
const TokenBucket Algo = "token-bucket"

var tokenBucket = Algorithm{
	Algo:      TokenBucket,
	Aliases:   []string{"token_bucket", "tokenbucket", "bucket"},
	Words:     "token bucket",
	Params:    []Param{{Word: "capacity", Key: "burst", Aliases: []string{"capacity"}}, {Word: "rate", Key: "rate"}},
	Script:    &tokenBucketScript,
	StateType: "hash",
	ACL:       "+evalsha +eval +time +pttl +hmget +hlen +hset +pexpire +type +del",
	Options: []Option{
		{Key: "refill", Default: RefillExact, Values: []string{RefillExact, RefillWhole},
			Help: "exact (every fraction kept), or whole: whole tokens credited from the last admission, the fraction dropped (one request per 150 ms to a 5/s bucket: one admitted per 300 ms)"},
		blockOption,
	},
	validate: func(p Params) error {
		perSec := p.Rate.PerSecond()
		if p.Capacity <= 0 || p.Capacity > MaxCapacity {
			return paramErr("capacity", "token-bucket needs {capacity} from 1 to %d tokens, got %d", MaxCapacity, p.Capacity)
		}
		if !(perSec > 0) || perSec > MaxRatePerSec {
			return paramErr("rate", "token-bucket needs {rate} greater than 0 and at most %d/s (e.g. 5/s or 300/m), got %s", MaxRatePerSec, ShowRate(p.Rate))
		}
		// The same expression as token_bucket.lua, so both draw the line alike.
		if fill := float64(p.Capacity*model.Micro) / (perSec * 1000); fill > MaxFillMs {
			return paramErr("capacity", "token-bucket {capacity} %d at {rate} %s takes %s to fill; the most is 1e9 s (about 31 years): raise {rate} or lower {capacity}",
				p.Capacity, ShowRate(p.Rate), longDuration(fill))
		}
		if cost := max(p.Cost, 1); cost > p.Capacity {
			return paramErr("cost", "{cost} %d exceeds {capacity} %d: no call could ever pass", cost, p.Capacity)
		}
		return nil
	},
	args: func(p Params) []any {
		return []any{p.Capacity, formatFloat(p.Rate.PerSecond()), max(p.Cost, 1)}
	},
	replyLen: 4,
	decode:   decodeFour,
	model: func(p Params) model.Limiter {
		if p.Refill == RefillWhole {
			return model.NewTokenBucketWhole(p.Capacity, p.Rate.PerSecond())
		}
		return model.NewTokenBucket(p.Capacity, p.Rate.PerSecond())
	},
	policy: func(p Params) Policy {
		return Policy{Quota: p.Capacity, WindowSeconds: secs(float64(p.Capacity) / p.Rate.PerSecond())}
	},
	describe: func(p Params) string {
		s := fmt.Sprintf("token bucket %d + %s", p.Capacity, p.Rate)
		if p.Refill == RefillWhole {
			s += ", whole tokens from the last admission"
		}
		return s
	},
	perSecond: func(p Params) float64 { return p.Rate.PerSecond() },
	quota: func(p Params) (int64, time.Duration) {
		return p.Capacity, time.Duration(float64(p.Capacity) / p.Rate.PerSecond() * float64(time.Second))
	},
}

// decodeFour reads the reply {allowed, remaining, retry ms, reset ms}.
func decodeFour(_ Params, n []int64) Decision {
	return Decision{Allowed: n[0] == 1, Remaining: n[1], RetryMs: n[2], ResetMs: n[3]}
}
