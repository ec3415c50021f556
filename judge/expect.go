package judge

import (
	"fmt"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// Expectation is the limiter a run is judged against (--expect): one
// model, several stacked ones that must all admit ("+"), the policy the
// target advertises (auto), or nothing (none).
type Expectation struct {
	Spec string // as given, e.g. "token-bucket:burst=10,rate=5/s"
	Auto bool   // read the model from RateLimit-Policy
	None bool   // judge no admitted count, even when a policy is advertised
	// Implicit: auto because no --expect was given; a target that
	// advertises no policy is then not judged (rather than failed).
	Implicit bool
	// Parts are the models that must all admit a request; empty under
	// Auto and None.
	Parts []limiter.Params
}

// ParseExpect reads --expect: "auto", "none", one model spec
// ("token-bucket:burst=10,rate=5/s", see limiter.ParseSpec) or several
// joined by "+", each of which must admit a request. Errors are exit 2.
func ParseExpect(s string) (*Expectation, error) {
	spec := strings.TrimSpace(s)
	switch strings.ToLower(spec) {
	case "auto":
		return &Expectation{Spec: "auto", Auto: true}, nil
	case "none":
		return &Expectation{Spec: "none", None: true}, nil
	case "":
		return nil, exitcode.Usagef("--expect is empty; use auto, none or a model such as %s", limiter.Lookup(limiter.TokenBucket).Example())
	}
	x := &Expectation{Spec: spec}
	for part := range strings.SplitSeq(spec, "+") {
		p, err := limiter.ParseSpec(part)
		if err != nil {
			return nil, exitcode.Usagef("--expect %q: %v; use %s, several joined by +, auto or none", s, err, limiter.SpecSyntax())
		}
		x.Parts = append(x.Parts, p)
	}
	return x, nil
}

// Default is the expectation of a run given no --expect: judge against
// the policy the target advertises, if any.
func Default() *Expectation { return &Expectation{Spec: "auto", Auto: true, Implicit: true} }

// Of is the expectation of one model.
func Of(p limiter.Params) Expectation {
	return Expectation{Spec: p.Spec(), Parts: []limiter.Params{p}}
}

// Judges reports whether x judges an admitted count at all.
func (x *Expectation) Judges() bool { return x != nil && !x.None }

// Describe names the model in words: "token bucket 10 + 5/s", or the
// parts joined by " and ".
func (x Expectation) Describe() string {
	words := make([]string, len(x.Parts))
	for i, p := range x.Parts {
		words[i] = p.Describe()
	}
	return strings.Join(words, " and ")
}

// SpecOf is the canonical spec of the parts.
func (x Expectation) SpecOf() string {
	specs := make([]string, len(x.Parts))
	for i, p := range x.Parts {
		specs[i] = p.Spec()
	}
	return strings.Join(specs, " + ")
}

// PerSecond is the long-run admissions per second of one identity: the
// tightest part's.
func (x Expectation) PerSecond() float64 {
	r := 0.0
	for i, p := range x.Parts {
		if v := p.PerSecond(); i == 0 || v < r {
			r = v
		}
	}
	return r
}

// model is a fresh model of x for one identity: every part decides every
// request, which passes when all of them admit it.
func (x Expectation) model() model.Limiter {
	if len(x.Parts) == 1 {
		return mustModel(x.Parts[0])
	}
	ms := make(all, len(x.Parts))
	for i, p := range x.Parts {
		ms[i] = mustModel(p)
	}
	return ms
}

func mustModel(p limiter.Params) model.Limiter {
	l, err := limiter.NewLimiter(p)
	if err != nil {
		panic(fmt.Sprintf("judge: model of unvalidated parameters %+v: %v", p, err))
	}
	return l.Model()
}

// all is a stack of models that must all admit.
type all []model.Limiter

func (a all) Allow(nowMs, cost int64) model.Decision {
	var out model.Decision
	for i, m := range a {
		d := m.Allow(nowMs, cost)
		if i == 0 {
			out = d
			continue
		}
		out.Allowed = out.Allowed && d.Allowed
		out.Remaining = min(out.Remaining, d.Remaining)
		out.RetryMs = max(out.RetryMs, d.RetryMs)
		out.ResetMs = max(out.ResetMs, d.ResetMs)
	}
	return out
}

// Readings are the models a RateLimit-Policy value may stand for, in a
// stable order: each of its items read as a token bucket (the quota
// refilled over the window), a sliding window or a fixed window, the same
// reading for every item. ok is false when no item has q > 0 and w > 0.
func Readings(policy string) (readings []Expectation, ok bool) {
	ps, err := header.ParsePolicies([]string{policy})
	if policy == "" || err != nil {
		return nil, false
	}
	var items []header.Policy
	for _, p := range ps {
		if p.Quota > 0 && p.Window > 0 {
			items = append(items, p)
		}
	}
	if len(items) == 0 {
		return nil, false
	}
	read := []func(q, w int64) limiter.Params{
		func(q, w int64) limiter.Params {
			window := time.Duration(w) * time.Second
			refill := rate.Rate{Count: float64(q), Per: window}
			if q%w == 0 {
				refill = rate.Rate{Count: float64(q / w), Per: time.Second}
			}
			return limiter.Params{Algo: limiter.TokenBucket, Capacity: q, Rate: refill, Cost: 1}
		},
		func(q, w int64) limiter.Params {
			return limiter.Params{Algo: limiter.SlidingWindow, Limit: q, Window: time.Duration(w) * time.Second, Cost: 1}
		},
		func(q, w int64) limiter.Params {
			return limiter.Params{Algo: limiter.FixedWindow, Limit: q, Window: time.Duration(w) * time.Second, Cost: 1}
		},
	}
	for _, r := range read {
		x := Expectation{}
		valid := true
		for _, it := range items {
			p := r(it.Quota, it.Window)
			if p.Validate() != nil {
				valid = false
				break
			}
			x.Parts = append(x.Parts, p)
		}
		if valid {
			x.Spec = x.SpecOf()
			readings = append(readings, x)
		}
	}
	return readings, len(readings) > 0
}
