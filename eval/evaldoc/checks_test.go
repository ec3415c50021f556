package evaldoc

import (
	"strings"
	"testing"
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
	if got := some.Scope(); got != "reply shape and TTL checked" {
		t.Errorf("Scope() of a run that refused = %q", got)
	}
	if got := replyShapeCheck(some).Message; strings.Contains(got, "limiting") {
		t.Errorf("reply-shape message of a run that refused = %q", got)
	}
}
