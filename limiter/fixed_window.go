package limiter

import (
	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// FixedWindow: a counter of limit per window, the window starting at a
// key's first request.
const FixedWindow Algo = "fixed-window"

var fixedWindow = Algorithm{
	Algo:      FixedWindow,
	Aliases:   []string{"fixed_window", "fixed"},
	Words:     "fixed window",
	Params:    []Param{{Word: "limit", Key: "limit"}, {Word: "window", Key: "window"}},
	Script:    &fixedWindowScript,
	StateType: "hash",
	ACL:       "+evalsha +eval +time +pttl +hmget +hlen +hincrby +hset +pexpire +type +del",
	Options:   []Option{alignOption(AlignFirst), offsetOption, countRefusedOption},
	validate:  func(p Params) error { return validateWindow(p, MaxFixedLimit) },
	args: func(p Params) []any {
		return []any{p.Window.Milliseconds(), p.Limit, max(p.Cost, 1)}
	},
	replyLen: 3,
	// {allowed, remaining, ms until the window resets}: a refused call
	// may retry at the reset, or never when the cost exceeds the limit.
	decode: func(p Params, n []int64) Decision {
		d := Decision{Allowed: n[0] == 1, Remaining: n[1], ResetMs: n[2]}
		if !d.Allowed {
			d.RetryMs = n[2]
			if max(p.Cost, 1) > p.Limit {
				d.RetryMs = -1
			}
		}
		return d
	},
	model: func(p Params) model.Limiter {
		if p.Align == AlignClock {
			return model.NewFixedWindowAligned(p.Limit, p.Window.Milliseconds(), p.Offset.Milliseconds(), p.CountRefused)
		}
		// a window from a key's first request: counting refusals changes
		// no admission of a fixed window
		return model.NewFixedWindow(p.Limit, p.Window.Milliseconds())
	},
	policy:    windowPolicy,
	describe:  describeWindow("fixed window"),
	perSecond: windowPerSecond,
	quota:     windowQuota,
}
