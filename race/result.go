package race

import (
	"encoding/json"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// Result is the race result document (kind "race", version 2).
type Result struct {
	doc.Header
	RunID         string     `json:"run_id"`
	KeyPattern    string     `json:"key_pattern"` // the run's keys, race:{<run id>}:*
	Node          string     `json:"node,omitempty"`
	Concurrency   int        `json:"concurrency"`
	Limit         int64      `json:"limit"`
	Trials        int        `json:"trials"`
	WatchAttempts int        `json:"watch_attempts"`
	Strategies    []Strategy `json:"strategies"`
	// RaceReproduced says whether naive allowed more than the limit in any
	// trial; nil when naive was not raced.
	RaceReproduced *bool `json:"race_reproduced,omitempty"`
	// Checks holds one check per strategy raced, in order; the run passes
	// when all pass.
	Checks  []doc.Check `json:"checks"`
	Verdict string      `json:"verdict"` // "pass" or "fail"
	Notes   []string    `json:"notes"`
}

// Strategy is one strategy's outcome; every slice has one entry per trial.
type Strategy struct {
	Name           string `json:"name"`
	Label          string `json:"label"`
	AtomicExpected bool   `json:"atomic_expected"`
	ScriptFile     string `json:"script_file,omitempty"` // the user script's file
	Allowed        []int  `json:"allowed"`
	// OverLimit is max(0, allowed - limit) per trial.
	OverLimit []int `json:"over_limit"`
	// FinalValue is what Redis recorded after the trial: the counter
	// (naive, multi, watch, incr) or the tokens taken from the bucket
	// (script); null for a user script, whose state is its own.
	FinalValue []*int64 `json:"final_value"`
	// LostUpdates are successful writes that the final value does not
	// show: allowed - final for GET/SET, successful INCRs - final for incr.
	LostUpdates []*int64 `json:"lost_updates"`
	Retries     []int    `json:"retries"`
	GiveUps     []int    `json:"give_ups"`
	Errors      []int    `json:"errors"`
	// TrialP50Ms, TrialP99Ms and WallMs are per trial (ms, µs resolution):
	// call latency percentiles, and the time from the barrier opening to
	// the last reply.
	TrialP50Ms    []float64 `json:"trial_p50_ms"`
	TrialP99Ms    []float64 `json:"trial_p99_ms"`
	WallMs        []float64 `json:"wall_ms"`
	P50Ms         float64   `json:"p50_ms"` // over all trials' calls
	P99Ms         float64   `json:"p99_ms"`
	AllowedMin    int       `json:"allowed_min"`
	AllowedMedian float64   `json:"allowed_median"`
	AllowedMax    int       `json:"allowed_max"`
	ErrorSample   string    `json:"error_sample,omitempty"`
}

// CheckList is Checks, or the checks derived from the strategies when
// the Result has none.
func (r Result) CheckList() []doc.Check {
	if r.Checks != nil {
		return r.Checks
	}
	return Checks(r)
}

// Pass reports whether every check passed.
func (r Result) Pass() bool { return doc.Pass(r.CheckList()) }

// Failures lists the messages of the failed checks.
func (r Result) Failures() []string { return doc.Failures(r.CheckList()) }

// MarshalJSON writes the document with its checks (derived from the
// strategies when the Result has none) and the verdict they make.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	p.Checks = r.CheckList()
	p.Verdict = doc.Verdict(p.Checks)
	return json.Marshal(p)
}
