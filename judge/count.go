package judge

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/header"
)

// Judged is the verdict on a run's admitted count.
type Judged struct {
	Model       string    `json:"model"`       // the --expect value
	Description string    `json:"description"` // the model in words
	Expected    int64     `json:"expected"`
	Observed    int64     `json:"observed"` // responses that admitted their request (Allowed)
	Of          int64     `json:"of"`       // requests judged (sent and completed)
	Tolerance   int64     `json:"tolerance"`
	Tol         Tolerance `json:"tolerance_parts"`
	OverMs      float64   `json:"over_ms"` // first to last send
	// ExpectedPerSecond is Expected spread over the seconds of the run
	// (by the second of the send, as the timeline): the admissions the
	// verdict's own replay expects in each.
	ExpectedPerSecond []int64   `json:"expected_per_second,omitempty"`
	Pass              bool      `json:"pass"`
	Readings          []Reading `json:"readings,omitempty"` // auto: each reading of the policy
	Fits              string    `json:"fits,omitempty"`     // auto: the reading that fits best
	Note              string    `json:"note,omitempty"`
	// NotJudged: no --expect was given and the target advertised no
	// policy, so the count was not judged (Note says so).
	NotJudged bool `json:"not_judged,omitempty"`
	// Implicit: no --expect was given; the count was judged against the
	// policy the target advertised.
	Implicit bool `json:"implicit,omitempty"`
	// Delays judges a model that delays rather than refuses (nginx's
	// limit_req delay=N): the requests it delays must take about as long.
	Delays *Delays `json:"delays,omitempty"`

	judged *Expectation // the model judged against (the best reading under auto)
}

// Delays is the verdict on the delays of a model that delays requests
// (leaky-bucket with delay=N): of the admitted requests the model holds
// back, how many took at least DelayShare of their delay to answer, and
// of those it serves at once, how many were held that long anyway.
type Delays struct {
	Delayed   int64   `json:"delayed"`   // admitted requests the model delays
	Met       int64   `json:"met"`       // of those, answered after at least DelayShare of the delay
	MaxMs     float64 `json:"max_ms"`    // the longest delay the model holds a request for
	Undelayed int64   `json:"undelayed"` // admitted requests the model serves at once
	Held      int64   `json:"held"`      // of those, held at least as long as the shortest model delay
	Tolerance int64   `json:"tolerance"` // how many may miss (the count's tolerance)
	Pass      bool    `json:"pass"`
	Line      string  `json:"line"`
}

// DelayShare is the part of a model's delay a delayed answer must take:
// the target holds a request at least that long before serving it.
const DelayShare = 0.75

// Reading is one interpretation of RateLimit-Policy under --expect auto.
type Reading struct {
	Model       string `json:"model"`
	Description string `json:"description"`
	Expected    int64  `json:"expected"`
	Tolerance   int64  `json:"tolerance"`
	Fits        bool   `json:"fits"`
}

// Against is the model the count was judged against: the expectation,
// or under auto the reading that fits best; nil when there was none.
func (j Judged) Against() *Expectation { return j.judged }

// Line is the report line: "allowed 159 of 600; expected 159 (token bucket
// 10 + 5/s over 29.95 s) ±2: pass".
func (j Judged) Line() string {
	verdict := "fail"
	if j.Pass {
		verdict = "pass"
	}
	if j.Description == "" {
		return fmt.Sprintf("allowed %d of %d; %s: %s", j.Observed, j.Of, j.Note, verdict)
	}
	line := fmt.Sprintf("allowed %d of %d; expected %d (%s over %s s) ±%d: %s",
		j.Observed, j.Of, j.Expected, j.Description, strconv.FormatFloat(j.OverMs/1000, 'f', 2, 64), j.Tolerance, verdict)
	if j.Delays != nil {
		line += "; " + j.Delays.Line
	}
	if j.Note == AdmitsAllNote {
		line += "; " + j.Note
	}
	return line
}

// ErrOutOfOrder is wrapped by the errors of arrivals fed out of order.
var ErrOutOfOrder = errors.New("arrival out of order")

// MaxPendingAuto bounds the arrivals --expect auto holds while no
// RateLimit-Policy has been seen.
const MaxPendingAuto = 1_000_000

