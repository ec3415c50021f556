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

	// Draft is the draft whose syntax the RateLimit fields are in:
	// DraftCurrent, Draft07, Draft06 (its RateLimit-Limit, -Remaining and
	// -Reset, read as its RateLimit), DraftPre08Policy (only a policy in
	// the older syntax), or "" when there are none.
	Draft string

	// For a refusal only (Inspect's refused):
	HasRetryAfter  bool   // a Retry-After field is present
	RetryAfterErr  error  // missing or invalid Retry-After
	RetryAfterZero bool   // a valid Retry-After of 0 seconds
	Storable       bool   // a cache may store this refusal
	StorableWhy    string // the reason, from Storable429

	// HasLegacy: X-RateLimit-* fields (draft-06's RateLimit-* are Limits).
	HasLegacy bool
	Legacy    Legacy
}

// Inspect checks the rate limit headers of one response with status code
// status; a 429 is a refusal. Absent fields are not errors; the caller
// counts presence. now anchors an HTTP-date Retry-After.
func Inspect(status int, h http.Header, now time.Time) Inspection {
	var i Inspector
	return i.Inspect(status, h, now, status == http.StatusTooManyRequests)
}

// Inspector is Inspect for a stream of responses: it remembers the last
// RateLimit-Policy value and its parse, since a policy is meant to stay the
// same from response to response, so most responses skip that parse. The
// zero value is ready; an Inspector is not safe for concurrent use (a load
// generator keeps one per virtual user). The Policies it returns are shared
// between the responses that carried the same value, and the Limits of the
// common one-line RateLimit field are valid until the next Inspect: do not
// modify or keep them.
type Inspector struct {
	cached   bool
	raw      string
	policies []Policy
	err      error
	limits   []Limit // reused by every response with the common RateLimit line
}

// Inspect checks one response, as the function Inspect does; refused says
// whether the status is the limiter's refusal (429, or a status the user
// declared), whose Retry-After and cacheability are checked.
func (c *Inspector) Inspect(status int, h http.Header, now time.Time, refused bool) Inspection {
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
		if l, ok := parseLimitLine(vs[0]); ok && len(vs) == 1 {
			// the common line, into the Inspector's own slice: no allocation
			c.limits = append(c.limits[:0], l)
			in.Limits = c.limits
		} else {
			in.Limits, in.LimitErr = ParseLimits(vs)
		}
		if in.LimitErr == nil && in.PolicyErr == nil {
			in.LimitErr = CheckConsistent(in.Policies, in.Limits)
		}
	}
	if refused {
		in.HasRetryAfter = len(h[NameRetryAfter]) > 0
		var ra RetryAfter
		ra, in.RetryAfterErr = CheckRetryAfter(h, now)
		in.RetryAfterZero = in.RetryAfterErr == nil && ra.Zero()
		in.Storable, in.StorableWhy = Storable429(h)
	}
	in.Legacy, in.HasLegacy = ParseLegacy(h)
	if in.HasLegacy && in.Legacy.Draft == Draft06 {
		in.HasLegacy = false
		if !in.HasLimit {
			// draft-06's RateLimit-Limit, -Remaining and -Reset are
			// that draft's RateLimit
			in.HasLimit = true
			l := in.Legacy
			in.Limits = []Limit{{Quota: max(l.Limit, 0), Remaining: l.Remaining, Reset: l.Reset, Draft: Draft06}}
			switch {
			case l.Remaining < 0:
				in.LimitErr = invalidf("RateLimit-Remaining (draft-06 syntax) is missing or not a non-negative integer")
			case l.Limit > 0 && l.Remaining > l.Limit:
				in.LimitErr = invalidf("RateLimit-Remaining %d exceeds RateLimit-Limit %d (draft-06 syntax)", l.Remaining, l.Limit)
			case l.ResetIsDate:
				in.LimitErr = invalidf("RateLimit-Reset (draft-06 syntax) is an HTTP-date; the draft says delta seconds")
			case l.ResetIsEpoch:
				in.LimitErr = invalidf("RateLimit-Reset %d (draft-06 syntax) is a Unix time; the draft says delta seconds", l.Reset)
			}
		}
	}
	in.Draft = draftOf(in)
	return in
}

// draftOf names the draft of the RateLimit fields in.
func draftOf(in Inspection) string {
	for _, l := range in.Limits {
		if l.Draft != "" {
			return l.Draft
		}
	}
	if in.HasLimit {
		return DraftCurrent
	}
	if in.HasPolicy {
		for _, p := range in.Policies {
			if p.Draft != "" {
				return p.Draft
			}
		}
		if in.PolicyErr == nil {
			return DraftCurrent
		}
	}
	return ""
}

// Policy is the first policy of a response, whatever draft it is in: the
// one RateLimit-Policy item, or the quota of a draft-07 RateLimit's limit=
// or of draft-06's RateLimit-Limit with no window known; ok is false when
// none has a quota.
func (in Inspection) Policy() (Policy, bool) {
	if in.PolicyErr == nil && len(in.Policies) > 0 {
		return in.Policies[0], true
	}
	if in.LimitErr == nil {
		for _, l := range in.Limits {
			if l.Quota > 0 {
				return Policy{Quota: l.Quota, Draft: l.Draft}, true
			}
		}
	}
	return Policy{}, false
}
