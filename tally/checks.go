package tally

import (
	"fmt"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
)

// CheckList returns the run's checks: the thresholds, the generator, the
// four header rules, the expectation, whether a limiter was seen and
// whether the run completed. The generator and header checks are
// warnings (reported, never failing the run), as is limiter-seen without
// --expect; the others decide the verdict exactly as the engine did.
func (r *Result) CheckList() []doc.Check {
	if r.Checks != nil {
		return r.Checks
	}
	out := []doc.Check{}
	for _, t := range r.Thresholds {
		msg := t.Message
		if msg == "" { // a document written before thresholds kept their message
			msg = fmt.Sprintf("threshold %s: %s > %s", t.Name, t.Actual, t.Limit)
		}
		out = append(out, doc.Check{ID: CheckThresholdPfx + t.Expr(), Pass: t.Pass, Message: msg})
	}
	gen := doc.Check{ID: CheckGenerator, Pass: !r.Generator.FellBehind, Warning: true,
		Message: fmt.Sprintf("%d sent of %d planned, nothing dropped, lateness p99 %.2f ms", r.Sent, r.Planned, r.Lateness.P99)}
	if r.Recorded() {
		gen.Message = fmt.Sprintf("%d sent of %d planned, %d dropped, as %s recorded them; the lateness is unknown (the recording has no due times)", r.Sent, r.Planned, r.Dropped, r.Source)
		if r.Source == SourceVegeta {
			gen.Message = fmt.Sprintf("%d sent; vegeta records neither dropped iterations nor due times, so whether it kept up is unknown", r.Sent)
		}
	}
	if r.Generator.FellBehind {
		gen.Message = "the load generator fell behind; the counts do not measure the target"
		if len(r.Generator.Reasons) > 0 {
			gen.Message = r.Generator.Reasons[0]
		}
	}
	out = append(out, gen)
	out = append(out, r.headerChecks()...)
	if j := r.Expect; j != nil {
		c := doc.Check{ID: CheckExpect, Pass: j.Pass, Message: j.Line()}
		if r.Faults != nil {
			// the faults disturb the whole run's count on purpose; the
			// fault checks judge it window by window
			c.Warning = true
			if !c.Pass {
				c.Message += " (expected under faults: " + judge.CheckFaultBaseline + " and the " + judge.CheckFaultPfx + "* checks judge the windows)"
			}
		}
		out = append(out, c)
	}
	out = append(out, r.Faults.Checks()...)
	out = append(out, r.segmentChecks()...)
	// with a model to judge, a target without a limiter fails the run
	expectGiven := r.Expect != nil || r.Segment != nil && r.Segment.Expect != ""
	seen := doc.Check{ID: CheckLimiterSeen, Pass: !NoLimiterSeen(r), Warning: !expectGiven,
		Message: "a 429 or a RateLimit header was seen"}
	switch {
	case !seen.Pass:
		seen.Message = noLimiterMessage(r)
	case r.Responses == 0:
		seen.Message = "no response to look at"
	}
	out = append(out, seen)
	done := doc.Check{ID: CheckCompleted, Pass: !r.Interrupted, Message: "the run was not interrupted"}
	if r.Interrupted {
		done.Message = fmt.Sprintf("interrupted after %ss: no verdict", fmtSeconds(r.ElapsedS))
	}
	return append(out, done)
}

func fmtSeconds(s float64) string {
	switch {
	case s >= 100:
		return fmt.Sprintf("%.0f", s)
	case s >= 10:
		return fmt.Sprintf("%.1f", s)
	}
	return fmt.Sprintf("%.2f", s)
}

// headerChecks are the rules on the rate limit headers over all
// responses: values present must be valid (a target that sends no such
// field is skipped, not failed; r above q is invalid), every 429 needs a
// valid Retry-After, no 429 may be storable by a cache (explicit
// freshness), a response that is limited by its own headers must be a
// 429, and t never exceeds the policy's window. With --headers fail (the
// default) a failed one fails the run; warn reports it as a warning; off
// skips them all, as does a recording without response headers
// (Headers.NotRecorded). Documents from before --headers are warnings.
func (r *Result) headerChecks() []doc.Check {
	h := r.Headers
	warn := h.Mode != HeadersFail
	out := r.headerRules()
	for i := range out {
		c := &out[i]
		switch {
		case h.NotRecorded != "":
			c.Pass, c.Skipped, c.Warning = true, true, false
			c.Message = "not checked: " + h.NotRecorded
		case h.Mode == HeadersOff:
			c.Pass, c.Skipped, c.Warning = true, true, false
			c.Message = "not checked (--headers off)"
		case warn:
			c.Warning = true
		default:
			c.Warning = false
		}
	}
	return out
}