// Stream judges arrivals as they come, the primitive every verdict on a
// count is built on: the load executor's run (through Judge), a
// recording read line by line, a merge of segments. It keeps one model
// per identity and reading, two of each (one fed at the send, one at the
// response's end, for the tolerance's Shift), never the arrivals
// themselves.
//
// Each identity's arrivals come in time order to Send (by send) and to
// Done (by end); one earlier than the last of its identity is an error
// (ErrOutOfOrder). Every arrival is replayed, with or without a status
// (see Arrival). Identity must be below the identities given to Finish.
type Stream struct {
	x       Expectation
	startMs int64

	// readings are the models judged: the expectation, or under auto its
	// readings of the policy once SetPolicy knows it.
	readings []Expectation
	policy   string // auto: the value the readings come from

	// Under auto, the arrivals fed before the policy is known wait here
	// (a run usually shows the policy on its first response).
	pendingSend, pendingDone []Arrival

	bySendReplay, byDoneReplay []*replay // per reading

	delays delayCount // the delays of reading 0 (an explicit model)

	of, unknown, observed int64
	minSend, maxSend      int64
	lastSec               int64   // greatest second of a replayed send (-1: none)
	bySend, byDone        []int64 // admitted, per reading
	perSec                [][]int64
}

// NewStream starts a judge of x whose replay's time base is startMs, the
// wall clock of the run's start in ms.
func NewStream(x Expectation, startMs int64) *Stream {
	s := &Stream{x: x, startMs: startMs, lastSec: -1, minSend: 1<<63 - 1, maxSend: -1 << 63}
	if !x.Auto && !x.None {
		s.setReadings([]Expectation{x})
	}
	return s
}

func (s *Stream) setReadings(xs []Expectation) {
	s.readings = xs
	s.bySend = make([]int64, len(xs))
	s.byDone = make([]int64, len(xs))
	s.perSec = make([][]int64, len(xs))
	s.bySendReplay = make([]*replay, len(xs))
	s.byDoneReplay = make([]*replay, len(xs))
	for i, x := range xs {
		s.bySendReplay[i] = newReplay(x, s.startMs)
		s.byDoneReplay[i] = newReplay(x, s.startMs)
	}
}

// SetPolicy gives --expect auto the RateLimit-Policy value to read: the
// first one that has a reading; later calls are ignored. The arrivals
// that waited for it are replayed. It does nothing for an explicit model.
func (s *Stream) SetPolicy(value string) error {
	if !s.x.Auto || s.readings != nil {
		return nil
	}
	rs, ok := Readings(value)
	if !ok {
		return nil
	}
	s.policy = value
	s.setReadings(rs)
	send, done := s.pendingSend, s.pendingDone
	s.pendingSend, s.pendingDone = nil, nil
	for _, a := range send {
		if err := s.replaySend(a); err != nil {
			return err
		}
	}
	for _, a := range done {
		if err := s.replayDone(a); err != nil {
			return err
		}
	}
	return nil
}

// Send feeds one arrival at its send time: every arrival of the run, in
// send order per identity.
func (s *Stream) Send(a Arrival) error {
	s.of++
	s.minSend, s.maxSend = min(s.minSend, a.SendNs), max(s.maxSend, a.SendNs)
	if a.Status == 0 {
		s.unknown++
	}
	if Allowed(a.Status) {
		s.observed++
	}
	if a.Identity < 0 {
		return fmt.Errorf("identity %d is negative", a.Identity)
	}
	s.lastSec = max(s.lastSec, a.SendNs/1e9)
	if s.readings == nil {
		return s.hold(&s.pendingSend, a)
	}
	return s.replaySend(a)
}

// hold keeps an arrival until --expect auto knows the policy.
func (s *Stream) hold(q *[]Arrival, a Arrival) error {
	if s.x.None {
		return nil
	}
	if len(s.pendingSend)+len(s.pendingDone) >= MaxPendingAuto {
		return fmt.Errorf("--expect auto: no RateLimit-Policy in the first %d responses; give --expect MODEL", MaxPendingAuto)
	}
	*q = append(*q, a)
	return nil
}

func (s *Stream) replaySend(a Arrival) error {
	for i, r := range s.bySendReplay {
		d, ok := r.decision(a.Identity, a.SendNs)
		if !ok {
			return fmt.Errorf("%w: sent %d ns after the start, before the last one of its identity (%d ns)", ErrOutOfOrder, a.SendNs, r.last[a.Identity])
		}
		admitted := d.Allowed
		if i == 0 && admitted && Allowed(a.Status) {
			s.delays.add(d.RetryMs, float64(a.DoneNs-a.SendNs)/1e6)
		}
		if admitted {
			s.bySend[i]++
			if a.SendNs >= 0 {
				sec := a.SendNs / 1e9
				for int64(len(s.perSec[i])) <= sec {
					s.perSec[i] = append(s.perSec[i], 0)
				}
				s.perSec[i][sec]++
			}
		}
	}
	return nil
}

