package race

import (
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// Result is the race result document (kind "race", version 1).
type Result struct {
	Kind          string           `json:"kind"`
	Version       int              `json:"version"`
	Server        redisconn.Server `json:"server"`
	RunID         string           `json:"run_id"`
	Keys          string           `json:"keys"` // the run's key pattern, race:{<run id>}:*
	Node          string           `json:"node,omitempty"`
	Concurrency   int              `json:"concurrency"`
	Limit         int64            `json:"limit"`
	Trials        int              `json:"trials"`
	WatchAttempts int              `json:"watch_attempts"`
	Strategies    []Strategy       `json:"strategies"`
	// RaceReproduced says whether naive admitted more than the limit in any
	// trial; nil when naive was not raced.
	RaceReproduced *bool    `json:"race_reproduced,omitempty"`
	Verdict        string   `json:"verdict"` // "pass" or "fail"
	Failures       []string `json:"failures"`
	Notes          []string `json:"notes"`
}

// Strategy is one strategy's outcome; every slice has one entry per trial.
type Strategy struct {
	Name           string `json:"name"`
	Label          string `json:"label"`
	AtomicExpected bool   `json:"atomic_expected"`
	Script         string `json:"script,omitempty"` // the user script's file
	Admitted       []int  `json:"admitted"`
	OverAdmitted   []int  `json:"over_admitted"`
	// FinalValue is what Redis recorded after the trial: the counter
	// (naive, multi, watch, incr) or the tokens taken from the bucket
	// (script); null for a user script, whose state is its own.
	FinalValue []*int64 `json:"final_value"`
	// LostUpdates are successful writes that the final value does not
	// show: admitted - final for GET/SET, successful INCRs - final for incr.
	LostUpdates []*int64 `json:"lost_updates"`
	Retries     []int    `json:"retries"`
	GiveUps     []int    `json:"give_ups"`
	Errors      []int    `json:"errors"`
	// TrialP50Us, TrialP99Us and WallUs are per trial: call latency
	// percentiles, and the time from the barrier opening to the last reply.
	TrialP50Us     []int64 `json:"trial_p50_us"`
	TrialP99Us     []int64 `json:"trial_p99_us"`
	WallUs         []int64 `json:"wall_us"`
	P50Us          int64   `json:"p50_us"` // over all trials' calls
	P99Us          int64   `json:"p99_us"`
	AdmittedMin    int     `json:"admitted_min"`
	AdmittedMedian float64 `json:"admitted_median"`
	AdmittedMax    int     `json:"admitted_max"`
	ErrorSample    string  `json:"error_sample,omitempty"`
}

// Pass reports whether the run's verdict is "pass".
func (r Result) Pass() bool { return r.Verdict == "pass" }
