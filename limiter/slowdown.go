package limiter

import (
	"fmt"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// Slowdown: a limiter that never refuses but delays. Requests are counted
// in fixed windows from a key's first request (the first after the last
// window ended), refused or not; the n-th of a window, n > after, is held
// for (n - after) x step, at most max: express-slow-down's delayAfter,
// delayMs and maxDelayMs (its defaults: step 1s, no cap). load --expect
// judges its delays from the latency of the requests it holds back. A
// model only: no embedded script.
const Slowdown Algo = "slowdown"

var slowdownAlgo = Algorithm{
	Algo:    Slowdown,
	Aliases: []string{"slow-down", "slow_down"},
	Words:   "slowdown",
	Params:  []Param{{Word: "limit", Key: "after", Aliases: []string{"limit", "delay-after"}}, {Word: "window", Key: "window"}},
	Options: []Option{
		{Key: "step", Default: "1s", Help: "each request over the limit is held this much longer than the one before (express-slow-down's delayMs, 1s by default)"},
		{Key: "max", Help: "the longest delay (maxDelayMs); default: no cap"},
		timerOption,
		blockOption,
	},
	validate: func(p Params) error {
		if err := validateWindow(p, MaxFixedLimit); err != nil {
			return err
		}
		if p.Step < 0 || p.MaxDelay < 0 {
			return paramErr("", "slowdown step= and max= must be positive durations")
		}
		return validateTimers(p)
	},
	model: func(p Params) model.Limiter {
		return model.NewSlowdown(fixedRules(p), slowdownStep(p).Milliseconds(), p.MaxDelay.Milliseconds())
	},
	policy: windowPolicy,
	describe: func(p Params) string {
		s := fmt.Sprintf("slowdown after %d per %s, +%s each", p.Limit, ShortDuration(p.Window), ShortDuration(slowdownStep(p)))
		if p.MaxDelay > 0 {
			s += ", up to " + ShortDuration(p.MaxDelay)
		}
		if p.Timer == TimerSeconds {
			s += ", whole-second timers"
		}
		return s
	},
	// the requests served at once: the delayed ones are admitted too
	perSecond: windowPerSecond,
	quota:     windowQuota,
}

// slowdownStep is step=, 1s when unset.
func slowdownStep(p Params) time.Duration {
	if p.Step <= 0 {
		return time.Second
	}
	return p.Step
}