// Done feeds one arrival at the end of its response (or error): every
// arrival of the run, in end order per identity.
func (s *Stream) Done(a Arrival) error {
	if a.Identity < 0 {
		return fmt.Errorf("identity %d is negative", a.Identity)
	}
	if s.readings == nil {
		return s.hold(&s.pendingDone, a)
	}
	return s.replayDone(a)
}

func (s *Stream) replayDone(a Arrival) error {
	for i, r := range s.byDoneReplay {
		admitted, ok := r.decide(a.Identity, a.DoneNs)
		if !ok {
			return fmt.Errorf("%w: done %d ns after the start, before the last one of its identity (%d ns)", ErrOutOfOrder, a.DoneNs, r.last[a.Identity])
		}
		if admitted {
			s.byDone[i]++
		}
	}
	return nil
}

// Finish returns the verdict once every arrival was fed. identities is
// the run's (at least 1), jitterMs its p99 latency from the send, and
// policy the run's most common RateLimit-Policy: under auto, a note says
// when it is not the one read.
func (s *Stream) Finish(identities int, jitterMs float64, policy string) Judged {
	out := Judged{Model: s.x.Spec, Observed: s.observed, Of: s.of}
	out.Tol.Unknown = s.unknown
	if s.of > 0 {
		out.OverMs = float64((s.maxSend-s.minSend)/1e3) / 1e3
	}
	result := func(i int) (int64, Tolerance, []int64) {
		tol := tolerance(s.readings[i].PerSecond(), identities, jitterMs, s.bySend[i], s.byDone[i], s.unknown, s.of)
		perSec := make([]int64, s.lastSec+1)
		copy(perSec, s.perSec[i])
		return s.bySend[i], tol, perSec
	}
	if !s.x.Auto {
		if s.x.None {
			out.Note = "not judged (--expect none)"
			return out
		}
		e, tol, perSec := result(0)
		out.Description = s.x.Describe()
		if identities > 1 {
			out.Description += fmt.Sprintf(" x %d identities", identities)
		}
		out.Expected, out.Tol, out.Tolerance, out.ExpectedPerSecond = e, tol, tol.Total(), perSec
		out.judged = &s.readings[0]
		out.Pass = abs(out.Observed-e) <= out.Tolerance
		if admitsAll(e, s.of) && !s.delays.any() {
			// a model that delays is judged on its delays too
			out.Note = AdmitsAllNote
		}
		if s.delays.any() {
			out.Delays = s.delays.verdict(out.Tolerance)
			out.Pass = out.Pass && out.Delays.Pass
		}
		return out
	}
	out.Implicit = s.x.Implicit
	if s.readings == nil {
		out.Note = "no RateLimit-Policy with q > 0 and w > 0 to read; " + FindModelHint
		if s.x.Implicit {
			out.NotJudged, out.Pass = true, true
			out.Note = "the admitted count was not judged: no --expect model was given and the target advertises no RateLimit-Policy; " + FindModelHint
		}
		return out
	}
	best := -1
	var bestDiff int64
	var fits []string
	for i, x := range s.readings {
		e, tol, perSec := result(i)
		r := Reading{Model: x.Spec, Description: x.Describe(), Expected: e, Tolerance: tol.Total()}
		d := abs(out.Observed - e)
		r.Fits = d <= r.Tolerance
		if r.Fits {
			fits = append(fits, r.Model)
		}
		out.Readings = append(out.Readings, r)
		if best < 0 || d < bestDiff {
			best, bestDiff = i, d
			out.judged = &s.readings[i]
			out.Expected, out.Tol, out.Tolerance, out.ExpectedPerSecond = e, tol, tol.Total(), perSec
			out.Description = fmt.Sprintf("RateLimit-Policy %s read as %s", policyWords(s.policy), r.Description)
			if s.x.Implicit {
				out.Description = fmt.Sprintf("the advertised RateLimit-Policy %s read as %s (no --expect given; --expect none opts out)", policyWords(s.policy), r.Description)
			}
		}
	}
	if len(fits) > 0 {
		out.Pass = true
		out.Fits = s.readings[best].Spec
		if len(fits) > 1 {
			out.Note = "more than one reading fits: " + strings.Join(fits, ", ")
		}
	} else {
		out.Note = "no reading of the policy fits the observation"
	}
	if policy != "" && policy != s.policy {
		other := fmt.Sprintf("read the first RateLimit-Policy seen, %s; the most common was %s", s.policy, policy)
		if out.Note != "" {
			other = out.Note + "; " + other
		}
		out.Note = other
	}
	return out
}

