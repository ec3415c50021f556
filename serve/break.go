package serve

import (
	"net/http"
	"slices"
	"strings"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// A Break is a deliberate defect of the reference server (serve --break),
// one of the ways real limiters go wrong, so a user can watch probe and
// load catch it and tests can pin that they do. The zero value, no break,
// is the correct server.
type Break string

// The defects serve can be broken with, and the check each one fails.
const (
	// BreakRetryAfterZero answers 429 with "Retry-After: 0": clients retry
	// at once and hammer the limiter (retry-after check).
	BreakRetryAfterZero Break = "retry-after-zero"
	// BreakNoRetryAfter answers 429 without Retry-After (retry-after check).
	BreakNoRetryAfter Break = "no-retry-after"
	// BreakCacheable429 answers 429 with "Cache-Control: public,
	// max-age=60" and an ETag: a shared cache may serve the refusal to
	// every client for a minute (cacheable-429 check).
	BreakCacheable429 Break = "cacheable-429"
	// BreakConstantReset sends the policy's window as RateLimit's t on
	// every response, whatever the real reset (reset check).
	BreakConstantReset Break = "constant-reset"
	// BreakStatus503 refuses with 503 instead of 429, headers and all:
	// clients and proxies take 503 for an outage and retry elsewhere or at
	// once (limited-status check).
	BreakStatus503 Break = "status-503"
	// BreakTrustXFF keys clients without an identity by the left-most
	// X-Forwarded-For entry from any peer: a client that rotates the header
	// gets fresh quota (spoofing check).
	BreakTrustXFF Break = "trust-xff"
	// BreakOverAdmit runs a limiter twice as generous as the policy it
	// advertises (capacity, limit or burst and rate doubled): the headers
	// claim a policy the server does not enforce (policy check; load
	// --expect auto).
	BreakOverAdmit Break = "over-admit"
)

// Breaks lists the defects in a stable order.
func Breaks() []Break {
	return []Break{BreakRetryAfterZero, BreakNoRetryAfter, BreakCacheable429, BreakConstantReset, BreakStatus503, BreakTrustXFF, BreakOverAdmit}
}

// ParseBreak reads a --break value; "" and "none" are no break.
func ParseBreak(s string) (Break, error) {
	b := Break(strings.ToLower(strings.TrimSpace(s)))
	if b == "" || b == "none" {
		return "", nil
	}
	if !slices.Contains(Breaks(), b) {
		names := make([]string, 0, len(Breaks()))
		for _, x := range Breaks() {
			names = append(names, string(x))
		}
		return "", exitcode.Usagef("--break %q: unknown defect; use one of %s", s, strings.Join(names, ", "))
	}
	return b, nil
}

// enforced is the limiter the server runs for the advertised params p:
// p itself, or, broken with over-admit, p twice as generous.
func (b Break) enforced(p limiter.Params) limiter.Params {
	if b != BreakOverAdmit {
		return p
	}
	p.Capacity *= 2
	p.Limit *= 2
	p.Burst *= 2
	p.Rate.Count *= 2
	return p
}

// xffClient is the left-most X-Forwarded-For entry of r, the address a
// client claims to have, as a server broken with trust-xff reads it.
func xffClient(r *http.Request) (string, bool) {
	v := r.Header.Get("X-Forwarded-For")
	first, _, _ := strings.Cut(v, ",")
	a, ok := parseHostAddr(first)
	if !ok {
		return "", false
	}
	return a.String(), true
}
