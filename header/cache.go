package header

import (
	"net/http"
	"strings"
)

// CacheControl holds the Cache-Control directives that decide whether a
// response may be stored (RFC 9111 section 5.2.2).
type CacheControl struct {
	NoStore   bool
	Private   bool
	Public    bool
	MaxAge    int64 // -1 when absent
	SMaxAge   int64 // -1 when absent
	NoCache   bool
	Malformed bool // a directive could not be read
}

// ParseCacheControl reads the Cache-Control field lines. Directive names are
// case-insensitive; arguments may be tokens or quoted strings; unknown
// directives are ignored, as RFC 9111 requires.
func ParseCacheControl(lines []string) CacheControl {
	cc := CacheControl{MaxAge: -1, SMaxAge: -1}
	for _, line := range lines {
		for d := range strings.SplitSeq(line, ",") {
			d = strings.TrimSpace(d)
			if d == "" {
				continue
			}
			name, arg, hasArg := strings.Cut(d, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			arg = strings.Trim(strings.TrimSpace(arg), `"`)
			switch name {
			case "no-store":
				cc.NoStore = true
			case "private":
				cc.Private = true
			case "public":
				cc.Public = true
			case "no-cache":
				cc.NoCache = true
			case "max-age", "s-maxage":
				n, ok := deltaSeconds(arg)
				if !hasArg || !ok {
					cc.Malformed = true
					continue
				}
				if name == "max-age" {
					cc.MaxAge = n
				} else {
					cc.SMaxAge = n
				}
			}
		}
	}
	return cc
}

func deltaSeconds(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		if n < 1<<31 { // RFC 9111 1.2.2: saturate at 2^31
			n = n*10 + int64(s[i]-'0')
		}
	}
	return min(n, 1<<31), true
}

// Storable429 reports whether a cache may store a 429 response with header
// h, and why: only with explicit freshness (max-age, s-maxage, Expires) or
// Cache-Control: public and no no-store (Cache429's CacheBad). A 429 is not
// heuristically cacheable (RFC 9111 4.2.2), so one without explicit
// freshness is not storable even without no-store; that gets a note, not a
// failure.
func Storable429(h http.Header) (bool, string) {
	level, why := Cache429(h)
	return level == CacheBad, why
}
