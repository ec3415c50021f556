package tally

import (
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
)

// Result is one run of load (or a recording of another tool, or a merge
// of segments), as its document carries it. Its JSON form is the load
// document (`-o json`, `--out FILE`), written and read by MarshalJSON and
// UnmarshalJSON (document.go): the field names and units of the document
// (docs/json.md) are not those of this struct, which has no JSON tags.
type Result struct {
	// Kind and Version are what the engine sets ("load", 1); the document
	// always carries Kind and Version of this package, in Header.
	Kind    string
	Version int
	// Header is the document's envelope; cmd stamps it. Its StartedAt is
	// StartedAt.
	Header doc.Header
	// Checks are the run's checks as a document read them; nil for a run
	// (CheckList derives them).
	Checks []doc.Check

	// Source is the tool that recorded the run: "" (or SourceRatelimit)
	// for a run of load, SourceK6 or SourceVegeta for a recording of
	// another tool (package recording).
	Source string

	Target     string // password masked (secret.URL); never the credentials sent
	Method     string
	StartedAt  time.Time
	Rate       string
	RatePerS   float64
	DurationS  float64
	ElapsedS   float64 // start to the last response
	TimeoutS   float64 // per request
	Identities int     // 0: none sent
	RunID      string

	Planned      int64 // iterations due before the end
	Sent         int64 // requests started
	Dropped      int64 // due but not sent (dropped_no_vu + dropped_late)
	DroppedNoVU  int64
	DroppedLate  int64
	NotStarted   int64 // never due because the run was interrupted
	Interrupted  bool  // Ctrl-C (the counts cover what ran)
	Aborted      bool  // --abort-on-fail stopped the run (the counts cover what ran)
	AbortReason  string
	Completed    int64 // sent minus those cut off by an interrupt
	Responses    int64 // completed with an HTTP status
	AchievedRate float64
	// ResponsesPerS is the response throughput: responses over the time
	// from the start to the last response (elapsed_s).
	ResponsesPerS float64
	// BytesIn and BytesOut are the bytes read from and written to the
	// target's connections (headers, bodies and TLS included), over the
	// whole run; 0 with a transport the engine does not own (tests).
	BytesIn  int64
	BytesOut int64

	Status         map[string]int64 // per HTTP status code
	Allowed        int64
	RateLimited    int64 // 429s
	RateLimitedPct float64
	Failed         int64 // unexpected status or transport error
	// LimitedStatus are the statuses besides 429 the run counted as the
	// limiter's refusals (--limited-status).
	LimitedStatus []int
	FailedPct     float64
	Errors        map[string]int64 // transport errors by kind

	Timeline []Second // by the second the request was sent in

	// Bucket counts of the two latencies (omitted when nothing completed).
	LatencyHistogram        *Histogram // from send
	LatencyFromDueHistogram *Histogram // from the due time

	Latency        Latency // from send to the last byte
	LatencyFromDue Latency // from the due time (no coordinated omission)
	Lateness       Latency // from the due time to the send
	VUs            VUStats
	Generator      GenStat
	Headers        Headers
	Thresholds     []judge.ThresholdCheck
	Expect         *judge.Judged
	// Segment is what a segmented run (--segment) or a merge of segments
	// carries; nil for a whole run.
	Segment *SegmentInfo
	// Faults is the verdict on the faults injected (--fault); nil without.
	Faults          *judge.FaultReport
	Verdict         string // "pass", "fail" or "interrupted"
	VerdictMessages []string
	// Notes are what a reader should know that is not a failure, such as
	// a target that showed no sign of a limiter.
	Notes []string
}

// Second is one entry of the timeline.
type Second struct {
	Second int              `json:"second"`
	Status map[string]int64 `json:"status"` // status code, or "error" for transport errors
}

