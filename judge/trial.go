package judge

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// This file judges calls of a limiter script on one key against a model
// (race --expect, eval --expect) with the one replay: each call was
// decided by the script at some moment between its send and its answer,
// so the model is replayed with every call at its send and again with
// every call at its answer, the two bounds load's verdict takes too. The
// answer bound is AnswerSlack later, as the script's clock (TIME) and the
// replay both count whole milliseconds.

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

// Bounds is the verdict on a trial of calls sent at once: the script's
// admissions must lie between the model's with every call decided at its
// send and with every call decided at its answer, whatever order the
// calls reached the script in.
type Bounds struct {
	Model       string `json:"model"`       // the --expect value
	Description string `json:"description"` // the model in words
	Observed    int64  `json:"observed"`    // calls the script allowed
	Of          int64  `json:"of"`          // calls made
	AtSend      int64  `json:"at_send"`     // the model's admissions, every call decided at its send
	AtAnswer    int64  `json:"at_answer"`   // ... at its answer (AnswerSlack later)
	// Unknown counts the calls that failed: each may have been admitted
	// unseen, so the low bound is lower by as many.
	Unknown int64   `json:"unknown"`
	SpanMs  float64 `json:"span_ms"` // from the first send to the last answer
	Pass    bool    `json:"pass"`
}

// Low and High are the admissions the model allows for the trial.
func (b Bounds) Low() int64  { return max(0, min(b.AtSend, b.AtAnswer)-b.Unknown) }
func (b Bounds) High() int64 { return max(b.AtSend, b.AtAnswer) }

// Range shows the admissions the model allows: "10" or "10 to 13".
func (b Bounds) Range() string {
	if b.Low() == b.High() {
		return strconv.FormatInt(b.Low(), 10)
	}
	return fmt.Sprintf("%d to %d", b.Low(), b.High())
}

// Trial judges calls made at once against one key: the model is replayed
// with the calls in order of their sends, each at its send, and in order
// of their answers, each at its answer; the observed admissions must lie
// between the two counts. startMs is the wall clock of the time base, ms.
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
	b.AtSend, b.AtAnswer = admitted(x, startMs, sends), admitted(x, startMs, dones)
	b.SpanMs = float64((last-first)/1e3) / 1e3
	b.Pass = b.Observed >= b.Low() && b.Observed <= b.High()
	return b
}

// admitted replays one identity's calls at times (sorted) and counts the
// model's admissions.
func admitted(x Expectation, startMs int64, times []int64) int64 {
	r := newReplay(x, startMs)
	var n int64
	for _, t := range times {
		if ok, _ := r.decide(0, t); ok {
			n++
		}
	}
	return n
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
			strconv.FormatFloat(d.SinceMs, 'f', -1, 64), s.Description)
	}
	return fmt.Sprintf("every call decided as %s decides it at its time (%d of %d allowed)", s.Description, s.Observed, s.Calls)
}

// Sequential judges calls made one after another against one key, in
// order. Each call is given to the model at the earliest moment of its
// span (its send, or the previous call's moment if later) at which the
// model decides as the script did, else at its answer (AnswerSlack
// later); when neither agrees, that call is the first disagreement and
// the judging stops. startMs is the wall clock of the time base, ms.
func Sequential(x Expectation, startMs int64, calls []Call) Sequence {
	s := Sequence{Model: x.Spec, Description: x.Describe(), Calls: int64(len(calls)), Pass: true}
	for _, c := range calls {
		if c.Allowed {
			s.Observed++
		}
	}
	if len(calls) == 0 {
		return s
	}
	// cur and spare are fed the same moments, so a moment tried on cur
	// and rejected can be tried later on spare; cur is then rebuilt.
	cur, spare := newReplay(x, startMs), newReplay(x, startMs)
	var moments []int64
	var admittedSoFar int64
	last := calls[0].SendNs
	for i, c := range calls {
		early := max(c.SendNs, last)
		late := max(c.DoneNs+AnswerSlack, early)
		if early/1e6 == late/1e6 {
			late = early // the same millisecond: the same decision
		}
		if d, _ := cur.decision(0, early); d.Allowed == c.Allowed {
			spare.decision(0, early)
			moments, last = append(moments, early), early
		} else if d, _ := spare.decision(0, late); late != early && d.Allowed == c.Allowed {
			moments, last = append(moments, late), late
			cur = newReplay(x, startMs)
			for _, m := range moments {
				cur.decision(0, m)
			}
		} else {
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
