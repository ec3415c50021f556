package report

import (
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/probe"
)

// fixtureProbe is a probe of serve --break cacheable-429 with the spoofing
// check skipped and the headers check a warning: one of each status.
func fixtureProbe() probe.Result {
	check := func(id, status, msg string, evidence []string, fix string) probe.Check {
		return probe.Check{Check: doc.Check{ID: id, Pass: status == probe.Pass || status == probe.Skip, Message: msg,
			Warning: status == probe.Warn, Skipped: status == probe.Skip}, Status: status, Evidence: evidence, Fix: fix}
	}
	return probe.Result{
		Header: doc.Header{Kind: probe.Kind, Version: probe.Version, StartedAt: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC),
			Tool: &doc.Tool{Name: "ratelimit", Version: "v0.9.0"}, Command: []string{"ratelimit", "probe", "http://127.0.0.1:8011/hello", "--skip", "ip-spoofing"}},
		Target: "http://127.0.0.1:8011/hello", Method: "GET", ElapsedMs: 2174.5, Peer: "127.0.0.1:52754",
		Policy:   probe.Policy{Quota: 10, WindowMs: 2000, Source: "RateLimit-Policy"},
		Requests: 66, Budget: 170,
		Checks: []probe.Check{
			check(probe.CheckLimitedStatus, probe.Pass, "limited with 429 after 10 admitted requests",
				[]string{`10 admitted, then 429; Retry-After: 1; RateLimit: "default";r=0;t=2`}, ""),
			check(probe.CheckRetryAfter, probe.Pass, "all 18 refusals carry a valid Retry-After (e.g. 1)", nil, ""),
			check(probe.CheckRetryAfterHonest, probe.Pass, "Retry-After 1s, quota back after 206ms (tolerance: rounding up to whole seconds, plus 300ms)", nil, ""),
			check(probe.CheckHeaders, probe.Warn, "only legacy X-RateLimit-* headers (66 responses); they parse, but the IETF RateLimit fields are the standard (a warning by --warn-only ratelimit-headers)",
				nil, "add RateLimit-Policy and RateLimit next to the legacy fields"),
			check(probe.CheckReset, probe.Pass, "the quota was full again when t said, and not sooner (tolerance: 1 s of rounding)", nil, ""),
			check(probe.CheckPolicy, probe.Pass, "burst 10 and refill match q=10 per 2s", nil, ""),
			check(probe.CheckCacheable, probe.Fail, "a 429 may be cached: explicit freshness (max-age, public) without no-store: a shared cache may store the 429 and refuse clients whose quota is back; ETag let it revalidate and keep it",
				[]string{`429; Retry-After: 1; Cache-Control: public, max-age=60; Etag: "rate-limited"`}, "send Cache-Control: no-store on every 429"),
			check(probe.CheckIsolation, probe.Pass, "a fresh X-API-Key has its own quota, and so do requests without one", nil, ""),
			check(probe.CheckSpoofing, probe.Skip, "skipped by --skip ip-spoofing", nil, ""),
			check(probe.CheckHeadersOnSuccess, probe.Pass, "all 48 admitted responses carry the RateLimit headers", nil, ""),
		},
		Verdict: probe.Fail,
	}
}
