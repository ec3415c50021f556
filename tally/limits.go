package tally

import "time"

// Limits of a run document, shared by whatever produces one: the load
// executor checks them before it sends anything, a recording before it
// reads further, a merge before it allocates.
const (
	// MaxDuration is the longest a run may span: the timeline keeps
	// every second.
	MaxDuration = 7 * 24 * time.Hour
	// MaxIdentities is the most identities a run judges (one model each).
	MaxIdentities = 1_000_000
	// MaxTimeout is the longest per-request timeout, the latency
	// histograms' range.
	MaxTimeout = time.Hour
	// MaxSegments bounds the segments of one plan.
	MaxSegments = 10_000
)

// The --headers modes: what a broken rate limit header does.
const (
	HeadersFail = "fail" // a failed check (exit 1), the default
	HeadersWarn = "warn" // reported; the run still passes
	HeadersOff  = "off"  // not checked
)

// DefaultExpectStatus are the statuses that do not count as failed.
var DefaultExpectStatus = []int{200, 429}

// The tools whose runs a document may hold (Result.Source). A run of this
// tool has no source ("" or SourceRatelimit).
const (
	SourceRatelimit = "ratelimit"
	SourceK6        = "k6"
	SourceVegeta    = "vegeta"
)
