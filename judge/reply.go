package judge

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// This file reads a limiter script's reply as a decision: the one
// definition of "allowed" for a script, as Allowed is for an HTTP status.
// eval and race read the user's scripts through it (--reply).

// The meanings of a reply element (--reply).
const (
	FieldAllowed   = "allowed"
	FieldRemaining = "remaining"
	FieldRetry     = "retry"
	FieldReset     = "reset"
	FieldIgnore    = "ignore"
)

// ReplyField is the meaning of one reply element; Scale is its unit in
// milliseconds (1 for ms, 1000 for s), for retry and reset only.
type ReplyField struct {
	Name  string
	Scale float64
}

// String spells the field as --reply does: "retry:s", "allowed".
func (f ReplyField) String() string {
	switch {
	case f.Scale == 1000:
		return f.Name + ":s"
	case f.Scale == 1 && (f.Name == FieldRetry || f.Name == FieldReset):
		return f.Name + ":ms"
	}
	return f.Name
}

// Reply says what each element of a script's reply means. The zero Reply
// is the default reading, the embedded scripts' shape: {allowed 0/1,
// remaining, retry ms, reset ms}, of which the first two must be integers
// and the others are read when they are integers too.
type Reply struct {
	Fields []ReplyField // empty: the default reading
}

// ReplySyntax is the syntax of --reply, for messages and help.
const ReplySyntax = "allowed, remaining, retry, reset or ignore, in the reply's order, retry and reset with a unit :ms (default) or :s, e.g. allowed,remaining,retry:s,reset:s"

// ParseReply reads --reply: the meaning of each reply element in order,
// comma-separated, from allowed, remaining, retry, reset and ignore;
// retry and reset take a unit, ":ms" (the default) or ":s". allowed is
// required; each meaning but ignore at most once. Errors are exit 2.
func ParseReply(s string) (Reply, error) {
	if strings.TrimSpace(s) == "" {
		return Reply{}, exitcode.Usagef("--reply is empty; give %s", ReplySyntax)
	}
	var r Reply
	seen := map[string]bool{}
	for word := range strings.SplitSeq(s, ",") {
		name, unit, hasUnit := strings.Cut(strings.ToLower(strings.TrimSpace(word)), ":")
		f := ReplyField{Name: name, Scale: 1}
		switch name {
		case FieldAllowed, FieldRemaining, FieldIgnore:
			if hasUnit {
				return Reply{}, exitcode.Usagef("--reply %q: %s takes no unit; only retry and reset do (:ms or :s)", s, name)
			}
		case FieldRetry, FieldReset:
			switch unit {
			case "", "ms":
				if hasUnit && unit == "" {
					return Reply{}, exitcode.Usagef("--reply %q: %s: has no unit; use %s:ms or %s:s", s, name, name, name)
				}
			case "s":
				f.Scale = 1000
			default:
				return Reply{}, exitcode.Usagef("--reply %q: unit %q of %s; use ms or s", s, unit, name)
			}
		case "":
			return Reply{}, exitcode.Usagef("--reply %q has an empty element; give %s", s, ReplySyntax)
		default:
			return Reply{}, exitcode.Usagef("--reply %q: unknown meaning %q; use %s", s, name, ReplySyntax)
		}
		if name != FieldIgnore && seen[name] {
			return Reply{}, exitcode.Usagef("--reply %q names %s twice", s, name)
		}
		seen[name] = true
		r.Fields = append(r.Fields, f)
	}
	if !seen[FieldAllowed] {
		return Reply{}, exitcode.Usagef("--reply %q has no allowed element: the decision must be somewhere in the reply", s)
	}
	return r, nil
}

// String spells the reading as --reply takes it ("" for the default).
func (r Reply) String() string {
	words := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		words[i] = f.String()
	}
	return strings.Join(words, ",")
}

// Decision is a reply read as a limiter's decision. The optional fields
// are nil when the reply has no element for them; retry and reset are in
// ms, and a negative one (a script's "never" or "not applicable", whatever
// its unit) is -1.
type Decision struct {
	Allowed   bool
	Remaining *int64
	RetryMs   *int64
	ResetMs   *int64
}

