package load

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// StreamJudge is Judge for arrivals that come one at a time, as a
// recording is read: it keeps one model per identity and reading (two
// under each: one fed by send time, one by response end, for the
// tolerance's shift), never the arrivals themselves. Fed the arrivals of
// a JudgeInput (Send in send order, Done in done order) it returns what
// Judge returns for that input (TestStreamJudgeEqualsJudge).
//
// The order that matters is per identity, as Judge sorts each identity's
// times: an arrival with a status fed to Send (Done) earlier than the
// last one of its identity fed there is an error, because the model has
// moved past it. Arrivals without a status (transport errors) take no
// part in the replay and may come in any order.
//
// Identity must be below the Identities given to Finish, as every run's
// and every recording's are; the streaming judge cannot take it modulo a
// count it learns at the end.
type StreamJudge struct {
	x       Expectation
	startMs int64

	// readings are the models judged: the --expect model, or under auto
	// the three readings of the policy once SetPolicy knows it.
	readings []limiter.Params
	valid    []bool // the reading makes a model (auto readings may not)
	policy   string // auto: the value the readings come from
	q, w     int64

	// Under auto, the arrivals fed before the policy is known wait here
	// (a recording usually shows the policy on its first response).
	pendingSend, pendingDone []Arrival

	ids []*judgeIdentity

	of, unknown, observed int64
	minSend, maxSend      int64
	lastSec               int64   // greatest second of a known send (-1: none)
	bySend, byDone        []int64 // admitted, per reading
	perSec                [][]int64
}

type judgeIdentity struct {
	send, done         []model.Limiter // one per reading
	lastSend, lastDone int64
	seenSend, seenDone bool
}

// MaxPendingAuto bounds the arrivals --expect auto holds while no
// RateLimit-Policy has been seen.
const MaxPendingAuto = 1_000_000

// NewStreamJudge starts a judge of x whose replay starts at startMs (the
// wall clock of the run's start, as JudgeInput.StartMs).
func NewStreamJudge(x Expectation, startMs int64) *StreamJudge {
	j := &StreamJudge{x: x, startMs: startMs, lastSec: -1, minSend: math.MaxInt64, maxSend: math.MinInt64}
	if !x.Auto {
		j.setReadings([]limiter.Params{x.Params})
	}
	return j
}

func (j *StreamJudge) setReadings(ps []limiter.Params) {
	j.readings = ps
	j.valid = make([]bool, len(ps))
	for i, p := range ps {
		_, err := limiter.NewLimiter(p)
		j.valid[i] = err == nil
	}
	j.bySend = make([]int64, len(ps))
	j.byDone = make([]int64, len(ps))
	j.perSec = make([][]int64, len(ps))
}

// SetPolicy gives --expect auto the RateLimit-Policy value to read, the
// first valid one seen; later calls are ignored, as is a value without
// q > 0 and w > 0 (Judge could not read it either). The arrivals that
// waited for it are replayed. It is a no-op for an explicit model.
func (j *StreamJudge) SetPolicy(value string) error {
	if !j.x.Auto || j.readings != nil {
		return nil
	}
	ps, err := header.ParsePolicies([]string{value})
	if value == "" || err != nil || len(ps) == 0 || ps[0].Quota <= 0 || ps[0].Window <= 0 {
		return nil
	}
	j.policy, j.q, j.w = value, ps[0].Quota, ps[0].Window
	j.setReadings(policyReadings(j.q, j.w))
	send, done := j.pendingSend, j.pendingDone
	j.pendingSend, j.pendingDone = nil, nil
	for _, a := range send {
		if err := j.replaySend(a); err != nil {
			return err
		}
	}
	for _, a := range done {
		if err := j.replayDone(a); err != nil {
			return err
		}
	}
	return nil
}

