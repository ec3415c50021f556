package tally

import (
	"fmt"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/words"
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
		if r.TargetSlow() {
			gen.Message += "; the target is slow: every VU was busy waiting on it"
		}
	}
	out = append(out, gen)
	out = append(out, r.headerChecks()...)
	out = append(out, r.draftCheck(), r.failOpenCheck())
	if j := r.Expect; j != nil {
		c := doc.Check{ID: CheckExpect, Pass: j.Pass, Message: j.Line()}
		if j.NotJudged {
			c.Pass, c.Skipped = true, true
		}
		if !c.Pass && r.Headers.AllowedBare > 0 && r.Headers.AllowedWith > 0 {
			c.Message += "; " + failOpenLine(r.Headers)
		}
		if !c.Pass {
			for _, n := range r.Notes {
				if strings.HasPrefix(n, judge.InstancesPrefix) {
					c.Message += "; " + n
				}
			}
		}
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
	// with a model given to judge, a target without a limiter fails the
	// run (a count judged only because a policy was advertised has seen one)
	expectGiven := r.Expect != nil && !r.Expect.Implicit && !r.Expect.NotJudged || r.Segment != nil && r.Segment.Expect != ""
	seen := doc.Check{ID: CheckLimiterSeen, Pass: !NoLimiterSeen(r), Warning: !expectGiven,
		Message: "a refusal or a RateLimit header was seen"}
	switch {
	case !seen.Pass:
		seen.Message = noLimiterMessage(r)
	case delaysSeen(r):
		seen.Message = fmt.Sprintf("no refusal, but %d of the %d requests the model delays were held as long: a limiter that delays", r.Expect.Delays.Met, r.Expect.Delays.Delayed)
	case r.Responses == 0:
		seen.Message = "no response to look at"
	}
	out = append(out, seen)
	// decided while settling (no verdict yet), or read back from a run
	// that was undecided: a document written before this check existed
	// keeps the verdict it has
	if why := r.undecided(); why != "" && !r.Interrupted && doc.Pass(out) && (r.Verdict == "" || r.Verdict == doc.VerdictUndecided) {
		out = append(out, doc.Undecided(why))
	}
	done := doc.Check{ID: CheckCompleted, Pass: !r.Interrupted, Message: "the run was not interrupted"}
	if r.Interrupted {
		done.Message = fmt.Sprintf("interrupted after %ss: no verdict", fmtSeconds(r.ElapsedS))
	}
	return append(out, done)
}

// TargetSlow reports whether iterations were dropped because every VU was
// busy waiting on a slow target rather than because the generator fell
// behind: no VU was idle when they fell due, and the target's p99 latency
// at the planned rate keeps at least --max-vus requests in flight
// (Little's law: in flight = rate x latency). A recording that does not
// say how many VUs there were is never called slow.
func (r *Result) TargetSlow() bool {
	if r.DroppedNoVU == 0 || r.VUs.Max <= 0 {
		return false
	}
	return r.RatePerS*r.Latency.P99/1000 >= float64(r.VUs.Max)
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
			if !c.Pass {
				c.Message += "; " + HeadersHint
			}
		}
	}
	return out
}

// HeadersHint ends a failed header check: how to keep the run's verdict
// on the count alone.
const HeadersHint = "--headers warn reports the header checks without failing the run, --headers off skips them"

// refusalWord names the run's refusals: "429", or with declared refusal
// statuses "refusal (429, 503)".
func (r *Result) refusalWord() string {
	if len(r.LimitedStatus) == 0 {
		return "429"
	}
	return "refusal (" + refusalStatuses(r.LimitedStatus) + ")"
}

func refusalStatuses(also []int) string {
	parts := []string{"429"}
	for _, s := range also {
		parts = append(parts, fmt.Sprint(s))
	}
	return strings.Join(parts, ", ")
}

