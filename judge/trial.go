package judge

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// This file judges calls of a limiter script on one key against a model
// (race --expect, eval --expect) with the one replay. The script decided
// each call at some moment between its send and its answer; the verdict
// asks whether some choice of those moments makes the model decide as the
// script did. The answer bound is AnswerSlack later, as the script's
// clock (TIME) and the replay both count whole milliseconds.

// AnswerSlack widens the answer bound for the millisecond clocks: a
// script reading TIME at the moment of its answer may see the next
// millisecond of the replay's.
const AnswerSlack = 1_000_000 // ns

// Call is one call of a script: when it was sent and when its answer came
// (ns after the replay's time base), and what the script decided.
type Call struct {
	SendNs  int64
	DoneNs  int64
	Allowed bool
	// Unknown: the call failed, so its decision was not read; the script
	// may or may not have decided it.
	Unknown bool
}

// Bounds is the verdict on a trial of calls sent at once to one key: the
// script's admissions must lie between the fewest and the most the model
// admits when it decides each call somewhere between its send and its
// answer, whatever order the calls reached the script in.
type Bounds struct {
	Model       string `json:"model"`       // the --expect value
	Description string `json:"description"` // the model in words
	Observed    int64  `json:"observed"`    // calls the script allowed
	Of          int64  `json:"of"`          // calls made
	// Low is the model's admissions with every call decided at its send,
	// less Unknown; High the most it admits with each decided as early
	// in its span as the model admits it.
	Low  int64 `json:"low"`
	High int64 `json:"high"`
	// Unknown counts the calls that failed: each may have been admitted
	// unseen, so Low is lower by as many.
	Unknown int64   `json:"unknown"`
	SpanMs  float64 `json:"span_ms"` // from the first send to the last answer
	Pass    bool    `json:"pass"`
}

// Range shows the admissions the model allows: "10" or "10 to 13".
func (b Bounds) Range() string {
	if b.Low == b.High {
		return strconv.FormatInt(b.Low, 10)
	}
	return fmt.Sprintf("%d to %d", b.Low, b.High)
}

// Trial judges calls made at once against one key. The calls are alike,
// so only their moments matter: the k-th moment lies between the k-th
// send and the k-th answer (each in time order), which holds for every
// way the script can have decided them. Low replays the model at the
// sends; High places each moment, in order, at the earliest time of its
// span at which the model admits the call (an earlier admission never
// leaves the model less room later), or at the span's start when it
// admits it nowhere. startMs is the wall clock of the time base, ms.
func Trial(x Expectation, startMs int64, calls []Call) Bounds {
	b := Bounds{Model: x.Spec, Description: x.Describe(), Of: int64(len(calls))}
	if len(calls) == 0 {
		b.Pass = true
		return b
	}
	sends := make([]int64, 0, len(calls))
	dones := make([]int64, 0, len(calls))
	first, last := calls[0].SendNs, calls[0].DoneNs
	for _, c := range calls {
		if c.Allowed {
			b.Observed++
		}
		if c.Unknown {
			b.Unknown++
		}
		sends = append(sends, c.SendNs)
		dones = append(dones, c.DoneNs+AnswerSlack)
		first, last = min(first, c.SendNs), max(last, c.DoneNs)
	}
	slices.Sort(sends)
	slices.Sort(dones)
	low := newReplay(x, startMs)
	for _, t := range sends {
		if ok, _ := low.decide(0, t); ok {
			b.Low++
		}
	}
	b.Low = max(0, b.Low-b.Unknown)
	tw := newTwin(x, startMs)
	at := sends[0]
	for k := range sends {
		lo := max(sends[k], at)
		var admitted bool
		at, admitted = tw.earliest(lo, max(dones[k], lo), true)
		if admitted {
			b.High++
		}
	}
	b.High = max(b.High, b.Low)
	b.SpanMs = float64((last-first)/1e3) / 1e3
	b.Pass = b.Observed >= b.Low && b.Observed <= b.High
	return b
}

// twin is two replays of one identity fed the same moments, so a moment
// tried on one and rejected can be tried otherwise on the other; the
// spoiled one is then rebuilt from the moments chosen.
type twin struct {
	x       Expectation
	startMs int64
	a, b    *replay
	moments []int64
}

func newTwin(x Expectation, startMs int64) *twin {
	return &twin{x: x, startMs: startMs, a: newReplay(x, startMs), b: newReplay(x, startMs)}
}

// rebuild replays the moments chosen on a fresh replay.
func (t *twin) rebuild() *replay {
	r := newReplay(t.x, t.startMs)
	for _, m := range t.moments {
		r.decision(0, m)
	}
	return r
}

// earliest gives the model one call in [lo, hi] (ns, lo <= hi): at lo if
// the model decides there as want says (true: admits), else at the time
// the model's refusal names for a retry, if that is within hi and it
// admits there, else at hi when hi is another millisecond. It returns the
// moment chosen and the decision there; when no moment tried decides as
// want, the call is given at lo (nothing is gained by a later moment).
func (t *twin) earliest(lo, hi int64, want bool) (int64, bool) {
	d, _ := t.a.decision(0, lo)
	if d.Allowed == want {
		t.b.decision(0, lo)
		t.moments = append(t.moments, lo)
		return lo, d.Allowed
	}
	try := hi
	if want && d.RetryMs >= 0 {
		try = min(hi, (lo/1e6+d.RetryMs)*1e6)
	}
	if want && d.RetryMs < 0 || try/1e6 <= lo/1e6 {
		t.b.decision(0, lo)
		t.moments = append(t.moments, lo)
		return lo, d.Allowed
	}
	for {
		d2, _ := t.b.decision(0, try)
		if d2.Allowed == want {
			t.moments = append(t.moments, try)
			t.a = t.rebuild()
			return try, d2.Allowed
		}
		t.b = t.rebuild() // spoiled by the moment tried
		if try == hi {
			break
		}
		try = hi // the retry the model named was short of it: the span's end
	}
	t.b.decision(0, lo)
	t.moments = append(t.moments, lo)
	return lo, d.Allowed
}

