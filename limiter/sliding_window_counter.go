package limiter

import (
	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// SlidingWindowCounter: the previous window's count weighted by the part
// of it still inside the sliding window, plus the current count
// (Cloudflare's approximation; go-chi/httprate; limits' sliding window
// counter behind slowapi and Flask-Limiter; haproxy's http_req_rate;
// many INCR-based Lua scripts). A model only: no embedded script.
const SlidingWindowCounter Algo = "sliding-window-counter"

var slidingWindowCounter = Algorithm{
	Algo:    SlidingWindowCounter,
	Aliases: []string{"sliding_window_counter", "swc"},
	Words:   "sliding window counter",
	Params:  []Param{{Word: "limit", Key: "limit"}, {Word: "window", Key: "window"}},
	Options: []Option{
		{Key: "round", Default: RoundFloor, Values: []string{RoundFloor, RoundNearest, RoundNone},
			Help: "how the weighted count is rounded: floor (limits, haproxy), nearest (httprate) or none"},
		alignOption(AlignClock), offsetOption, countRefusedOption, blockOption,
	},
	validate: func(p Params) error { return validateWindow(p, MaxFixedLimit) },
	model: func(p Params) model.Limiter {
		round := map[string]model.Rounding{RoundNearest: model.RoundNearest, RoundNone: model.RoundNone}[p.Round]
		align := model.AlignClock
		if p.Align == AlignFirst {
			align = model.AlignFirst
		}
		return model.NewSlidingWindowCounter(p.Limit, p.Window.Milliseconds(), round, align, p.Offset.Milliseconds(), p.CountRefused)
	},
	policy:    windowPolicy,
	describe:  describeWindow("sliding window counter"),
	perSecond: windowPerSecond,
	quota:     windowQuota,
}