// policyReadings are the models a policy of q per w seconds may be, in
// Judge's order.
func policyReadings(q, w int64) []limiter.Params {
	window := time.Duration(w) * time.Second
	refill := rate.Rate{Count: float64(q), Per: window}
	if q%w == 0 {
		refill = rate.Rate{Count: float64(q / w), Per: time.Second}
	}
	return []limiter.Params{
		{Algo: limiter.TokenBucket, Capacity: q, Rate: refill, Cost: 1},
		{Algo: limiter.SlidingWindow, Limit: q, Window: window, Cost: 1},
		{Algo: limiter.FixedWindow, Limit: q, Window: window, Cost: 1},
	}
}

// ErrOutOfOrder is wrapped by the errors of arrivals fed out of order.
var ErrOutOfOrder = errors.New("arrival out of order")

func (j *StreamJudge) identity(k int) *judgeIdentity {
	for len(j.ids) <= k {
		j.ids = append(j.ids, nil)
	}
	if j.ids[k] == nil {
		j.ids[k] = &judgeIdentity{}
	}
	return j.ids[k]
}

// models returns the identity's models of kind done or send, made on
// first use.
func (j *StreamJudge) models(id *judgeIdentity, done bool) []model.Limiter {
	ms := &id.send
	if done {
		ms = &id.done
	}
	if *ms == nil {
		*ms = make([]model.Limiter, len(j.readings))
		for i, p := range j.readings {
			if j.valid[i] {
				(*ms)[i] = newModel(p)
			}
		}
	}
	return *ms
}

// Send feeds one arrival at its send time: every arrival of the run, in
// send order per identity.
func (j *StreamJudge) Send(a Arrival) error {
	j.of++
	j.minSend, j.maxSend = min(j.minSend, a.SendNs), max(j.maxSend, a.SendNs)
	if a.Status == 0 {
		j.unknown++
		return nil
	}
	if a.Status >= 200 && a.Status < 400 {
		j.observed++
	}
	if a.Identity < 0 {
		return fmt.Errorf("identity %d is negative", a.Identity)
	}
	id := j.identity(a.Identity)
	if id.seenSend && a.SendNs < id.lastSend {
		return fmt.Errorf("%w: sent %d ns after the start, before the last one of its identity (%d ns)", ErrOutOfOrder, a.SendNs, id.lastSend)
	}
	id.seenSend, id.lastSend = true, a.SendNs
	j.lastSec = max(j.lastSec, a.SendNs/1e9)
	if j.readings == nil {
		if len(j.pendingSend)+len(j.pendingDone) >= MaxPendingAuto {
			return fmt.Errorf("--expect auto: no RateLimit-Policy in the first %d responses; give --expect MODEL", MaxPendingAuto)
		}
		j.pendingSend = append(j.pendingSend, a)
		return nil
	}
	return j.replaySend(a)
}

func (j *StreamJudge) replaySend(a Arrival) error {
	for i, m := range j.models(j.identity(a.Identity), false) {
		if m == nil {
			continue
		}
		if m.Allow(j.startMs+a.SendNs/1e6, 1).Allowed {
			j.bySend[i]++
			if a.SendNs >= 0 {
				sec := a.SendNs / 1e9
				for int64(len(j.perSec[i])) <= sec {
					j.perSec[i] = append(j.perSec[i], 0)
				}
				j.perSec[i][sec]++
			}
		}
	}
	return nil
}

// Done feeds one arrival at the end of its response: the arrivals with a
// status, in done order per identity (others are ignored).
func (j *StreamJudge) Done(a Arrival) error {
	if a.Status == 0 {
		return nil
	}
	if a.Identity < 0 {
		return fmt.Errorf("identity %d is negative", a.Identity)
	}
	id := j.identity(a.Identity)
	if id.seenDone && a.DoneNs < id.lastDone {
		return fmt.Errorf("%w: done %d ns after the start, before the last one of its identity (%d ns)", ErrOutOfOrder, a.DoneNs, id.lastDone)
	}
	id.seenDone, id.lastDone = true, a.DoneNs
	if j.readings == nil {
		if len(j.pendingSend)+len(j.pendingDone) >= MaxPendingAuto {
			return fmt.Errorf("--expect auto: no RateLimit-Policy in the first %d responses; give --expect MODEL", MaxPendingAuto)
		}
		j.pendingDone = append(j.pendingDone, a)
		return nil
	}
	return j.replayDone(a)
}

