package header

import (
	"net/http"
	"strconv"
	"strings"
)

// Legacy is the pre-standard trio many services still send: X-RateLimit-Limit,
// X-RateLimit-Remaining, X-RateLimit-Reset (GitHub, Twitter, ...), or the
// RateLimit-Limit / -Remaining / -Reset fields of drafts up to -06.
type Legacy struct {
	Prefix    string // "X-RateLimit-" or "RateLimit-"
	Limit     int64  // -1 when absent or unreadable
	Remaining int64  // -1 when absent or unreadable
	Reset     int64  // -1 when absent or unreadable; seconds, or a Unix time when ResetIsEpoch
	// ResetIsEpoch is true when Reset is a Unix timestamp (GitHub's style)
	// rather than delta seconds: values above 10^9 cannot be a delay anyone
	// means (31 years).
	ResetIsEpoch bool
}

// ParseLegacy looks for the legacy fields on h, X-RateLimit-* first. ok is
// false when none of the three is present. A value is read up to the first
// ',' or ';' (draft-03 style `10, 10;w=1` lists the limit first).
func ParseLegacy(h http.Header) (l Legacy, ok bool) {
	for _, f := range legacyFamilies {
		prefix := f[0]
		lim, okL := legacyInt(h, f[1])
		rem, okR := legacyInt(h, f[2])
		rst, okT := legacyInt(h, f[3])
		if !okL && !okR && !okT {
			continue
		}
		return Legacy{
			Prefix: prefix, Limit: lim, Remaining: rem, Reset: rst,
			ResetIsEpoch: rst > 1_000_000_000,
		}, true
	}
	return Legacy{Limit: -1, Remaining: -1, Reset: -1}, false
}

// legacyFamilies: display prefix, then the canonical keys of limit,
// remaining and reset.
var legacyFamilies = [...][4]string{
	{"X-RateLimit-", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
	{"RateLimit-", "Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset"},
}

// legacyInt reports the field's leading integer (-1 when unreadable) and
// whether the field is present at all.
func legacyInt(h http.Header, key string) (int64, bool) {
	vs := h[key]
	if len(vs) == 0 {
		return -1, false
	}
	v := vs[0]
	if i := strings.IndexAny(v, ",;"); i >= 0 {
		v = v[:i]
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return -1, true
	}
	return n, true
}
