package tally

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
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
	CheckDraft        = "header:draft"
	CheckFailOpen     = "fail-open"
	CheckExpect       = "expect"
	CheckLimiterSeen  = "limiter-seen"
	CheckCompleted    = "completed"
	CheckThresholdPfx = "threshold:"
)

// document is the JSON form of a Result: the load document of version 2,
// durations in milliseconds, one word per concept (see docs/json.md).
type document struct {
	doc.Header
	Source           string                 `json:"source,omitempty"` // the tool that recorded it: k6, vegeta; absent for a run of load
	Target           string                 `json:"target"`           // password masked (secret.URL); never the credentials sent
	Method           string                 `json:"method"`
	ArrivalRate      string                 `json:"arrival_rate"`
	ArrivalRatePerS  float64                `json:"arrival_rate_per_s"`
	DurationMs       float64                `json:"duration_ms"`
	ElapsedMs        float64                `json:"elapsed_ms"` // start to the last response
	TimeoutMs        float64                `json:"timeout_ms"` // per request
	Identities       int                    `json:"identities"` // 0: none sent
	RunID            string                 `json:"run_id"`
	Planned          int64                  `json:"planned"`
	Sent             int64                  `json:"sent"`
	Dropped          int64                  `json:"dropped"`
	DroppedNoVU      int64                  `json:"dropped_no_vu"`
	DroppedLate      int64                  `json:"dropped_late"`
	NotStarted       int64                  `json:"not_started"`
	Interrupted      bool                   `json:"interrupted"`
	Aborted          bool                   `json:"aborted"`
	AbortReason      string                 `json:"abort_reason,omitempty"`
	Completed        int64                  `json:"completed"`
	Responses        int64                  `json:"responses"`
	AchievedRatePerS float64                `json:"achieved_rate_per_s"`
	ResponsesPerS    float64                `json:"responses_per_s"`
	BytesIn          int64                  `json:"bytes_in"`
	BytesOut         int64                  `json:"bytes_out"`
	Status           map[string]int64       `json:"status"`
	Allowed          int64                  `json:"allowed"`
	Refused          int64                  `json:"refused"` // the limiter's refusals: 429 and LimitedStatus
	LimitedStatus    []int                  `json:"limited_status,omitempty"`
	RefusedPct       float64                `json:"refused_pct"`
	Failed           int64                  `json:"failed"`
	FailedPct        float64                `json:"failed_pct"`
	Errors           map[string]int64       `json:"errors"`
	Timeline         []Second               `json:"timeline"`
	LatencyHistogram *Histogram             `json:"latency_histogram,omitempty"`
	FromDueHistogram *Histogram             `json:"latency_from_due_histogram,omitempty"`
	Latency          Latency                `json:"latency_ms"`
	LatencyFromDue   Latency                `json:"latency_from_due_ms"`
	Lateness         Latency                `json:"lateness_ms"`
	VUs              VUStats                `json:"vus"`
	Generator        GenStat                `json:"generator"`
	Headers          Headers                `json:"headers"`
	Thresholds       []judge.ThresholdCheck `json:"thresholds"`
	Expect           *judge.Judged          `json:"expect,omitempty"`
	Faults           *judge.FaultReport     `json:"faults,omitempty"`
	Segment          *SegmentInfo           `json:"segment,omitempty"`
	Checks           []doc.Check            `json:"checks"`
	Verdict          string                 `json:"verdict"` // "pass", "fail" or "interrupted"
	Notes            []string               `json:"notes,omitempty"`
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
		thresholds = []judge.ThresholdCheck{}
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
		Status: r.Status, Allowed: r.Allowed, Refused: r.RateLimited, LimitedStatus: r.LimitedStatus, RefusedPct: r.RateLimitedPct,
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
// verdict are read from its checks as Settle makes them.
func (r *Result) UnmarshalJSON(data []byte) error {
	var d document
	// a field the load document does not have is refused: a body of
	// another kind under "kind": "load" is not read as an empty run
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
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
		Status: d.Status, Allowed: d.Allowed, RateLimited: d.Refused, LimitedStatus: d.LimitedStatus, RateLimitedPct: d.RefusedPct,
		Failed: d.Failed, FailedPct: d.FailedPct, Errors: d.Errors, Timeline: d.Timeline,
		LatencyHistogram: d.LatencyHistogram, LatencyFromDueHistogram: d.FromDueHistogram,
		Latency: d.Latency, LatencyFromDue: d.LatencyFromDue, Lateness: d.Lateness,
		VUs: d.VUs, Generator: d.Generator, Headers: d.Headers, Thresholds: d.Thresholds, Expect: d.Expect, Faults: d.Faults, Segment: d.Segment,
		Verdict: d.Verdict, Notes: d.Notes,
	}
	r.Header.StartedAt = time.Time{}
	r.VerdictMessages = verdictMessages(d.Checks)
	return nil
}
