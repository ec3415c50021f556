package header

import (
	"net/http"
	"time"
)

// Inspection is what one response says about its rate limit headers.
type Inspection struct {
	HasPolicy bool
	PolicyErr error // nil when RateLimit-Policy is absent or valid
	Policies  []Policy

	HasLimit bool
	LimitErr error // nil when RateLimit is absent or valid (incl. r <= q)
	Limits   []Limit

	// For a 429 only:
	RetryAfterErr error  // missing or invalid Retry-After
	Storable      bool   // a cache may store this 429
	StorableWhy   string // the reason, from Storable429

	HasLegacy bool
	Legacy    Legacy
}

// Inspect checks the rate limit headers of one response with status code
// status. Absent fields are not errors; the caller counts presence. now
// anchors an HTTP-date Retry-After.
func Inspect(status int, h http.Header, now time.Time) Inspection {
	var in Inspection
	if vs := PolicyLines(h); len(vs) > 0 {
		in.HasPolicy = true
		in.Policies, in.PolicyErr = ParsePolicies(vs)
	}
	if vs := LimitLines(h); len(vs) > 0 {
		in.HasLimit = true
		in.Limits, in.LimitErr = ParseLimits(vs)
		if in.LimitErr == nil && in.PolicyErr == nil {
			in.LimitErr = CheckConsistent(in.Policies, in.Limits)
		}
	}
	if status == http.StatusTooManyRequests {
		_, in.RetryAfterErr = CheckRetryAfter(h, now)
		in.Storable, in.StorableWhy = Storable429(h)
	}
	in.Legacy, in.HasLegacy = ParseLegacy(h)
	return in
}
