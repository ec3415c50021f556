package limiter

import (
	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// SlidingWindow: a sliding-window log, at most limit admitted in any window.
const SlidingWindow Algo = "sliding-window"

var slidingWindow = Algorithm{
	Algo:      SlidingWindow,
	Aliases:   []string{"sliding_window", "sliding-window-log", "sliding-log", "sliding"},
	Words:     "sliding window",
	Params:    []Param{{Word: "limit", Key: "limit"}, {Word: "window", Key: "window"}},
	Script:    &slidingWindowScript,
	StateType: "zset",
	ACL:       "+evalsha +eval +time +pttl +zrange +zremrangebyscore +zcard +zadd +pexpire +type +del",
	NeedsID:   true,
	Options:   []Option{countRefusedOption, blockOption},
	validate:  func(p Params) error { return validateWindow(p, MaxWindowLimit) },
	args: func(p Params) []any {
		return []any{p.Window.Milliseconds(), p.Limit, "", max(p.Cost, 1)}
	},
	idAt:     2,
	replyLen: 4,
	decode:   decodeFour,
	model: func(p Params) model.Limiter {
		if p.CountRefused {
			return model.NewSlidingLogCountingRefused(p.Limit, p.Window.Milliseconds())
		}
		return model.NewSlidingWindow(p.Limit, p.Window.Milliseconds())
	},
	policy:    windowPolicy,
	describe:  describeWindow("sliding window"),
	perSecond: windowPerSecond,
	quota:     windowQuota,
}