// FindModelHint says what to do when no model was given or advertised.
const FindModelHint = "pass --expect MODEL:params, or find the model with 'ratelimit probe --fingerprint URL' (about 15 s)"

// NoPolicyToRead reports whether j is --expect auto that found no
// advertised policy to read: nothing was judged, for want of input.
func (j Judged) NoPolicyToRead() bool {
	return j.Model == "auto" && !j.Implicit && !j.NotJudged && len(j.Readings) == 0 && j.Description == ""
}

// policyWords shows a policy's items as "q=10;w=2" (and ", q=1000;w=3600").
func policyWords(policy string) string {
	ps, err := header.ParsePolicies([]string{policy})
	if err != nil {
		return policy
	}
	var items []string
	for _, p := range ps {
		if p.Quota > 0 && p.Window > 0 {
			items = append(items, fmt.Sprintf("q=%d;w=%d", p.Quota, p.Window))
		}
	}
	return strings.Join(items, ", ")
}

// Input is what Judge needs from a finished run.
type Input struct {
	Arrivals   []Arrival // any order
	Identities int       // >= 1; an arrival's identity is taken modulo it
	StartMs    int64     // wall clock of the start, ms (the replay's time base)
	JitterMs   float64   // p99 latency from send, ms
	Policy     string    // the run's most common RateLimit-Policy (for auto)
}

// Judge is the verdict on a whole run's arrivals: a Stream fed every
// arrival by send time, then by response end. It is a pure function of
// its input.
func Judge(x Expectation, in Input) Judged {
	ids := max(in.Identities, 1)
	s := NewStream(x, in.StartMs)
	_ = s.SetPolicy(in.Policy)
	arr := make([]Arrival, len(in.Arrivals))
	for i, a := range in.Arrivals {
		a.Identity %= ids
		arr[i] = a
	}
	slices.SortStableFunc(arr, func(a, b Arrival) int { return cmp64(a.SendNs, b.SendNs) })
	for _, a := range arr {
		_ = s.Send(a) // in order by construction
	}
	slices.SortStableFunc(arr, func(a, b Arrival) int { return cmp64(a.DoneNs, b.DoneNs) })
	for _, a := range arr {
		_ = s.Done(a)
	}
	return s.Finish(ids, in.JitterMs, in.Policy)
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// delayCount gathers the delays of one explicit model.
type delayCount struct {
	delayed, met, undelayed, held int64
	maxMs, minMs                  float64
	heldLat                       []float64 // latencies of the undelayed, ms (bounded)
}

func (c *delayCount) any() bool { return c.delayed > 0 }

// add takes one admitted request: the model's delay and its latency.
func (c *delayCount) add(delayMs int64, latMs float64) {
	if delayMs <= 0 {
		c.undelayed++
		if len(c.heldLat) < 1_000_000 {
			c.heldLat = append(c.heldLat, latMs)
		}
		return
	}
	d := float64(delayMs)
	c.delayed++
	c.maxMs = max(c.maxMs, d)
	if c.minMs == 0 || d < c.minMs {
		c.minMs = d
	}
	if latMs >= DelayShare*d {
		c.met++
	}
}

func (c *delayCount) verdict(tol int64) *Delays {
	for _, l := range c.heldLat {
		if l >= DelayShare*c.minMs {
			c.held++
		}
	}
	v := &Delays{Delayed: c.delayed, Met: c.met, MaxMs: c.maxMs, Undelayed: c.undelayed, Held: c.held, Tolerance: tol}
	v.Pass = c.delayed-c.met <= tol && c.held <= tol
	v.Line = fmt.Sprintf("delays: %d of %d requests the model delays (up to %.0f ms) took at least %.0f%% of their delay; %d of %d it serves at once were held as long",
		c.met, c.delayed, c.maxMs, 100*DelayShare, c.held, c.undelayed)
	if !v.Pass {
		v.Line += fmt.Sprintf(" (±%d): fail", tol)
	}
	return v
}