func (j *StreamJudge) replayDone(a Arrival) error {
	for i, m := range j.models(j.identity(a.Identity), true) {
		if m != nil && m.Allow(j.startMs+a.DoneNs/1e6, 1).Allowed {
			j.byDone[i]++
		}
	}
	return nil
}

// Finish returns the verdict once every arrival was fed: Identities,
// JitterMs and Policy as in JudgeInput. Under auto the readings are those
// of the policy SetPolicy was given; when the run's most common policy
// (policy) is another one, the note says so.
func (j *StreamJudge) Finish(identities int, jitterMs float64, policy string) Judged {
	x := j.x
	out := Judged{Model: x.Spec, Observed: j.observed, Of: j.of}
	out.Tol.Unknown = j.unknown
	if j.of > 0 {
		out.OverMs = float64((j.maxSend-j.minSend)/1e3) / 1e3
	}
	in := JudgeInput{Identities: identities, JitterMs: jitterMs}
	result := func(i int) (int64, int64, TolParts, []int64) {
		p := j.readings[i]
		parts := TolParts{Rounding: 1}
		parts.Jitter = int64(math.Ceil(admissionRate(p) * float64(in.Identities) * in.JitterMs / 1000))
		parts.Shift = abs(j.byDone[i] - j.bySend[i])
		parts.Unknown = j.unknown
		tol := max(parts.Jitter, parts.Shift) + parts.Rounding + parts.Unknown
		perSec := make([]int64, j.lastSec+1)
		copy(perSec, j.perSec[i])
		return j.bySend[i], tol, parts, perSec
	}
	if !x.Auto {
		e, tol, parts, perSec := result(0)
		out.Description = Describe(x.Params)
		out.ExpectedPerSecond = perSec
		if in.Identities > 1 {
			out.Description += fmt.Sprintf(" x %d identities", in.Identities)
		}
		out.Expected, out.Tolerance, out.Tol = e, tol, parts
		out.params = &x.Params
		out.Pass = abs(out.Observed-e) <= tol
		return out
	}
	if j.readings == nil {
		out.Note = "no RateLimit-Policy with q > 0 and w > 0 to read; pass --expect MODEL:params"
		return out
	}
	best := -1
	var bestDiff int64
	for i, p := range j.readings {
		if !j.valid[i] {
			continue
		}
		e, tol, parts, perSec := result(i)
		r := Reading{Model: specOf(p), Description: Describe(p), Expected: e, Tolerance: tol}
		d := abs(out.Observed - e)
		r.Fits = d <= tol
		out.Readings = append(out.Readings, r)
		if best < 0 || d < bestDiff {
			best, bestDiff = i, d
			out.params = &j.readings[i]
			out.Expected, out.Tolerance, out.Tol, out.ExpectedPerSecond = e, tol, parts, perSec
			out.Description = fmt.Sprintf("RateLimit-Policy q=%d;w=%d read as %s", j.q, j.w, r.Description)
		}
	}
	var fits []string
	for _, r := range out.Readings {
		if r.Fits {
			fits = append(fits, r.Model)
		}
	}
	if best >= 0 && len(fits) > 0 {
		out.Pass = true
		out.Fits = specOf(j.readings[best])
		if len(fits) > 1 {
			out.Note = "more than one reading fits: " + strings.Join(fits, ", ")
		}
	} else {
		out.Note = "no reading of the policy fits the observation"
	}
	if policy != "" && policy != j.policy {
		other := fmt.Sprintf("read the first RateLimit-Policy seen, %s; the most common was %s", j.policy, policy)
		if out.Note != "" {
			other = out.Note + "; " + other
		}
		out.Note = other
	}
	return out
}
