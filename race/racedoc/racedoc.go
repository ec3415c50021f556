// Package racedoc holds the race document (kind "race"): its types, the
// strategies' names, the checks a result makes and its verdict. It imports
// no Redis client, so report draws race results without depending on one;
// package race runs the trials that fill it in.
package racedoc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
)

// Kind and Version identify a race result document.
const (
	Kind    = "race"
	Version = 2
)

// The built-in strategies.
const (
	Naive  = "naive"  // GET, decide in Go, SET: the classic bug
	Multi  = "multi"  // GET, decide, MULTI/SET/EXEC: still racy
	Watch  = "watch"  // WATCH, GET, decide, MULTI/SET/EXEC, retried on conflict
	Incr   = "incr"   // INCR, then compare
	Script = "script" // the project's token bucket Lua script
	// User is the name of the user's own script (--script FILE).
	User = "user"
)

// Result is the race result document (kind "race", version 2).
type Result struct {
	doc.Header
	RunID       string `json:"run_id"`
	KeyPattern  string `json:"key_pattern"` // the run's keys, race:{<run id>}:*
	Node        string `json:"node,omitempty"`
	Concurrency int    `json:"concurrency"`
	Limit       int64  `json:"limit"`
	// Expect is the model the user script was judged against (--expect),
	// as given; empty when it was judged against the limit.
	Expect        string     `json:"expect,omitempty"`
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
	// Expected is, per trial, what the --expect model admits over the
	// trial as it ran (the user script only, with --expect): between its
	// admissions with every call decided at its send and at its answer.
	Expected []judge.Bounds `json:"expected,omitempty"`
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

// ExactExpected reports whether strategy name promises to admit exactly
// min(limit, concurrency) requests against a fresh key: incr, the built-in
// Lua script and a user script (--script), which claim atomic exactness.
// Fewer is a failed check (under-admission: the limiter refuses requests it
// has room for). watch is atomic but not exact: a request that loses
// --watch-attempts conflicts gives up, so it may admit fewer under
// contention, which is noted, not failed; naive and multi promise nothing.
func ExactExpected(name string) bool {
	switch name {
	case Incr, Script, User:
		return true
	}
	return false
}

// Checks returns the checks of a result, one per strategy in order: a
// strategy that must be atomic fails when it admitted more than the limit
// in a trial, one that must be exact (ExactExpected) also when it
// admitted fewer than min(limit, concurrency). A user script judged
// against a model (--expect) fails instead when a trial's admissions lie
// outside what the model admits over that trial (Expected).
func Checks(r Result) []doc.Check {
	want := min(r.Limit, int64(r.Concurrency)) // what an exact limiter admits on a fresh key
	out := []doc.Check{}
	for _, s := range r.Strategies {
		if len(s.Expected) > 0 {
			out = append(out, modelCheck(s, r.Concurrency))
			continue
		}
		var failures []string
		for t, a := range s.Allowed {
			switch {
			case s.AtomicExpected && a > int(r.Limit):
				failures = append(failures, fmt.Sprintf("over-admission: %s admitted %d of %d with limit %d in trial %d", s.Label, a, r.Concurrency, r.Limit, t+1))
			case ExactExpected(s.Name) && int64(a) < want:
				msg := fmt.Sprintf("under-admission: %s admitted %d of %d with limit %d in trial %d", s.Label, a, r.Concurrency, r.Limit, t+1)
				if t < len(s.Errors) && s.Errors[t] > 0 {
					msg += " (" + calls(s.Errors[t]) + " failed)"
				}
				failures = append(failures, msg)
			}
		}
		out = append(out, strategyCheck(s, r.Limit, failures))
	}
	return out
}

// RefillHint is what an over-admitting user script judged by --limit is
// told, after its failures: a script that refills during a trial admits
// more than the limit, and --expect judges it by its model over the
// trial's real duration. The race adds it to the check it computes (a
// document's checks are kept as the run wrote them).
func RefillHint(s Strategy, limit int64) string {
	longest := 0.0
	for _, w := range s.WallMs {
		longest = max(longest, w)
	}
	return fmt.Sprintf("the longest trial took %s ms, and a script that refills during a trial admits more than --limit: "+
		"judge it by the model it implements with --expect MODEL (e.g. --expect token-bucket:burst=%d,rate=R)",
		strconv.FormatFloat(longest, 'f', 1, 64), limit)
}

// modelCheck is the check of a user script judged against a model: each
// trial's admissions within the model's bounds over that trial.
func modelCheck(s Strategy, concurrency int) doc.Check {
	c := doc.Check{ID: s.Name, Pass: true}
	var failures []string
	for t, b := range s.Expected {
		if b.Pass {
			continue
		}
		kind := "over-admission"
		if b.Observed < b.Low {
			kind = "under-admission"
		}
		failures = append(failures, fmt.Sprintf("%s: %s admitted %d of %d in trial %d; %s admits %s over the trial's %s ms (from the first call's send to the last call's answer)",
			kind, s.Label, b.Observed, concurrency, t+1, b.Description, b.Range(), strconv.FormatFloat(b.SpanMs, 'f', 1, 64)))
	}
	if len(failures) > 0 {
		c.Pass, c.Message = false, strings.Join(failures, "; ")
		return c
	}
	c.Message = fmt.Sprintf("admitted what %s admits over each trial as it ran, in every trial", s.Expected[0].Description)
	return c
}

// PassLine says what a passing run showed, for every format's verdict
// line: no strategy that must be atomic over the limit, and the user
// script within its model when it was judged by one.
func PassLine(r Result) string {
	line := fmt.Sprintf("no strategy that must be atomic admitted more than the limit of %d", r.Limit)
	for _, s := range r.Strategies {
		if len(s.Expected) == 0 {
			continue
		}
		line = fmt.Sprintf("%s admitted what %s admits over each trial as it ran", s.Label, s.Expected[0].Description)
		if len(r.Strategies) > 1 {
			line = fmt.Sprintf("no built-in strategy that must be atomic admitted more than the limit of %d; %s", r.Limit, line)
		}
	}
	return line
}

// strategyCheck is the check of one strategy: its failures joined, or
// what it showed when it has none.
func strategyCheck(s Strategy, limit int64, failures []string) doc.Check {
	c := doc.Check{ID: s.Name, Pass: len(failures) == 0}
	switch {
	case !c.Pass:
		c.Message = strings.Join(failures, "; ")
	case s.AtomicExpected:
		c.Message = "admitted at most the limit in every trial"
	case s.AllowedMax > int(limit):
		c.Message = "race reproduced (expected for a strategy that is not atomic)"
	default:
		c.Message = "race not reproduced at this concurrency (a note, not a failure)"
	}
	return c
}

// calls writes n with its noun: "1 call", "2 calls".
func calls(n int) string {
	if n == 1 {
		return "1 call"
	}
	return strconv.Itoa(n) + " calls"
}
