// Package failoverdoc holds the failover document (kind "failover"): its
// types, variant names and check ids. It imports no Redis client, so
// report draws failover results without depending on one; package
// failover measures the failovers that fill it in.
package failoverdoc

import (
	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// Kind and Version identify the failover document.
const (
	Kind    = "failover"
	Version = 1
)

// Variant names.
const (
	VariantNoWait = "no-wait" // the script call alone, as the application makes it
	VariantWait   = "wait"    // the script call followed by WAIT on the same connection
)

// Check ids.
const (
	CheckMaxExtra     = "max-extra"      // no trial of the no-wait variant over Options.MaxExtra
	CheckMaxExtraWait = "max-extra-wait" // the same for the wait variant
	CheckClusterOK    = "cluster-ok"     // every node reports cluster_state:ok at the end
	CheckKeysDeleted  = "keys-deleted"   // no key of the run is left
)

// Result is the failover document (kind "failover", version 1).
type Result struct {
	doc.Header
	RunID      string `json:"run_id"`
	KeyPattern string `json:"key_pattern"` // failover:{<run id>}:*
	Algo       string `json:"algo"`
	Params     Params `json:"params"`
	// RatePerS is the decisions per second of all clients together.
	RatePerS float64 `json:"rate_per_s"`
	Clients  int     `json:"clients"`
	Trials   int     `json:"trials"`
	// Mode is how the replica took over: force or takeover.
	Mode     string  `json:"failover_mode"`
	BeforeMs float64 `json:"before_ms"`
	AfterMs  float64 `json:"after_ms"`
	MaxExtra *int64  `json:"max_extra,omitempty"`
	// Variants holds no-wait and, with --wait, wait.
	Variants []Variant `json:"variants"`
	// Tradeoff compares the two variants; nil without --wait.
	Tradeoff *Tradeoff `json:"tradeoff,omitempty"`
	// ClusterOK: every node reported cluster_state:ok when the run ended.
	ClusterOK bool `json:"cluster_ok"`
	// KeysDeleted: no key of the run was left when it ended.
	KeysDeleted bool        `json:"keys_deleted"`
	Checks      []doc.Check `json:"checks"`
	Verdict     string      `json:"verdict"` // "pass" or "fail"
	Notes       []string    `json:"notes"`
}

// Params are the limiter's parameters.
type Params = limiter.ParamsDoc

// Variant is one way of calling the limiter, over every trial.
type Variant struct {
	Name          string  `json:"name"`          // VariantNoWait or VariantWait
	WaitReplicas  int     `json:"wait_replicas"` // 0 for no-wait
	WaitTimeoutMs float64 `json:"wait_timeout_ms,omitempty"`
	Trials        []Trial `json:"trials"`
	// Min, median and max over the trials.
	ExtraAllowed  Stats `json:"extra_allowed"`
	LostWrites    Stats `json:"lost_writes"`
	UnavailableMs Stats `json:"unavailable_ms"`
	P50Ms         Stats `json:"p50_ms"`
	P99Ms         Stats `json:"p99_ms"`
}

// Trial is one failover measured.
type Trial struct {
	Trial      int    `json:"trial"` // from 1
	Key        string `json:"key"`
	OldPrimary string `json:"old_primary"`
	NewPrimary string `json:"new_primary"`
	// Decisions is how many calls a primary answered.
	Decisions int `json:"decisions"`
	// Allowed is how many the client let through (with WAIT: those the
	// replicas confirmed); ModelAllowed how many the limiter's model
	// allows for the same decision times; ExtraAllowed their difference.
	Allowed      int `json:"allowed"`
	ModelAllowed int `json:"model_allowed"`
	ExtraAllowed int `json:"extra_allowed"`
	// LostDecisions are answers of the old primary the new primary's
	// state does not reflect; LostWrites those of them the client let
	// through: acknowledged admissions the limiter forgot.
	LostDecisions int `json:"lost_decisions"`
	LostWrites    int `json:"lost_writes"`
	// LostExact is false when no number of lost decisions explains every
	// answer of the new primary (then the best fit is reported).
	LostExact bool `json:"lost_exact"`
	// NotDurable counts calls the script allowed but the client refused
	// because WAIT confirmed fewer replicas than asked.
	NotDurable int `json:"not_durable"`
	// Dropped decisions were skipped because the client was late; Failed
	// ones got no answer within the retry budget.
	Dropped    int          `json:"dropped"`
	Failed     int          `json:"failed"`
	Errors     []ErrorCount `json:"errors"`
	Recoveries []Recovery   `json:"recoveries"`
	// ErrorSample is the text of the first error a client met (secrets
	// masked), or "".
	ErrorSample string `json:"error_sample,omitempty"`
	// FailoverAtMs is when CLUSTER FAILOVER was acknowledged, after the
	// trial's start; DurationMs the trial's length, start to last answer.
	FailoverAtMs float64 `json:"failover_at_ms"`
	DurationMs   float64 `json:"duration_ms"`
	// FailoverMs: CLUSTER FAILOVER acknowledged until the replica
	// reported itself the slot's primary. StalePrimaryMs: how long after
	// that the old primary still answered (the window of lost writes).
	// UnavailableMs: the old primary's last answer until the new
	// primary's first. RecoveryMs: the first error until the new
	// primary's first answer (0 without errors).
	FailoverMs     float64 `json:"failover_ms"`
	StalePrimaryMs float64 `json:"stale_primary_ms"`
	UnavailableMs  float64 `json:"unavailable_ms"`
	RecoveryMs     float64 `json:"recovery_ms"`
	// Latency of the answered calls, sends to answer, retries included.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// ErrorCount is how often clients met one class of error
// (redisconn.Classify: moved, readonly, unreachable, noscript, ...).
type ErrorCount struct {
	Class string `json:"class"`
	Count int    `json:"count"`
}

// Recovery is how often the client did one thing about an error.
type Recovery struct {
	Action string `json:"action"`
	Count  int    `json:"count"`
}

// Stats are the minimum, median and maximum over trials.
type Stats struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// Tradeoff is what the mitigation buys and costs, as medians over trials
// (no-wait minus wait for what it saves, wait minus no-wait for what it
// costs). ExtraAllowedSaved is ExtraSaved of the two medians: a saving of
// at most the no-wait median; the legitimate admissions WAIT refused are
// a cost of their own (RefusedByWait), never added to the saving.
type Tradeoff struct {
	LostWritesSaved   float64 `json:"lost_writes_saved"`
	ExtraAllowedSaved float64 `json:"extra_allowed_saved"`
	P50CostMs         float64 `json:"p50_cost_ms"`
	P99CostMs         float64 `json:"p99_cost_ms"`
	NotDurable        float64 `json:"not_durable"`
}

// ExtraSaved is the extra admissions WAIT saved, from the variants'
// medians of extra admissions: the no-wait median's extra admissions less
// those the wait variant still let through. It is at most the no-wait
// median: a negative wait median (WAIT refused admissions the model
// allows) saves nothing more; it is the cost RefusedByWait.
func ExtraSaved(noWait, wait float64) float64 { return max(noWait, 0) - max(wait, 0) }

// RefusedByWait is the median count of legitimate admissions WAIT
// refused: how far the wait variant's median of extra admissions is
// below zero (fewer allowed than the model allows), else 0.
func RefusedByWait(wait float64) float64 { return max(-wait, 0) }

// Planned is how many decisions a trial was scheduled to make: those a
// primary answered, those dropped because the client was late and those
// that got no answer.
func (t Trial) Planned() int { return t.Decisions + t.Dropped + t.Failed }

// MostlyDropped reports whether a trial dropped at least half of its
// planned decisions: its counts then cover a minority of the schedule.
func (t Trial) MostlyDropped() bool { return t.Planned() > 0 && 2*t.Dropped >= t.Planned() }

// Pass reports whether every check passed.
func (r Result) Pass() bool { return doc.Pass(r.Checks) }

// Failures lists the messages of the failed checks.
func (r Result) Failures() []string { return doc.Failures(r.Checks) }
