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
	checks := []Check{replyShapeCheck(r), ttlVerdict(r)}
	if r.Expect != nil {
		checks = append(checks, expectCheck(r))
	}
	return checks
}

// shape is how the replies are read, for messages.
func (r Result) shape() string {
	if r.Reply != "" {
		return "as --reply " + r.Reply
	}
	return "{allowed 0/1, remaining, ...}"
}

func replyShapeCheck(r Result) Check {
	c := Check{ID: CheckReplyShape, Pass: true}
	switch {
	case r.ReplyShape == "limiter":
		for _, call := range r.Calls {
			if call.Remaining != nil && *call.Remaining < 0 {
				c.Pass = false
				c.Message = fmt.Sprintf("call %d answered remaining %d: a limiter never has less than nothing left (did it admit a call it had no room for?)", call.N, *call.Remaining)
				return c
			}
		}
		c.Message = "every reply is a limiter decision " + r.shape()
		if r.allAllowed() {
			c.Message += "; " + r.untested()
		}
	case len(r.OtherShape) > 0:
		c.Pass = false
		calls := "calls "
		if len(r.OtherShape) == 1 {
			calls = "call "
		}
		c.Message = "some replies are a limiter decision " + r.shape() + " and some are not (" + calls + joinCalls(r.OtherShape) + "): a caller cannot read every answer the same way"
	case r.Reply != "":
		c.Pass = false
		c.Message = "the replies do not read as --reply " + r.Reply + "; shown as they are"
	default:
		c.Message = "the replies are not a limiter decision {allowed 0/1, remaining, ...}; shown as they are"
	}
	return c
}

// expectCheck is the verdict of --expect: every call decided as the model
// decides it at that call's time, or the first call that is not.
func expectCheck(r Result) Check {
	x := r.Expect
	c := Check{ID: CheckExpect, Pass: x.Pass && r.ReplyShape == "limiter"}
	switch {
	case r.ReplyShape != "limiter":
		c.Message = fmt.Sprintf("no decision to compare with %s: the replies do not read as a limiter's; describe them with --reply", x.Description)
	default:
		c.Message = x.Message()
	}
	return c
}

// Scope says what the verdict covers, for the verdict line ("verdict:
// PASS  reply shape and TTL checked; ..."): eval checks that the replies
// read as decisions and that no key is left without a TTL and, with
// --expect, that every decision is the model's; without it, it says the
// decisions were not judged and how to judge them. When every call was
// allowed it says that limiting was not tested and names the command that
// tests it.
func (r Result) Scope() string {
	s := "reply shape and TTL checked"
	switch {
	case r.Expect != nil:
		s = "reply shape, TTL and every decision against " + r.Expect.Description + " checked"
	case r.ReplyShape == "limiter":
		s += "; the decisions were not judged (--expect MODEL compares each with the model's, e.g. --expect token-bucket:burst=10,rate=5/s)"
	}
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
