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
	Options: []Option{
		{Key: "align", Default: AlignFirst, Values: []string{AlignFirst, AlignClock, AlignCreation},
			Help: "where windows start: first (the first request after the last window ended), clock (floor(t / window)) or creation (every window from the key's first request, never re-anchored)"},
		offsetOption, countRefusedOption,
		{Key: "expiry", Default: ExpiryFixed, Values: []string{ExpiryFixed, ExpiryElastic},
			Help: "fixed, or elastic: every request, refused ones too, restarts the window (limits' elastic expiry: a client faster than the window stays refused)"},
		timerOption,
		{Key: "refuse-at", Default: RefuseOver, Values: []string{RefuseOver, RefuseLimit},
			Help: "over: the request that would exceed the limit is refused; limit: every request is counted and refused once the count reaches the limit (limit - 1 admitted)"},
		blockOption,
	},
	validate: func(p Params) error {
		if err := validateWindow(p, MaxFixedLimit); err != nil {
			return err
		}
		if p.Align == AlignClock && (p.Expiry == ExpiryElastic || p.Timer == TimerSeconds || p.RefuseAt == RefuseLimit) {
			return paramErr("", "fixed-window align=clock takes none of expiry=elastic, timer=seconds, refuse-at=limit")
		}
		if p.RefuseAt == RefuseLimit && max(p.Cost, 1) >= p.Limit {
			return paramErr("limit", "fixed-window refuse-at=limit admits %d per window (one fewer than {limit}): {cost} %d could never pass", p.Limit-1, max(p.Cost, 1))
		}
		return validateTimers(p)
	},
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
		if p.Align == AlignCreation || p.Expiry == ExpiryElastic || p.Timer == TimerSeconds || p.RefuseAt == RefuseLimit {
			return model.NewFixedWindowRules(fixedRules(p))
		}
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
