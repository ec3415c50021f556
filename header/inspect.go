package header

import (
	"net/http"
	"strings"
	"time"
)

// Inspection is what one response says about its rate limit headers.
type Inspection struct {
	HasPolicy   bool
	PolicyErr   error // nil when RateLimit-Policy is absent or valid
	Policies    []Policy
	PolicyValue string // the field as received, its lines joined by ", "

	HasLimit bool
	LimitErr error // nil when RateLimit is absent or valid (incl. r <= q)
	Limits   []Limit

	// For a 429 only:
	HasRetryAfter bool   // a Retry-After field is present
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
	var i Inspector
	return i.Inspect(status, h, now)
}

// Inspector is Inspect for a stream of responses: it remembers the last
// RateLimit-Policy value and its parse, since a policy is meant to stay the
// same from response to response, so most responses skip that parse. The
// zero value is ready; an Inspector is not safe for concurrent use (a load
// generator keeps one per virtual user). The Policies it returns are shared
// between the responses that carried the same value: do not modify them.
type Inspector struct {
	cached   bool
	raw      string
	policies []Policy
	err      error
}

// Inspect checks one response, as the function Inspect does.
func (c *Inspector) Inspect(status int, h http.Header, now time.Time) Inspection {
	var in Inspection
	if vs := PolicyLines(h); len(vs) > 0 {
		in.HasPolicy = true
		raw := vs[0]
		if len(vs) > 1 {
			raw = strings.Join(vs, ", ")
		}
		if !c.cached || raw != c.raw {
			c.cached, c.raw = true, raw
			c.policies, c.err = ParsePolicies(vs)
		}
		in.PolicyValue, in.Policies, in.PolicyErr = raw, c.policies, c.err
	}
	if vs := LimitLines(h); len(vs) > 0 {
		in.HasLimit = true
		in.Limits, in.LimitErr = ParseLimits(vs)
		if in.LimitErr == nil && in.PolicyErr == nil {
			in.LimitErr = CheckConsistent(in.Policies, in.Limits)
		}
	}
	if status == http.StatusTooManyRequests {
		in.HasRetryAfter = len(h[NameRetryAfter]) > 0
		_, in.RetryAfterErr = CheckRetryAfter(h, now)
		in.Storable, in.StorableWhy = Storable429(h)
	}
	in.Legacy, in.HasLegacy = ParseLegacy(h)
	return in
}
