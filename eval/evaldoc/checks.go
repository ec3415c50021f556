package evaldoc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// CheckList returns the run's checks: Checks as Run computed them, or,
// for a Result without them (a version 1 document written before checks
// existed), the same checks derived from its reply shape, calls and no-TTL
// report.
func (r Result) CheckList() []Check {
	if r.Checks != nil {
		return r.Checks
	}
	return deriveChecks(r)
}

// SetChecks computes the checks and the verdict from the calls.
func (r *Result) SetChecks() {
	r.Checks = deriveChecks(*r)
	r.Verdict = doc.Verdict(r.Checks)
}

// Pass reports whether every check passed.
func (r Result) Pass() bool { return doc.Pass(r.CheckList()) }

// Failures lists the messages of the failed checks.
func (r Result) Failures() []string { return doc.Failures(r.CheckList()) }

func deriveChecks(r Result) []Check {
	return []Check{replyShapeCheck(r), ttlVerdict(r)}
}

func replyShapeCheck(r Result) Check {
	c := Check{ID: CheckReplyShape, Pass: true}
	switch {
	case r.ReplyShape == "limiter":
		c.Message = "every reply is a limiter decision {allowed 0/1, remaining, ...}"
		if r.allAllowed() {
			c.Message += "; " + r.untested()
		}
	case len(r.OtherShape) > 0:
		c.Pass = false
		calls := "calls "
		if len(r.OtherShape) == 1 {
			calls = "call "
		}
		c.Message = "some replies are a limiter decision {allowed 0/1, remaining, ...} and some are not (" + calls + joinCalls(r.OtherShape) + "): a caller cannot read every answer the same way"
	default:
		c.Message = "the replies are not a limiter decision {allowed 0/1, remaining, ...}; shown as they are"
	}
	return c
}

// Scope says what the verdict covers, for the verdict line ("verdict:
// PASS  reply shape and TTL checked; ..."): eval checks that the replies
// read as decisions and that no key is left without a TTL, not that the
// script limits. When every call was allowed it says that limiting was not
// tested and names the command that tests it.
func (r Result) Scope() string {
	s := "reply shape and TTL checked"
	if r.allAllowed() {
		s += "; " + r.untested()
	}
	return s
}

// allAllowed reports whether the replies were decisions and every call
// was allowed: nothing in the run showed the script refusing.
func (r Result) allAllowed() bool {
	return r.ReplyShape == "limiter" && len(r.Calls) > 0 && r.Summary.Refused == 0 && r.Summary.Allowed == len(r.Calls)
}

// untested is the note of a run that allowed every call.
func (r Result) untested() string {
	race := "ratelimit race"
	if r.Algo == "script" {
		race = "ratelimit race --script " + r.Script.Name
	}
	calls := fmt.Sprintf("all %d calls were allowed", len(r.Calls))
	if len(r.Calls) == 1 {
		calls = "the one call was allowed"
	}
	return fmt.Sprintf("%s, so eval did not test limiting: '%s' does (concurrent calls against the limit)", calls, race)
}

func ttlVerdict(r Result) Check {
	c := Check{ID: CheckTTL, Pass: true}
	if t := r.NoTTL; t != nil {
		n := len(t.Keys)
		keys := make([]string, 0, min(n, 3))
		for _, k := range t.Keys[:min(n, 3)] {
			keys = append(keys, strconv.Quote(k.Key))
		}
		list := strings.Join(keys, ", ")
		if n > 3 {
			list += fmt.Sprintf(" and %d more", n-3)
		}
		switch {
		case n == 0:
			c.Message = "no key without a TTL"
		case t.Allowed:
			c.Message = fmt.Sprintf("%s without a TTL (%s), accepted with --allow-no-ttl", countKeys(n), list)
		default:
			c.Pass = false
			c.Message = fmt.Sprintf("%s without a TTL: %s (%s); set a TTL on every write (PEXPIRE in the same script), or pass --allow-no-ttl", countKeys(n), neverExpire(n), list)
		}
		return c
	}
	for _, call := range r.Calls {
		if call.TTLMs == -1 {
			c.Pass = false
			c.Message = fmt.Sprintf("call %d left %s without a TTL: it never expires", call.N, strconv.Quote(r.Key))
			return c
		}
	}
	c.Message = "the key has a TTL after every call"
	return c
}

func neverExpire(n int) string {
	if n == 1 {
		return "it never expires"
	}
	return "they never expire"
}

func countKeys(n int) string {
	if n == 1 {
		return "1 key"
	}
	return strconv.Itoa(n) + " keys"
}

func joinCalls(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// MarshalJSON writes the document with its checks (derived when the
// Result has none) and the verdict they make, so they cannot disagree.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	p.Checks = r.CheckList()
	p.Verdict = doc.Verdict(p.Checks)
	return json.Marshal(p)
}
