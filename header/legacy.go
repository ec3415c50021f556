package header

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Legacy is the pre-standard trio many services still send: X-RateLimit-Limit,
// X-RateLimit-Remaining, X-RateLimit-Reset (GitHub, express-rate-limit's
// legacyHeaders, slowapi, Flask-Limiter, httprate, ...), or the
// RateLimit-Limit / -Remaining / -Reset fields of drafts up to 06.
type Legacy struct {
	Prefix    string // "X-RateLimit-" or "RateLimit-"
	Limit     int64  // -1 when absent or unreadable
	Remaining int64  // -1 when absent or unreadable
	// Reset is the reset in whole seconds (a fraction dropped): delta
	// seconds, or a Unix time when ResetIsEpoch; -1 when absent or
	// unreadable.
	Reset int64
	// ResetIsEpoch is true when Reset is a Unix timestamp (GitHub's and
	// express-rate-limit's legacy style, slowapi's decimal one) rather
	// than delta seconds: values above 10^9 cannot be a delay anyone
	// means (31 years).
	ResetIsEpoch bool
	// ResetExact is the reset as sent, fraction included (slowapi sends
	// 1796326311.1529); -1 when absent. An HTTP-date is its Unix time.
	ResetExact float64
	// ResetIsDate is true when the reset was an HTTP-date (`Fri, 04 Dec
	// 2026 19:24:59 GMT`, or with UTC): read as the Unix time it names
	// (ResetIsEpoch is true too).
	ResetIsDate bool
	// Draft is Draft06 for the RateLimit-* family, "" for X-RateLimit-*.
	Draft string
}

// Until is how long from now the reset is, and how much the value's
// rounding can hide: a whole-second Unix time read against a clock is off
// by up to 2 s, a decimal one by the clocks' difference only (taken as
// 1 s), delta seconds by 1 s. ok is false without a readable reset.
func (l Legacy) Until(now time.Time) (d, rounding time.Duration, ok bool) {
	if l.ResetExact < 0 {
		return 0, 0, false
	}
	if !l.ResetIsEpoch {
		return time.Duration(l.ResetExact * float64(time.Second)), time.Second, true
	}
	// to the µs: a double holds a Unix time's fraction to about 1e-7 s
	sec := math.Floor(l.ResetExact)
	at := time.Unix(int64(sec), int64(math.Round((l.ResetExact-sec)*1e6))*1e3)
	rounding = 2 * time.Second
	if l.ResetExact != math.Trunc(l.ResetExact) {
		rounding = time.Second
	}
	return max(at.Sub(now), 0), rounding, true
}

// ParseLegacy looks for the legacy fields on h, X-RateLimit-* first. ok is
// false when none of the three is present. A value is read up to the first
// ',' or ';' (draft-03 style `10, 10;w=1` lists the limit first); a reset
// may be a decimal.
func ParseLegacy(h http.Header) (l Legacy, ok bool) {
	for _, f := range legacyFamilies {
		prefix := f[0]
		lim, okL := legacyInt(h, f[1])
		rem, okR := legacyInt(h, f[2])
		rst, okT := legacyNumber(h, f[3])
		date := false
		if at, isDate := legacyDate(h, f[3]); isDate {
			rst, date = float64(at.Unix()), true
		}
		if !okL && !okR && !okT {
			continue
		}
		l := Legacy{Prefix: prefix, Limit: lim, Remaining: rem, Reset: -1, ResetExact: rst, ResetIsDate: date}
		if rst >= 0 {
			l.Reset = int64(math.Floor(rst))
			l.ResetIsEpoch = rst > 1_000_000_000 || date
		}
		if prefix == "RateLimit-" {
			l.Draft = Draft06
		}
		return l, true
	}
	return Legacy{Limit: -1, Remaining: -1, Reset: -1, ResetExact: -1}, false
}

// legacyFamilies: display prefix, then the canonical keys of limit,
// remaining and reset.
var legacyFamilies = [...][4]string{
	{"X-RateLimit-", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
	{"RateLimit-", "Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset"},
}

// legacyValue is the field's value up to the first ',' or ';', and
// whether the field is present at all.
func legacyValue(h http.Header, key string) (string, bool) {
	vs := h[key]
	if len(vs) == 0 {
		return "", false
	}
	v := vs[0]
	if i := strings.IndexAny(v, ",;"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v), true
}

// legacyInt reports the field's leading integer (-1 when unreadable) and
// whether the field is present at all.
func legacyInt(h http.Header, key string) (int64, bool) {
	v, ok := legacyValue(h, key)
	if !ok {
		return -1, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return -1, true
	}
	return n, true
}

// legacyDate reads the field as an HTTP-date (RFC 9110's IMF-fixdate,
// or its obsolete forms), its zone GMT or, as some limiters write it,
// UTC: ok is false for anything else, or a date before 1970 or after 9999.
func legacyDate(h http.Header, key string) (time.Time, bool) {
	vs := h[key]
	if len(vs) == 0 {
		return time.Time{}, false
	}
	v := strings.TrimSpace(vs[0])
	if len(v) < 24 || v[0] < 'A' || v[0] > 'Z' {
		return time.Time{}, false
	}
	if u, ok := strings.CutSuffix(v, " UTC"); ok {
		v = u + " GMT"
	}
	t, err := http.ParseTime(v)
	if err != nil || t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, false
	}
	return t, true
}

// legacyNumber reports the field's leading number, a decimal allowed
// (-1 when unreadable, negative, not finite or beyond year 9999), and
// whether the field is present at all.
func legacyNumber(h http.Header, key string) (float64, bool) {
	v, ok := legacyValue(h, key)
	if !ok {
		return -1, false
	}
	if v == "" || v[0] < '0' || v[0] > '9' {
		return -1, true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 253402300799 {
		return -1, true
	}
	return f, true
}
