package load

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// Kind and Version identify the load document.
const (
	Kind    = "load"
	Version = 2
)

// The ids of a load run's checks besides the thresholds ("threshold:"
// and the threshold, e.g. "threshold:p99<50ms").
const (
	CheckGenerator    = "generator"
	CheckRateLimit    = "header:ratelimit"
	CheckPolicy       = "header:ratelimit-policy"
	CheckRetryAfter   = "header:retry-after"
	CheckNotStorable  = "header:429-not-storable"
	CheckWrongStatus  = "header:limited-status"
	CheckReset        = "header:reset"
	CheckExpect       = "expect"
	CheckLimiterSeen  = "limiter-seen"
	CheckCompleted    = "completed"
	CheckThresholdPfx = "threshold:"
)

// document is the JSON form of a Result: the load document of version 2,
// durations in milliseconds, one word per concept (see docs/json.md).
type document struct {
	doc.Header
	Source           string           `json:"source,omitempty"` // the tool that recorded it: k6, vegeta; absent for a run of load
	Target           string           `json:"target"`           // password masked (secret.URL); never the credentials sent
	Method           string           `json:"method"`
	ArrivalRate      string           `json:"arrival_rate"`
	ArrivalRatePerS  float64          `json:"arrival_rate_per_s"`
	DurationMs       float64          `json:"duration_ms"`
	ElapsedMs        float64          `json:"elapsed_ms"` // start to the last response
	TimeoutMs        float64          `json:"timeout_ms"` // per request
	Identities       int              `json:"identities"` // 0: none sent
	RunID            string           `json:"run_id"`
	Planned          int64            `json:"planned"`
	Sent             int64            `json:"sent"`
	Dropped          int64            `json:"dropped"`
	DroppedNoVU      int64            `json:"dropped_no_vu"`
	DroppedLate      int64            `json:"dropped_late"`
	NotStarted       int64            `json:"not_started"`
	Interrupted      bool             `json:"interrupted"`
	Aborted          bool             `json:"aborted"`
	AbortReason      string           `json:"abort_reason,omitempty"`
	Completed        int64            `json:"completed"`
	Responses        int64            `json:"responses"`
	AchievedRatePerS float64          `json:"achieved_rate_per_s"`
	ResponsesPerS    float64          `json:"responses_per_s"`
	BytesIn          int64            `json:"bytes_in"`
	BytesOut         int64            `json:"bytes_out"`
	Status           map[string]int64 `json:"status"`
	Allowed          int64            `json:"allowed"`
	Refused          int64            `json:"refused"` // 429s
	RefusedPct       float64          `json:"refused_pct"`
	Failed           int64            `json:"failed"`
	FailedPct        float64          `json:"failed_pct"`
	Errors           map[string]int64 `json:"errors"`
	Timeline         []Second         `json:"timeline"`
	LatencyHistogram *Histogram       `json:"latency_histogram,omitempty"`
	FromDueHistogram *Histogram       `json:"latency_from_due_histogram,omitempty"`
	Latency          Latency          `json:"latency_ms"`
	LatencyFromDue   Latency          `json:"latency_from_due_ms"`
	Lateness         Latency          `json:"lateness_ms"`
	VUs              VUStats          `json:"vus"`
	Generator        GenStat          `json:"generator"`
	Headers          Headers          `json:"headers"`
	Thresholds       []Check          `json:"thresholds"`
	Expect           *Judged          `json:"expect,omitempty"`
	Faults           *FaultReport     `json:"faults,omitempty"`
	Segment          *SegmentInfo     `json:"segment,omitempty"`
	Checks           []doc.Check      `json:"checks"`
	Verdict          string           `json:"verdict"` // "pass", "fail" or "interrupted"
	Notes            []string         `json:"notes,omitempty"`
}

// DocHeader returns the document's envelope, for cmd to stamp.
func (r *Result) DocHeader() *doc.Header { return &r.Header }

func secondsToMs(s float64) float64 { return float64(int64(s*1e6+0.5)) / 1e3 }

