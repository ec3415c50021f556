package header

import "strings"

// parseLimitLine reads the one RateLimit field line nearly every limiter
// of the current draft sends, `"name";r=N` with an optional `;t=N`, without
// allocating (the name is a substring of v): a load generator reads one
// on every response, and the Structured Fields parser allocates a dozen
// objects for it. ok is false for anything else (several members, other
// parameters, spaces, escapes, a sign, a duplicate parameter, draft-07's
// Dictionary, ...): ParseLimits' Structured Fields parser reads those and
// stays the one that validates. On every line this accepts, the two agree
// (FuzzParseLimitLine).
func parseLimitLine(v string) (l Limit, ok bool) {
	// the shape ParseLimits tries first as draft-07's Dictionary
	if len(v) < 6 || v[0] != '"' || strings.Contains(v, "remaining=") {
		return Limit{}, false
	}
	end := 1
	for ; end < len(v); end++ {
		c := v[end]
		if c == '"' {
			break
		}
		if c < 0x20 || c > 0x7e || c == '\\' {
			return Limit{}, false
		}
	}
	if end == len(v) {
		return Limit{}, false // no closing quote
	}
	l = Limit{Name: v[1:end], Reset: NoReset}
	hasR, hasT := false, false
	for i := end + 1; i < len(v); {
		// ";" key "=" 1*15DIGIT
		if v[i] != ';' || i+3 > len(v) || v[i+2] != '=' {
			return Limit{}, false
		}
		key := v[i+1]
		i += 3
		start := i
		var n int64
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			n = n*10 + int64(v[i]-'0')
			i++
		}
		if i == start || i-start > 15 {
			return Limit{}, false
		}
		switch {
		case key == 'r' && !hasR:
			hasR, l.Remaining = true, n
		case key == 't' && !hasT:
			hasT, l.Reset = true, n
		default:
			return Limit{}, false
		}
	}
	if !hasR {
		return Limit{}, false
	}
	return l, true
}
