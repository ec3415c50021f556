// Package evaldoc holds the documents of `ratelimit eval` (kind "eval"),
// `eval --simulate` ("simulate") and `ratelimit scripts` ("scripts"):
// their types, their checks and the verdict they make. It imports no Redis
// client, so report draws these documents without depending on one;
// package eval makes the calls that fill them in.
package evaldoc

import (
	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// Kind and Version identify the eval document; SimKind, SimVersion,
// CatalogKind and CatalogVersion the documents of --simulate and scripts.
const (
	Kind           = "eval"
	Version        = 2
	SimKind        = "simulate"
	SimVersion     = 2
	CatalogKind    = "scripts"
	CatalogVersion = 2
)

// Check is one verdict of a run, as every document kind spells it
// (doc.Check). An eval run makes two: "reply-shape" (the replies can be
// read as a limiter's decisions) and "ttl" (no key the run touched is left
// without a TTL); with --expect a third, "expect" (every decision is the
// model's at its call's time).
type Check = doc.Check

// The ids of eval's checks, and of the one check of a simulation
// (CheckModel: the Go model made the same decisions as the script).
const (
	CheckReplyShape = "reply-shape"
	CheckTTL        = "ttl"
	CheckExpect     = "expect" // with --expect: every decision the model's
	CheckModel      = "model-agrees"
)

// Result is the document `ratelimit eval` renders (kind "eval").
type Result struct {
	doc.Header
	// Algo is the algorithm, or "script" for --script.
	Algo string `json:"algo"`
	// Key is the limited key (KEYS[1] of a user script).
	Key string `json:"key"`
	// IdentityHashed is true when --hash-identity replaced the id in Key.
	IdentityHashed bool `json:"identity_hashed,omitempty"`
	// Params are the limiter's parameters (embedded scripts only).
	Params *ParamsDoc `json:"params,omitempty"`
	// Script describes what ran: the file, its digest and how it was called.
	Script ScriptDoc `json:"script"`
	// ReplyShape is "limiter" when every reply looked like {allowed 0/1,
	// remaining, ...} and the decision fields of the calls are filled in,
	// else "raw".
	ReplyShape string `json:"reply_shape"`
	// OtherShape lists, when some replies looked like a limiter's and
	// some did not (ReplyShape "raw"; the reply-shape check fails), the
	// calls whose reply did not; empty otherwise.
	OtherShape []int   `json:"other_shape_calls,omitempty"`
	Calls      []Call  `json:"calls"`
	Summary    Summary `json:"summary"`
	// Reply is --reply as given: what each reply element means; empty for
	// the default reading {allowed 0/1, remaining, retry ms, reset ms}.
	Reply string `json:"reply,omitempty"`
	// Expect is the verdict of --expect: each call's decision compared
	// with the model's at that call's time; nil without --expect.
	Expect *judge.Sequence `json:"expect,omitempty"`
	// NoTTL lists keys the script touched that have no TTL (--script only).
	NoTTL *TTLCheck `json:"no_ttl,omitempty"`
	// Checks are the run's verdicts ("reply-shape", "ttl"); the run passes
	// when all pass. Read them with CheckList, which also answers for a
	// Result built without them.
	Checks []Check `json:"checks"`
	// Verdict is "pass" when every check passed, else "fail".
	Verdict string `json:"verdict"`
}

// ParamsDoc is the JSON form of Params.
type ParamsDoc struct {
	limiter.ParamsDoc
	// PolicyQuota and PolicyWindowMs are the RateLimit-Policy q and w
	// (w in milliseconds: the header's seconds x 1000).
	PolicyQuota    int64 `json:"policy_quota"`
	PolicyWindowMs int64 `json:"policy_window_ms"`
}

// ScriptDoc says which script ran and how.
type ScriptDoc struct {
	Name     string   `json:"name"` // embedded script name or the user's file
	SHA1     string   `json:"sha1"`
	Via      string   `json:"via"`                // "evalsha" or "fcall"
	Function string   `json:"function,omitempty"` // FCALL name with --function
	Keys     []string `json:"keys"`
	Args     []string `json:"args"` // ARGV of the first call, as sent
}

// Call is one script call. The decision fields are present only when the
// reply has the shape of a limiter reply.
type Call struct {
	N         int    `json:"n"`
	Allowed   *bool  `json:"allowed,omitempty"`
	Remaining *int64 `json:"remaining,omitempty"`
	RetryMs   *int64 `json:"retry_ms,omitempty"`
	ResetMs   *int64 `json:"reset_ms,omitempty"`
	// TTLMs is PTTL of the key after the call: -1 no TTL, -2 no key.
	TTLMs int64 `json:"ttl_ms"`
	// LatencyMs is the round trip of the script call (ms, µs resolution).
	LatencyMs float64 `json:"latency_ms"`
	Reply     any     `json:"reply"`
}

// Summary counts the decisions.
type Summary struct {
	Allowed int `json:"allowed"`
	Refused int `json:"refused"`
	// RetryMs is the retry time of the last refused call (absent if none
	// was refused or the replies carry no retry time).
	RetryMs *int64 `json:"retry_ms,omitempty"`
}

// TTLCheck is the "keys never expire" report of a --script run.
type TTLCheck struct {
	Patterns  []string   `json:"patterns"`  // SCAN MATCH patterns searched besides KEYS
	Truncated bool       `json:"truncated"` // some pattern was not scanned to the end
	Keys      []NoTTLKey `json:"keys"`      // keys without a TTL, sorted by name
	// Allowed: --allow-no-ttl accepted keys without a TTL, so the check
	// passes whatever Keys holds; absent when false.
	Allowed bool `json:"allowed,omitempty"`
}

// Pass reports whether the check passed: no key without a TTL, or such
// keys accepted with --allow-no-ttl.
func (c *TTLCheck) Pass() bool { return c == nil || len(c.Keys) == 0 || c.Allowed }

// NoTTLKey is one key without a TTL.
type NoTTLKey struct {
	Key           string `json:"key"`
	Type          string `json:"type"`
	Found         string `json:"found"` // "keys" (passed in KEYS) or "scan"
	ExistedBefore bool   `json:"existed_before"`
}