// MarshalJSON writes the load document (version 2).
func (r Result) MarshalJSON() ([]byte, error) {
	h := r.Header
	h.Kind, h.Version = Kind, Version
	if !r.StartedAt.IsZero() {
		h.StartedAt = r.StartedAt
	}
	thresholds := r.Thresholds
	if thresholds == nil {
		thresholds = []Check{}
	}
	d := document{
		Header: h, Source: r.Source, Target: r.Target, Method: r.Method,
		ArrivalRate: r.Rate, ArrivalRatePerS: r.RatePerS,
		DurationMs: secondsToMs(r.DurationS), ElapsedMs: secondsToMs(r.ElapsedS), TimeoutMs: secondsToMs(r.TimeoutS),
		Identities: r.Identities, RunID: r.RunID,
		Planned: r.Planned, Sent: r.Sent, Dropped: r.Dropped, DroppedNoVU: r.DroppedNoVU, DroppedLate: r.DroppedLate,
		NotStarted: r.NotStarted, Interrupted: r.Interrupted, Aborted: r.Aborted, AbortReason: r.AbortReason,
		Completed: r.Completed, Responses: r.Responses, AchievedRatePerS: r.AchievedRate, ResponsesPerS: r.ResponsesPerS,
		BytesIn: r.BytesIn, BytesOut: r.BytesOut,
		Status: r.Status, Allowed: r.Allowed, Refused: r.RateLimited, RefusedPct: r.RateLimitedPct,
		Failed: r.Failed, FailedPct: r.FailedPct, Errors: r.Errors, Timeline: r.Timeline,
		LatencyHistogram: r.LatencyHistogram, FromDueHistogram: r.LatencyFromDueHistogram,
		Latency: r.Latency, LatencyFromDue: r.LatencyFromDue, Lateness: r.Lateness,
		VUs: r.VUs, Generator: r.Generator, Headers: r.Headers, Thresholds: thresholds, Expect: r.Expect, Faults: r.Faults, Segment: r.Segment,
		Checks: r.CheckList(), Verdict: r.Verdict, Notes: r.Notes,
	}
	if d.Status == nil {
		d.Status = map[string]int64{}
	}
	if d.Errors == nil {
		d.Errors = map[string]int64{}
	}
	if d.Timeline == nil {
		d.Timeline = []Second{}
	}
	return json.Marshal(d)
}

// UnmarshalJSON reads a load document of version 2. The messages of the
// verdict are those of the failed checks that count, but "completed"
// (an interrupted run has no verdict, not a failure).
func (r *Result) UnmarshalJSON(data []byte) error {
	var d document
	if err := json.Unmarshal(data, &d); err != nil {
		return err
	}
	*r = Result{
		Kind: d.Kind, Version: d.Version, Header: d.Header, Checks: d.Checks,
		Source: d.Source, Target: d.Target, Method: d.Method, StartedAt: d.StartedAt,
		Rate: d.ArrivalRate, RatePerS: d.ArrivalRatePerS,
		DurationS: d.DurationMs / 1e3, ElapsedS: d.ElapsedMs / 1e3, TimeoutS: d.TimeoutMs / 1e3,
		Identities: d.Identities, RunID: d.RunID,
		Planned: d.Planned, Sent: d.Sent, Dropped: d.Dropped, DroppedNoVU: d.DroppedNoVU, DroppedLate: d.DroppedLate,
		NotStarted: d.NotStarted, Interrupted: d.Interrupted, Aborted: d.Aborted, AbortReason: d.AbortReason,
		Completed: d.Completed, Responses: d.Responses, AchievedRate: d.AchievedRatePerS, ResponsesPerS: d.ResponsesPerS,
		BytesIn: d.BytesIn, BytesOut: d.BytesOut,
		Status: d.Status, Allowed: d.Allowed, RateLimited: d.Refused, RateLimitedPct: d.RefusedPct,
		Failed: d.Failed, FailedPct: d.FailedPct, Errors: d.Errors, Timeline: d.Timeline,
		LatencyHistogram: d.LatencyHistogram, LatencyFromDueHistogram: d.FromDueHistogram,
		Latency: d.Latency, LatencyFromDue: d.LatencyFromDue, Lateness: d.Lateness,
		VUs: d.VUs, Generator: d.Generator, Headers: d.Headers, Thresholds: d.Thresholds, Expect: d.Expect, Faults: d.Faults, Segment: d.Segment,
		Verdict: d.Verdict, Notes: d.Notes,
	}
	r.Header.StartedAt = time.Time{}
	for _, c := range d.Checks {
		if c.Counts() && !c.Pass && c.ID != CheckCompleted {
			r.VerdictMessages = append(r.VerdictMessages, c.Message)
		}
	}
	return nil
}

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
				c.Message += " (expected under faults: " + CheckFaultBaseline + " and the " + CheckFaultPfx + "* checks judge the windows)"
			}
		}
		out = append(out, c)
	}
	out = append(out, r.faultChecks()...)
	out = append(out, r.segmentChecks()...)
	expectGiven := r.Expect != nil
	for _, m := range r.VerdictMessages {
		expectGiven = expectGiven || m == NoLimiterNote || m == NoLimiterNoteUnrecorded
	}
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
