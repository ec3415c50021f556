package judge

import "github.com/ratelimit-dev/ratelimit/limiter/model"

// replay is the one replay of arrivals through a model: one model per
// identity, fed in time order, each at the replay's time base (the run's
// start, wall clock) plus the arrival's offset. Every count the verdict
// makes (the run's, a fault window's, a segment merge's, a recording's)
// comes from a replay.
type replay struct {
	x       Expectation
	startMs int64
	models  []model.Limiter // by identity, made on first use
	last    []int64         // by identity: the last time fed (ns)
	seen    []bool
}

func newReplay(x Expectation, startMs int64) *replay {
	return &replay{x: x, startMs: startMs}
}

// decide feeds identity's model one request at offset atNs and reports
// whether the model admits it. ok is false when atNs is before the last
// time fed to that identity: the model has moved past it.
func (r *replay) decide(identity int, atNs int64) (admitted, ok bool) {
	d, ok := r.decision(identity, atNs)
	return d.Allowed, ok
}

// decision is decide with the model's whole answer (a leaky bucket's
// delay is its RetryMs when admitted).
func (r *replay) decision(identity int, atNs int64) (model.Decision, bool) {
	for len(r.models) <= identity {
		r.models = append(r.models, nil)
		r.last = append(r.last, 0)
		r.seen = append(r.seen, false)
	}
	if r.seen[identity] && atNs < r.last[identity] {
		return model.Decision{}, false
	}
	m := r.models[identity]
	if m == nil {
		m = r.x.model()
		r.models[identity] = m
	}
	r.seen[identity], r.last[identity] = true, atNs
	return m.Allow(r.startMs+atNs/1e6, 1), true
}