func (r *Result) headerRules() []doc.Check {
	h := r.Headers
	field := func(id, name string, f FieldStat) doc.Check {
		c := doc.Check{ID: id, Warning: true, Pass: true}
		switch {
		case h.Responses == 0:
			c.Skipped, c.Message = true, "no response to check"
		case f.Present == 0:
			c.Skipped, c.Message = true, "the target sends no "+name+" header"
		case f.Valid < f.Present:
			c.Pass = false
			c.Message = fmt.Sprintf("%d of %d values invalid", f.Present-f.Valid, f.Present)
			if f.Example != "" {
				c.Message += ": " + f.Example
			}
		default:
			c.Message = fmt.Sprintf("every %s value is valid", name)
		}
		return c
	}
	ra := doc.Check{ID: CheckRetryAfter, Warning: true, Pass: true, Message: "every 429 has a valid Retry-After"}
	switch {
	case r.RateLimited == 0:
		ra.Skipped, ra.Message = true, "no 429 responses"
	case h.RetryAfter.Valid < r.RateLimited:
		ra.Pass = false
		ra.Message = fmt.Sprintf("%d of %d 429 responses lack a valid Retry-After", r.RateLimited-h.RetryAfter.Valid, r.RateLimited)
		if h.RetryAfter.Example != "" {
			ra.Message += ": " + h.RetryAfter.Example
		}
	}
	st := doc.Check{ID: CheckNotStorable, Warning: true, Pass: true, Message: "no 429 may be stored by a cache"}
	switch {
	case r.RateLimited == 0:
		st.Skipped, st.Message = true, "no 429 responses"
	case h.Storable429 > 0:
		st.Pass = false
		st.Message = fmt.Sprintf("%d of %d 429 responses may be stored by a cache", h.Storable429, r.RateLimited)
		if h.StorableWhy != "" {
			st.Message += ": " + h.StorableWhy
		}
	}
	ws := doc.Check{ID: CheckWrongStatus, Pass: true, Message: "every response limited by its own headers (r=0) is a 429"}
	if h.WrongStatus > 0 {
		ws.Pass = false
		ws.Message = fmt.Sprintf("%d responses were limited with %s, not 429 (their RateLimit says r=0): clients and proxies take a 5xx for an outage and retry at once", h.WrongStatus, h.WrongStatusExample)
	}
	rs := doc.Check{ID: CheckReset, Pass: true, Message: "every RateLimit t is within the policy's window"}
	switch {
	case h.RateLimit.Present == 0:
		rs.Skipped, rs.Message = true, "the target sends no RateLimit header"
	case h.ResetBeyondWindow > 0:
		rs.Pass = false
		rs.Message = fmt.Sprintf("%d RateLimit values announce a reset beyond the policy's window (%s): the quota is back long before clients are told", h.ResetBeyondWindow, h.ResetExample)
	}
	return []doc.Check{
		field(CheckRateLimit, "RateLimit", h.RateLimit),
		field(CheckPolicy, "RateLimit-Policy", h.Policy),
		ra, st, ws, rs,
	}
}

// NoLimiterNote is the note (or, with --expect, the failure) of a run that
// saw no sign of a rate limiter.
const NoLimiterNote = "no refusal and no RateLimit headers seen: there may be no limiter in front of this URL"

// NoLimiterNoteUnrecorded is NoLimiterNote for a recording without headers.
const NoLimiterNoteUnrecorded = "no refusal seen (and the recording has no headers to show a RateLimit field): there may be no limiter in front of this URL"

// NoLimiterSeen reports whether a run got responses but refused none and
// saw no RateLimit, RateLimit-Policy or legacy X-RateLimit-* field.
func NoLimiterSeen(res *Result) bool {
	h := res.Headers
	return res.Responses > 0 && res.RateLimited == 0 && h.RateLimit.Present == 0 && h.Policy.Present == 0 && h.Legacy == 0
}

// noLimiterMessage is NoLimiterNote, for a recording that could not show
// the headers said so.
func noLimiterMessage(res *Result) string {
	if res.Headers.NotRecorded != "" {
		return NoLimiterNoteUnrecorded
	}
	return NoLimiterNote
}