// Latency percentiles in milliseconds (HDR histograms, 3 significant digits).
type Latency struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// VUStats describe the virtual users.
type VUStats struct {
	PreAllocated int   `json:"pre_allocated"`
	Max          int   `json:"max"`
	Peak         int   `json:"peak"`     // VUs that existed at the end (VUs are never retired)
	Added        int64 `json:"added"`    // started during the run
	MaxBusy      int64 `json:"max_busy"` // most VUs in a request at once
}

// GenStat is how the generator itself did.
type GenStat struct {
	FellBehind bool     `json:"fell_behind"`
	Reasons    []string `json:"reasons,omitempty"`
	// Causes are why it fell behind, one per kind of sign (Reasons say
	// it in words, per segment in a merge); absent when it kept up and in
	// documents written before causes were kept (GeneratorCauses).
	Causes []Cause `json:"causes,omitempty"`
}

// Headers summarise the rate limit header checks over all responses.
type Headers struct {
	// Mode is --headers: fail, warn or off.
	Mode        string    `json:"mode,omitempty"`
	Responses   int64     `json:"responses"`
	RateLimit   FieldStat `json:"ratelimit"`
	Policy      FieldStat `json:"ratelimit_policy"`
	RetryAfter  FieldStat `json:"retry_after"` // on 429s only
	Storable429 int64     `json:"storable_429"`
	StorableWhy string    `json:"storable_429_reason,omitempty"`
	Legacy      int64     `json:"legacy"`
	LegacyName  string    `json:"legacy_prefix,omitempty"`
	// PolicyValue is the RateLimit-Policy value seen most often, if valid.
	PolicyValue string `json:"policy,omitempty"`
	// WrongStatus counts responses limited with another status than 429:
	// a 5xx or 403 that says r=0 in RateLimit (limited, by its own
	// headers); WrongStatusExample is the first, e.g. "503".
	WrongStatus        int64  `json:"limited_wrong_status"`
	WrongStatusExample string `json:"limited_wrong_status_example,omitempty"`
	// ResetBeyondWindow counts RateLimit t values longer than the policy's
	// window w plus a second of rounding: no limiter needs longer than its
	// window to give the quota back.
	ResetBeyondWindow int64  `json:"reset_beyond_window"`
	ResetExample      string `json:"reset_beyond_window_example,omitempty"`
	// NotRecorded says why a recording has no response headers to check
	// (its header checks are then skipped); absent when they were checked.
	NotRecorded string `json:"not_recorded,omitempty"`
	// Draft is the draft of the RateLimit fields most responses used
	// (header.DraftCurrent, draft-07, draft-06, draft-06/07); OldDraft
	// counts responses in an older draft's syntax, OldDraftExample shows
	// one.
	Draft           string `json:"draft,omitempty"`
	OldDraft        int64  `json:"old_draft"`
	OldDraftExample string `json:"old_draft_example,omitempty"`
	// RetryZero counts refusals with Retry-After: 0; of the same
	// identity's next requests within a second, RetryZeroRefused were
	// refused again (the 0 was not true) and RetryZeroAdmitted admitted.
	RetryZero         int64 `json:"retry_after_zero"`
	RetryZeroRefused  int64 `json:"retry_after_zero_refused"`
	RetryZeroAdmitted int64 `json:"retry_after_zero_admitted"`
	// AllowedBare counts admitted responses without the decision's
	// RateLimit (or legacy X-RateLimit-*) field while AllowedWith carried
	// one: a limiter that fails open (a Redis deadline missed) serves
	// requests without deciding, so without that field.
	AllowedBare int64 `json:"allowed_without_headers"`
	AllowedWith int64 `json:"allowed_with_headers"`
}

// FieldStat counts one field's presence and validity.
type FieldStat struct {
	Checked int64  `json:"checked"` // responses the check applies to
	Present int64  `json:"present"`
	Valid   int64  `json:"valid"`
	Example string `json:"example_error,omitempty"`
}

// Recorded reports whether the result is a recording of another tool
// rather than a run of load.
func (r *Result) Recorded() bool { return r.Source != "" && r.Source != SourceRatelimit }
