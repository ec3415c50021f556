package evaldoc

import (
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/judge"
)

// TestScopeUntested: eval's verdict says what it checked, and a run that
// allowed every call says it did not test limiting and names race.
func TestScopeUntested(t *testing.T) {
	yes, no := true, false
	calls := func(allowed ...*bool) []Call {
		out := make([]Call, len(allowed))
		for i, a := range allowed {
			out[i] = Call{N: i + 1, Allowed: a}
		}
		return out
	}
	all := Result{Algo: "script", Script: ScriptDoc{Name: "allow.lua"}, ReplyShape: "limiter", Calls: calls(&yes, &yes), Summary: Summary{Allowed: 2}}
	some := Result{Algo: "script", Script: ScriptDoc{Name: "sw.lua"}, ReplyShape: "limiter", Calls: calls(&yes, &no), Summary: Summary{Allowed: 1, Refused: 1}}
	if got := all.Scope(); !strings.Contains(got, "reply shape and TTL") || !strings.Contains(got, "did not test limiting") || !strings.Contains(got, "race --script allow.lua") {
		t.Errorf("Scope() of a run that allowed every call = %q", got)
	}
	if got := replyShapeCheck(all).Message; !strings.Contains(got, "did not test limiting") {
		t.Errorf("reply-shape message of a run that allowed every call = %q", got)
	}
	one := Result{Algo: "token-bucket", ReplyShape: "limiter", Calls: calls(&yes), Summary: Summary{Allowed: 1}}
	if got := one.Scope(); !strings.Contains(got, "the one call was allowed") || !strings.Contains(got, "'ratelimit race'") {
		t.Errorf("Scope() of one allowed call of a built-in limiter = %q", got)
	}
	if got := some.Scope(); !strings.HasPrefix(got, "reply shape and TTL checked; the decisions were not judged (--expect MODEL") {
		t.Errorf("Scope() of a run that refused, without --expect = %q", got)
	}
	if got := replyShapeCheck(some).Message; strings.Contains(got, "limiting") {
		t.Errorf("reply-shape message of a run that refused = %q", got)
	}
}

// TestExpectAndRemainingChecks: --expect adds a check that fails on the
// first disagreement and a scope that says the decisions were judged; a
// negative remaining fails the reply shape.
func TestExpectAndRemainingChecks(t *testing.T) {
	yes, no := true, false
	minus := int64(-1)
	r := Result{Algo: "script", ReplyShape: "limiter", Calls: []Call{{N: 1, Allowed: &yes}, {N: 2, Allowed: &no}}, Summary: Summary{Allowed: 1, Refused: 1},
		Expect: &judge.Sequence{Description: "token bucket 1 + 1/s", Calls: 2, Observed: 1, Pass: true}}
	checks := deriveChecks(r)
	if len(checks) != 3 || checks[2].ID != CheckExpect || !checks[2].Pass {
		t.Fatalf("checks with --expect = %+v", checks)
	}
	if got := r.Scope(); got != "reply shape, TTL and every decision against token bucket 1 + 1/s checked" {
		t.Errorf("Scope() with --expect = %q", got)
	}
	r.Expect = &judge.Sequence{Description: "token bucket 1 + 1/s", Calls: 2, First: &judge.Disagreement{N: 2, Before: 1, SinceMs: 3}}
	if c := deriveChecks(r)[2]; c.Pass || c.Message != "call 2 refused; the model admits it: 1 admitted in 3.0 ms by token bucket 1 + 1/s" {
		t.Errorf("expect check of a disagreement = %+v", c)
	}
	r.Calls[0].Remaining = &minus
	if c := replyShapeCheck(r); c.Pass || !strings.Contains(c.Message, "call 1 answered remaining -1") {
		t.Errorf("reply-shape of a negative remaining = %+v", c)
	}
	r.ReplyShape, r.Reply = "raw", "allowed,remaining"
	if c := deriveChecks(r); c[0].Pass || c[2].Pass {
		t.Errorf("checks of replies that do not read as --reply = %+v", c)
	}
}
