package load

import (
	"sync/atomic"
	"time"
)

// Result is the document of one run (`-o json`, `--out FILE`). Field names
// are stable; docs/ describes them.
type Result struct {
	Kind    string `json:"kind"`    // "load"
	Version int    `json:"version"` // 1

	Target     string    `json:"target"` // password masked (secret.URL); never the credentials sent
	Method     string    `json:"method"`
	StartedAt  time.Time `json:"started_at"`
	Rate       string    `json:"rate"`
	RatePerS   float64   `json:"rate_per_s"`
	DurationS  float64   `json:"duration_s"`
	ElapsedS   float64   `json:"elapsed_s"`  // start to the last response
	TimeoutS   float64   `json:"timeout_s"`  // per request
	Identities int       `json:"identities"` // 0: none sent
	RunID      string    `json:"run_id"`

	Planned      int64   `json:"planned"` // iterations due before the end
	Sent         int64   `json:"sent"`    // requests started
	Dropped      int64   `json:"dropped"` // due but not sent (dropped_no_vu + dropped_late)
	DroppedNoVU  int64   `json:"dropped_no_vu"`
	DroppedLate  int64   `json:"dropped_late"`
	NotStarted   int64   `json:"not_started"` // never due because the run was interrupted
	Interrupted  bool    `json:"interrupted"` // Ctrl-C (the counts cover what ran)
	Aborted      bool    `json:"aborted"`     // --abort-on-fail stopped the run (the counts cover what ran)
	AbortReason  string  `json:"abort_reason,omitempty"`
	Completed    int64   `json:"completed"` // sent minus those cut off by an interrupt
	Responses    int64   `json:"responses"` // completed with an HTTP status
	AchievedRate float64 `json:"achieved_rate_per_s"`
	// ResponsesPerS is the response throughput: responses over the time
	// from the start to the last response (elapsed_s).
	ResponsesPerS float64 `json:"responses_per_s"`
	// BytesIn and BytesOut are the bytes read from and written to the
	// target's connections (headers, bodies and TLS included), over the
	// whole run; 0 with a transport the engine does not own (tests).
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`

	Status         map[string]int64 `json:"status"` // per HTTP status code
	Allowed        int64            `json:"allowed"`
	RateLimited    int64            `json:"rate_limited"` // 429s
	RateLimitedPct float64          `json:"rate_limited_pct"`
	Failed         int64            `json:"failed"` // unexpected status or transport error
	FailedPct      float64          `json:"failed_pct"`
	Errors         map[string]int64 `json:"errors"` // transport errors by kind

	Timeline []Second `json:"timeline"` // by the second the request was sent in

	// Bucket counts of the two latencies (omitted when nothing completed).
	LatencyHistogram        *Histogram `json:"latency_histogram,omitempty"`          // from send
	LatencyFromDueHistogram *Histogram `json:"latency_from_due_histogram,omitempty"` // from the due time

	Latency         Latency  `json:"latency_ms"`          // from send to the last byte
	LatencyFromDue  Latency  `json:"latency_from_due_ms"` // from the due time (no coordinated omission)
	Lateness        Latency  `json:"lateness_ms"`         // from the due time to the send
	VUs             VUStats  `json:"vus"`
	Generator       GenStat  `json:"generator"`
	Headers         Headers  `json:"headers"`
	Thresholds      []Check  `json:"thresholds"`
	Expect          *Judged  `json:"expect,omitempty"`
	Verdict         string   `json:"verdict"` // "pass", "fail" or "interrupted"
	VerdictMessages []string `json:"verdict_messages,omitempty"`
	// Notes are what a reader should know that is not a failure, such as
	// a target that showed no sign of a limiter.
	Notes []string `json:"notes,omitempty"`
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
}

// Headers summarise the rate limit header checks over all responses.
type Headers struct {
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
}

// FieldStat counts one field's presence and validity.
type FieldStat struct {
	Checked int64  `json:"checked"` // responses the check applies to
	Present int64  `json:"present"`
	Valid   int64  `json:"valid"`
	Example string `json:"example_error,omitempty"`
}

// Check is one threshold: --max-failed, or a --threshold.
type Check struct {
	ID      string `json:"id"`   // the threshold in canonical form: "p99<50ms", "failed<=1%"
	Name    string `json:"name"` // the metric: "failed", "p99", ...
	Op      string `json:"op"`   // < <= > >= == !=
	Limit   string `json:"limit"`
	Actual  string `json:"actual"`
	Pass    bool   `json:"pass"`
	Message string `json:"message"`
	Aborted bool   `json:"aborted,omitempty"` // this threshold stopped the run (--abort-on-fail)
}

// Expr is the check as an expression: "p99<50ms". Documents written
// before the op field existed read as "<=".
func (c Check) Expr() string {
	if c.ID != "" {
		return c.ID
	}
	op := c.Op
	if op == "" {
		op = "<="
	}
	return c.Name + op + c.Limit
}

// Live counters for a progress display, updated atomically as the run goes.
type Live struct {
	Sent, Done, OK, Limited, Failed, Dropped, ActiveVUs atomic.Int64
}