// Sequence is the verdict on calls made one after another: every call's
// decision compared with the model's at that call's time.
type Sequence struct {
	Model       string `json:"model"`
	Description string `json:"description"`
	Calls       int64  `json:"calls"`
	Observed    int64  `json:"observed"` // calls the script allowed
	Pass        bool   `json:"pass"`
	// First is the first call the model decides otherwise; nil when
	// every call agrees.
	First *Disagreement `json:"first_disagreement,omitempty"`
}

// Disagreement is a call the model decides otherwise at every moment
// between its send and its answer.
type Disagreement struct {
	N       int     `json:"n"`       // the call's number, from 1
	Allowed bool    `json:"allowed"` // what the script answered; the model the opposite
	Before  int64   `json:"admitted_before"`
	SinceMs float64 `json:"since_first_ms"` // from the first call's send to this call's answer
}

// Message says the verdict in one line: "call 11 allowed; the model
// refuses it: 10 admitted in 3 ms by token bucket 10 + 5/s".
func (s Sequence) Message() string {
	if d := s.First; d != nil {
		said, model := "refused", "admits"
		if d.Allowed {
			said, model = "allowed", "refuses"
		}
		return fmt.Sprintf("call %d %s; the model %s it: %d admitted in %s ms by %s", d.N, said, model, d.Before,
			strconv.FormatFloat(d.SinceMs, 'f', 1, 64), s.Description)
	}
	return fmt.Sprintf("every call decided as %s decides it at its time (%d of %d allowed)", s.Description, s.Observed, s.Calls)
}

// Sequential judges calls made one after another against one key, in
// order. Each call is given to the model at a moment of its span (from
// its send, or the previous call's moment if later, to its answer) at
// which the model decides as the script did: first the earliest such
// moment, call after call; where that finds none, again with the latest
// (a call decided late makes room for one decided early after it). When
// neither finds a moment for a call, the first disagreement of the
// earliest choice is the failure and the judging stops. startMs is the
// wall clock of the time base, ms.
func Sequential(x Expectation, startMs int64, calls []Call) Sequence {
	s := sequential(x, startMs, calls, false)
	if s.Pass {
		return s
	}
	if late := sequential(x, startMs, calls, true); late.Pass {
		return late
	}
	return s
}

// sequential is Sequential with one choice of moments: the earliest that
// agrees, or with late the latest.
func sequential(x Expectation, startMs int64, calls []Call, late bool) Sequence {
	s := Sequence{Model: x.Spec, Description: x.Describe(), Calls: int64(len(calls)), Pass: true}
	for _, c := range calls {
		if c.Allowed {
			s.Observed++
		}
	}
	if len(calls) == 0 {
		return s
	}
	tw := newTwin(x, startMs)
	var admittedSoFar int64
	last := calls[0].SendNs
	for i, c := range calls {
		lo := max(c.SendNs, last)
		hi := max(c.DoneNs+AnswerSlack, lo)
		var allowed bool
		if late {
			last, allowed = tw.latest(lo, hi, c.Allowed)
		} else {
			last, allowed = tw.earliest(lo, hi, c.Allowed)
		}
		if allowed != c.Allowed {
			s.Pass = false
			s.First = &Disagreement{N: i + 1, Allowed: c.Allowed, Before: admittedSoFar,
				SinceMs: float64((c.DoneNs-calls[0].SendNs)/1e3) / 1e3}
			return s
		}
		if c.Allowed {
			admittedSoFar++
		}
	}
	return s
}

// latest gives the model one call at hi if it decides there as want says,
// else at lo; it returns the moment chosen and the decision there.
func (t *twin) latest(lo, hi int64, want bool) (int64, bool) {
	d, _ := t.a.decision(0, hi)
	if d.Allowed == want || hi/1e6 == lo/1e6 {
		t.b.decision(0, hi)
		t.moments = append(t.moments, hi)
		return hi, d.Allowed
	}
	d2, _ := t.b.decision(0, lo)
	t.moments = append(t.moments, lo)
	t.a = t.rebuild()
	return lo, d2.Allowed
}

// ParseModel reads --expect for a script's calls (race, eval): a model as
// ParseExpect reads it, several joined by "+"; auto and none, which read
// or ignore an HTTP target's RateLimit-Policy, are bad input here, as a
// script advertises no policy. Errors are exit 2.
func ParseModel(s string) (*Expectation, error) {
	x, err := ParseExpect(s)
	if err != nil {
		return nil, err
	}
	if x.Auto || x.None {
		return nil, exitcode.Usagef("--expect %s reads the RateLimit-Policy of an HTTP target (load, probe); a script advertises none: give the model it implements, e.g. %s", x.Spec, limiter.Lookup(limiter.TokenBucket).Example())
	}
	return x, nil
}