// Decide reads a script's reply (as go-redis returns it: int64, string,
// nil, []any) as a decision. The default reading takes {allowed 0/1,
// remaining, ...} with integer elements, the third and fourth as retry
// and reset ms when they are integers; a reply that is not an array is
// read as allowed alone (1 or true, 0, false or nil). With Fields, element
// i means Fields[i]; numbers may be integers or decimal strings ("0.188"),
// allowed may be 0/1, true/false, nil or a count (> 0: allowed, as
// go-redis/redis_rate answers the cost it admitted); elements past the
// fields are ignored. ok is false when the reply does not read so; why
// says what is wrong.
func (r Reply) Decide(reply any) (d Decision, why string, ok bool) {
	if len(r.Fields) == 0 {
		return decideDefault(reply)
	}
	arr, isArr := reply.([]any)
	if !isArr {
		if len(r.Fields) == 1 {
			arr = []any{reply}
		} else {
			return d, fmt.Sprintf("the reply is %s, not an array of %d elements (--reply %s)", shortValue(reply), len(r.Fields), r), false
		}
	}
	if len(arr) < len(r.Fields) {
		return d, fmt.Sprintf("the reply has %d elements, --reply %s names %d", len(arr), r, len(r.Fields)), false
	}
	for i, f := range r.Fields {
		v := arr[i]
		switch f.Name {
		case FieldIgnore:
			continue
		case FieldAllowed:
			a, ok := allowedValue(v, true)
			if !ok {
				return d, fmt.Sprintf("element %d (allowed) is %s: want 1, 0, true, false, nil or a count", i+1, shortValue(v)), false
			}
			d.Allowed = a
			continue
		}
		x, ok := number(v)
		if !ok {
			return d, fmt.Sprintf("element %d (%s) is %s, not a number", i+1, f.Name, shortValue(v)), false
		}
		switch f.Name {
		case FieldRemaining:
			n := int64(math.Floor(x))
			d.Remaining = &n
		case FieldRetry, FieldReset:
			ms := int64(-1)
			if x >= 0 {
				ms = int64(math.Ceil(x*f.Scale - 1e-9))
			}
			if f.Name == FieldRetry {
				d.RetryMs = &ms
			} else {
				d.ResetMs = &ms
			}
		}
	}
	return d, "", true
}

// decideDefault is the reading without --reply.
func decideDefault(reply any) (d Decision, why string, ok bool) {
	arr, isArr := reply.([]any)
	if !isArr {
		a, ok := allowedValue(reply, false)
		if !ok {
			return d, fmt.Sprintf("the reply %s is not a decision: want 1 (allowed) or 0 (refused)", shortValue(reply)), false
		}
		d.Allowed = a
		return d, "", true
	}
	if len(arr) == 0 {
		return d, "the reply is an empty array; want {allowed (1 or 0), ...}", false
	}
	a, ok := allowedValue(arr[0], false)
	if !ok {
		return d, fmt.Sprintf("the first element is %s: want 1 (allowed) or 0 (refused), or describe the reply with --reply", shortValue(arr[0])), false
	}
	d.Allowed = a
	var ints []int64
	for _, v := range arr[1:] {
		x, isInt := v.(int64)
		if !isInt {
			break
		}
		ints = append(ints, x)
	}
	if len(ints) >= 1 {
		d.Remaining = &ints[0]
	}
	if len(ints) >= 2 {
		retry := max(ints[1], -1)
		d.RetryMs = &retry
	}
	if len(ints) >= 3 {
		reset := max(ints[2], -1)
		d.ResetMs = &reset
	}
	return d, "", true
}

// allowedValue reads a decision: 1 or true is allowed; 0, false and nil
// are refused; with counts, any integer above 0 is allowed too.
func allowedValue(v any, counts bool) (bool, bool) {
	switch x := v.(type) {
	case nil:
		return false, true
	case bool:
		return x, true
	case int64:
		if x == 0 || x == 1 || counts && x > 0 {
			return x > 0, true
		}
	case string:
		if x == "0" || x == "1" {
			return x == "1", true
		}
		if counts {
			if n, err := strconv.ParseInt(x, 10, 64); err == nil && n >= 0 {
				return n > 0, true
			}
		}
	}
	return false, false
}

// number reads an integer or a decimal string as a finite number.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64: // a RESP3 double
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// shortValue shows a reply value in a message, cut at 60 characters.
func shortValue(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		s = "nil"
	case string:
		s = strconv.Quote(x)
	default:
		s = fmt.Sprint(x)
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