func (r *Result) headerRules() []doc.Check {
	h := r.Headers
	refusal := r.refusalWord()
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
			if h.Draft != "" && h.Draft != header.DraftCurrent && h.OldDraft > 0 {
				c.Message += fmt.Sprintf(" in %s syntax", h.Draft)
			}
		}
		return c
	}
	ra := doc.Check{ID: CheckRetryAfter, Warning: true, Pass: true, Message: "every " + refusal + " has a valid Retry-After"}
	switch {
	case r.RateLimited == 0:
		ra.Skipped, ra.Message = true, "no "+refusal+" responses"
	case h.RetryAfter.Valid < r.RateLimited:
		ra.Pass = false
		ra.Message = fmt.Sprintf("%d of %d %s responses lack a valid Retry-After", r.RateLimited-h.RetryAfter.Valid, r.RateLimited, refusal)
		if h.RetryAfter.Example != "" {
			ra.Message += ": " + h.RetryAfter.Example
		}
	case h.RetryZeroRefused > 0:
		ra.Pass = false
		ra.Message = fmt.Sprintf("%d refusals said Retry-After: 0 (retry at once), and the same identity's next request within %s was refused again %d times: clients told to retry at once hammer the limiter",
			h.RetryZero, ZeroHorizon, h.RetryZeroRefused)
	case h.RetryZero > 0:
		ra.Message += fmt.Sprintf("; note: %d said Retry-After: 0, which RFC 9110 allows, and the same identity's next request within %s was admitted %d times and never refused", h.RetryZero, ZeroHorizon, h.RetryZeroAdmitted)
	}
	st := doc.Check{ID: CheckNotStorable, Warning: true, Pass: true, Message: "no " + refusal + " may be stored by a cache"}
	switch {
	case r.RateLimited == 0:
		st.Skipped, st.Message = true, "no "+refusal+" responses"
	case h.Storable429 > 0:
		st.Pass = false
		st.Message = fmt.Sprintf("%d of %d %s responses may be stored by a cache", h.Storable429, r.RateLimited, refusal)
		if h.StorableWhy != "" {
			st.Message += ": " + h.StorableWhy
		}
	}
	ws := doc.Check{ID: CheckWrongStatus, Pass: true, Message: "every refusal, and every response limited by its own headers (r=0), is a 429"}
	if h.WrongStatus > 0 {
		ws.Pass = false
		ws.Message = fmt.Sprintf("%d responses were limited with %s, not 429 (a declared refusal status, or their RateLimit says r=0): clients and proxies take a 5xx for an outage and retry at once", h.WrongStatus, h.WrongStatusExample)
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

// draftCheck warns about RateLimit fields in an older draft's syntax:
// valid there and read (policy and all), but not what the current draft
// and the clients that follow it read. Skipped when every field is in the
// current syntax or there are none.
func (r *Result) draftCheck() doc.Check {
	h := r.Headers
	c := doc.Check{ID: CheckDraft, Warning: true, Pass: true}
	switch {
	case h.NotRecorded != "":
		c.Skipped, c.Message = true, "not checked: "+h.NotRecorded
	case h.OldDraft == 0:
		c.Skipped, c.Message = true, "no RateLimit field in an older draft's syntax"
		if h.Draft == header.DraftCurrent {
			c.Message = "every RateLimit field is in the current draft's syntax"
		}
	default:
		c.Pass = false
		c.Message = fmt.Sprintf("%d responses carry RateLimit fields in %s syntax (%s): valid for that draft and read here, but clients that follow the current draft (RateLimit-Policy: \"name\";q=10;w=2, RateLimit: \"name\";r=9;t=2) cannot read them",
			h.OldDraft, h.Draft, h.OldDraftExample)
	}
	return c
}

// failOpenCheck warns when admitted responses carry no rate limit field
// while others do: the signature of a limiter that fails open (a missed
// Redis deadline serves the request without deciding, so without its
// headers). It says why a count is over, as a finding of its own.
func (r *Result) failOpenCheck() doc.Check {
	h := r.Headers
	c := doc.Check{ID: CheckFailOpen, Warning: true, Pass: true}
	switch {
	case h.NotRecorded != "":
		c.Skipped, c.Message = true, "not checked: "+h.NotRecorded
	case h.AllowedWith == 0:
		c.Skipped, c.Message = true, "no admitted response carried a rate limit field to compare with"
	case h.AllowedBare == 0:
		c.Message = fmt.Sprintf("every admitted response (%d) carried the limiter's headers", h.AllowedWith)
	default:
		c.Pass = false
		c.Message = failOpenLine(h)
	}
	return c
}

func failOpenLine(h Headers) string {
	return fmt.Sprintf("%s of %s admitted responses carried no RateLimit header while the others did: the limiter may be failing open (serving without a decision when Redis misses its deadline)",
		words.Commas(h.AllowedBare), words.Commas(h.AllowedBare+h.AllowedWith))
}

// NoLimiterNote is the note (or, with --expect, the failure) of a run that
// saw no sign of a rate limiter.
const NoLimiterNote = "no refusal and no RateLimit headers seen: there may be no limiter in front of this URL"

// NoLimiterNoteUnrecorded is NoLimiterNote for a recording without headers.
const NoLimiterNoteUnrecorded = "no refusal seen (and the recording has no headers to show a RateLimit field): there may be no limiter in front of this URL"

// NoLimiterSeen reports whether a run got responses but refused none and
// saw no RateLimit, RateLimit-Policy or legacy X-RateLimit-* field.
// Delays the model predicts and the target really held (a limiter that
// delays rather than refuses: slowdown, leaky-bucket delay=) are a sign too.
func NoLimiterSeen(res *Result) bool {
	h := res.Headers
	return res.Responses > 0 && res.RateLimited == 0 && h.RateLimit.Present == 0 && h.Policy.Present == 0 && h.Legacy == 0 && !delaysSeen(res)
}

// delaysSeen reports whether a run without refusals was judged against a
// model that delays and most of its delayed requests were held as long.
func delaysSeen(res *Result) bool {
	if res.Expect == nil || res.Expect.Delays == nil {
		return false
	}
	d := res.Expect.Delays
	return res.RateLimited == 0 && d.Met > 0 && 2*d.Met >= d.Delayed
}

// noLimiterMessage is NoLimiterNote, for a recording that could not show
// the headers said so.
func noLimiterMessage(res *Result) string {
	if res.Headers.NotRecorded != "" {
		return NoLimiterNoteUnrecorded
	}
	return NoLimiterNote
}

// undecided says why a run decided nothing ("" when it did): most
// requests got no answer, or nothing was refused (and no delay the model
// predicts was held), so the run cannot tell the limiter from none.
func (r *Result) undecided() string {
	unanswered := int64(0)
	for _, n := range r.Errors {
		unanswered += n
	}
	switch {
	case r.Sent > 0 && 2*unanswered > r.Sent:
		return fmt.Sprintf("%d of %d requests got no answer: too few answers to judge the limiter on", unanswered, r.Sent)
	case r.Segment != nil && r.Segment.Index >= 0 && r.Segment.Count > 1:
		// one segment of a split run: what it refused is judged by the
		// merge, which sees every segment's arrivals
		return ""
	case r.Responses > 0 && r.RateLimited == 0 && !delaysSeen(r):
		return fmt.Sprintf("nothing was refused (%d responses): this run cannot tell the limiter from no limiter; raise --rate or --duration past the quota, or --allow-undecided to accept a run without refusals", r.Responses)
	case r.Expect != nil && r.Expect.Note == judge.AdmitsAllNote:
		// a count within the tolerance of such a model says nothing
		return fmt.Sprintf("the model (%s) admits all %d requests sent: it cannot be told from no limiter at this load; raise --rate or --duration past what it admits (or check --expect), or --allow-undecided to accept it", r.Expect.Description, r.Expect.Of)
	}
	return ""
}
