package header

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in     string
		delay  time.Duration
		isDate bool
		err    bool
	}{
		{"1", time.Second, false, false},
		{"0", 0, false, false},
		{" 120 ", 120 * time.Second, false, false},
		{"Sun, 01 Jun 2025 12:00:30 GMT", 30 * time.Second, true, false},  // IMF-fixdate
		{"Sunday, 01-Jun-25 12:00:30 GMT", 30 * time.Second, true, false}, // RFC 850
		{"Sun Jun  1 12:00:30 2025", 30 * time.Second, true, false},       // asctime
		{"Sun, 01 Jun 2025 11:59:00 GMT", -time.Minute, true, false},
		{"-1", 0, false, true},
		{"1.5", 0, false, true},
		{"+3", 0, false, true},
		{"1 2", 0, false, true},
		{"", 0, false, true},
		{"soon", 0, false, true},
		{"99999999999999999999", 0, false, true},
		{"9223372037", 0, false, true}, // seconds that overflow time.Duration
	}
	for _, tt := range tests {
		got, err := ParseRetryAfter(tt.in, now)
		if tt.err {
			if err == nil {
				t.Errorf("ParseRetryAfter(%q) = %+v, want error", tt.in, got)
			}
			continue
		}
		if err != nil || got.Delay != tt.delay || got.IsDate != tt.isDate {
			t.Errorf("ParseRetryAfter(%q) = %+v, %v; want delay %v date %v", tt.in, got, err, tt.delay, tt.isDate)
		}
	}
}

func TestCheckRetryAfter(t *testing.T) {
	tests := []struct {
		values []string
		err    string
	}{
		{[]string{"1"}, ""},
		{[]string{"Sun, 01 Jun 2025 12:00:30 GMT"}, ""},
		{[]string{"Sun, 01 Jun 2025 11:00:00 GMT"}, ""}, // past dates are the client's clock's business
		{nil, "missing"},
		{[]string{"0"}, ""}, // RFC 9110 allows it: whether it is honest is evidence, not syntax
		{[]string{"1.993"}, "digits only"},
		{[]string{"1", "2"}, "appears 2 times"},
		{[]string{"later"}, "neither"},
	}
	for _, tt := range tests {
		h := http.Header{}
		for _, v := range tt.values {
			h.Add("Retry-After", v)
		}
		ra, err := CheckRetryAfter(h, now)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CheckRetryAfter(%q) = %v, want %q", tt.values, err, tt.err)
		}
		if err == nil && ra.Zero() != (len(tt.values) == 1 && tt.values[0] == "0") {
			t.Errorf("CheckRetryAfter(%q).Zero() = %v", tt.values, ra.Zero())
		}
	}
}

// TestInspectDrafts: every draft libraries send is read, named, and its
// policy found where the current draft's is.
func TestInspectDrafts(t *testing.T) {
	now := time.Unix(1796326310, 0)
	mk := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name  string
		h     http.Header
		draft string
		q, w  int64
		r     int64
		bad   bool
	}{
		{"current", mk("RateLimit-Policy", `"default";q=10;w=2`, "RateLimit", `"default";r=9;t=2`), DraftCurrent, 10, 2, 9, false},
		{"draft-07 (express 'draft-7')", mk("RateLimit-Policy", "10;w=2", "RateLimit", "limit=10, remaining=9, reset=2"), Draft07, 10, 2, 9, false},
		{"draft-06 (express standardHeaders: true)", mk("RateLimit-Policy", "10;w=2", "RateLimit-Limit", "10", "RateLimit-Remaining", "9", "RateLimit-Reset", "2"), Draft06, 10, 2, 9, false},
		{"draft-06 without policy", mk("RateLimit-Limit", "10", "RateLimit-Remaining", "9", "RateLimit-Reset", "2"), Draft06, 10, 0, 9, false},
		{"draft-07 r over limit", mk("RateLimit", "limit=10, remaining=11, reset=2"), Draft07, 10, 0, 11, true},
		{"draft-06 epoch reset", mk("RateLimit-Limit", "10", "RateLimit-Remaining", "9", "RateLimit-Reset", "1796326312"), Draft06, 10, 0, 9, true},
		{"legacy only", mk("X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "9", "X-RateLimit-Reset", "1796326311.1529"), "", 0, 0, -1, false},
	}
	for _, tt := range tests {
		in := Inspect(200, tt.h, now)
		if in.Draft != tt.draft {
			t.Errorf("%s: draft %q, want %q", tt.name, in.Draft, tt.draft)
		}
		if (in.LimitErr != nil || in.PolicyErr != nil) != tt.bad {
			t.Errorf("%s: errors %v, %v; want bad %v", tt.name, in.LimitErr, in.PolicyErr, tt.bad)
		}
		p, ok := in.Policy()
		if tt.q > 0 && (!ok || p.Quota != tt.q || p.Window != tt.w) && !tt.bad {
			t.Errorf("%s: policy %+v, %v; want q=%d w=%d", tt.name, p, ok, tt.q, tt.w)
		}
		if tt.r >= 0 && (len(in.Limits) == 0 || in.Limits[0].Remaining != tt.r) {
			t.Errorf("%s: limits %+v, want r=%d", tt.name, in.Limits, tt.r)
		}
	}
}

func TestFormatRetryAfter(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "1"},
		{-time.Second, "1"},
		{time.Millisecond, "1"},
		{time.Second, "1"},
		{time.Second + time.Nanosecond, "2"},
		{1999 * time.Millisecond, "2"},
		{2 * time.Second, "2"},
		{time.Hour, "3600"},
	}
	for _, tt := range tests {
		if got := FormatRetryAfter(tt.in); got != tt.want {
			t.Errorf("FormatRetryAfter(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for ms, want := range map[int64]string{0: "1", 200: "1", 1000: "1", 1001: "2", 2500: "3", 1 << 62: "9223372037"} {
		if got := FormatRetryAfterMs(ms); got != want {
			t.Errorf("FormatRetryAfterMs(%d) = %s, want %s", ms, got, want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0", "Sun, 01 Jun 2025 12:00:30 GMT", "-1", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ra, err := ParseRetryAfter(s, now)
		if err != nil || ra.IsDate {
			return
		}
		if ra.Delay < 0 {
			t.Fatalf("ParseRetryAfter(%q) = negative delay %v", s, ra.Delay)
		}
		// delay-seconds survive FormatRetryAfter unchanged once >= 1.
		if ra.Delay >= time.Second {
			back, err := ParseRetryAfter(FormatRetryAfter(ra.Delay), now)
			if err != nil || back.Delay != ra.Delay {
				t.Fatalf("round trip of %q: %+v, %v", s, back, err)
			}
		}
	})
}

func TestStorable429(t *testing.T) {
	tests := []struct {
		name     string
		header   http.Header
		storable bool
	}{
		{"no-store", http.Header{"Cache-Control": {"no-store"}}, false},
		{"no-store among others", http.Header{"Cache-Control": {"max-age=60, NO-STORE"}}, false},
		{"private", http.Header{"Cache-Control": {"private"}}, false},
		{"private max-age=0", http.Header{"Cache-Control": {"private, max-age=0"}}, false},
		// a 429 is not heuristically cacheable: without explicit freshness
		// it is not storable (missing no-store is a note, see Cache429)
		{"nothing", http.Header{}, false},
		{"max-age", http.Header{"Cache-Control": {"max-age=60"}}, true},
		{"private with max-age", http.Header{"Cache-Control": {"private, max-age=60"}}, true},
		{"s-maxage quoted", http.Header{"Cache-Control": {`s-maxage="30"`}}, true},
		{"public", http.Header{"Cache-Control": {"public"}}, true},
		{"expires", http.Header{"Cache-Control": {"private"}, "Expires": {"Sun, 01 Jun 2025 12:00:30 GMT"}}, true},
		{"no-cache only", http.Header{"Cache-Control": {"no-cache"}}, false},
		{"split lines", http.Header{"Cache-Control": {"max-age=5", "no-store"}}, false},
	}
	for _, tt := range tests {
		got, why := Storable429(tt.header)
		if got != tt.storable || why == "" {
			t.Errorf("%s: Storable429(%v) = %v, %q; want %v", tt.name, tt.header, got, why, tt.storable)
		}
	}
}

func TestParseCacheControl(t *testing.T) {
	cc := ParseCacheControl([]string{`max-age=abc, s-maxage=99999999999, private="Set-Cookie"`})
	if !cc.Malformed || cc.MaxAge != -1 || cc.SMaxAge != 1<<31 || !cc.Private {
		t.Errorf("ParseCacheControl = %+v", cc)
	}
}

func TestParseLegacy(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		ok     bool
		want   Legacy
	}{
		{"github", http.Header{"X-Ratelimit-Limit": {"60"}, "X-Ratelimit-Remaining": {"59"}, "X-Ratelimit-Reset": {"1748779230"}}, true,
			Legacy{Prefix: "X-RateLimit-", Limit: 60, Remaining: 59, Reset: 1748779230, ResetIsEpoch: true, ResetExact: 1748779230}},
		{"slowapi's decimal epoch", http.Header{"X-Ratelimit-Limit": {"3"}, "X-Ratelimit-Remaining": {"2"}, "X-Ratelimit-Reset": {"1796326311.1529"}}, true,
			Legacy{Prefix: "X-RateLimit-", Limit: 3, Remaining: 2, Reset: 1796326311, ResetIsEpoch: true, ResetExact: 1796326311.1529}},
		{"draft-03", http.Header{"Ratelimit-Limit": {"10, 10;w=1"}, "Ratelimit-Remaining": {"3"}, "Ratelimit-Reset": {"1"}}, true,
			Legacy{Prefix: "RateLimit-", Limit: 10, Remaining: 3, Reset: 1, ResetExact: 1, Draft: Draft06}},
		{"only remaining, garbage limit", http.Header{"X-Ratelimit-Remaining": {"5"}, "X-Ratelimit-Limit": {"lots"}}, true,
			Legacy{Prefix: "X-RateLimit-", Limit: -1, Remaining: 5, Reset: -1, ResetExact: -1}},
		{"negative reset", http.Header{"X-Ratelimit-Reset": {"-3"}}, true,
			Legacy{Prefix: "X-RateLimit-", Limit: -1, Remaining: -1, Reset: -1, ResetExact: -1}},
		{"none", http.Header{"Ratelimit": {`"d";r=1`}}, false, Legacy{Limit: -1, Remaining: -1, Reset: -1, ResetExact: -1}},
		{"HTTP-date", http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"Fri, 04 Dec 2026 19:24:59 GMT"}}, true,
			Legacy{Prefix: "X-RateLimit-", Limit: -1, Remaining: 0, Reset: 1796412299, ResetIsEpoch: true, ResetExact: 1796412299, ResetIsDate: true}},
		{"HTTP-date in UTC", http.Header{"Ratelimit-Reset": {"Fri, 04 Dec 2026 19:24:59 UTC"}}, true,
			Legacy{Prefix: "RateLimit-", Limit: -1, Remaining: -1, Reset: 1796412299, ResetIsEpoch: true, ResetExact: 1796412299, ResetIsDate: true, Draft: Draft06}},
		{"RFC 850 date", http.Header{"X-Ratelimit-Reset": {"Friday, 04-Dec-26 19:24:59 GMT"}}, true,
			Legacy{Prefix: "X-RateLimit-", Limit: -1, Remaining: -1, Reset: 1796412299, ResetIsEpoch: true, ResetExact: 1796412299, ResetIsDate: true}},
		{"not a date", http.Header{"X-Ratelimit-Reset": {"Fri, 04 Dec 2026 19:24:59 CET"}}, true,
			Legacy{Prefix: "X-RateLimit-", Limit: -1, Remaining: -1, Reset: -1, ResetExact: -1}},
	}
	for _, tt := range tests {
		got, ok := ParseLegacy(tt.header)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: ParseLegacy = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	// a decimal epoch is read to the fraction; whole seconds carry more rounding
	now := time.Unix(1796326310, 0)
	l, _ := ParseLegacy(http.Header{"X-Ratelimit-Reset": {"1796326311.1529"}})
	if d, r, ok := l.Until(now); !ok || d != 1152900*time.Microsecond || r != time.Second {
		t.Errorf("Until(decimal epoch) = %v, %v, %v", d, r, ok)
	}
	l, _ = ParseLegacy(http.Header{"X-Ratelimit-Reset": {"1796326312"}})
	if d, r, ok := l.Until(now); !ok || d != 2*time.Second || r != 2*time.Second {
		t.Errorf("Until(epoch) = %v, %v, %v", d, r, ok)
	}
	// an HTTP-date is whole seconds, read against the clock: 2 s rounding
	l, _ = ParseLegacy(http.Header{"X-Ratelimit-Reset": {"Thu, 03 Dec 2026 19:31:53 GMT"}})
	if d, r, ok := l.Until(now); !ok || d != 3*time.Second || r != 2*time.Second {
		t.Errorf("Until(HTTP-date) = %v, %v, %v", d, r, ok)
	}
	l, _ = ParseLegacy(http.Header{"Ratelimit-Reset": {"7"}})
	if d, r, ok := l.Until(now); !ok || d != 7*time.Second || r != time.Second {
		t.Errorf("Until(delta) = %v, %v, %v", d, r, ok)
	}
}

func TestInspect(t *testing.T) {
	h := http.Header{}
	h.Set("RateLimit-Policy", `"default";q=10;w=2`)
	h.Set("RateLimit", `"default";r=0;t=1`)
	h.Set("Retry-After", "1")
	h.Set("Cache-Control", "no-store")
	in := Inspect(429, h, now)
	if !in.HasPolicy || in.PolicyErr != nil || !in.HasLimit || in.LimitErr != nil ||
		in.RetryAfterErr != nil || in.Storable || in.HasLegacy {
		t.Errorf("Inspect(serve-like 429) = %+v", in)
	}
	if len(in.Policies) != 1 || in.Policies[0].Quota != 10 || in.Policies[0].Window != 2 {
		t.Errorf("Policies = %+v", in.Policies)
	}

	h.Set("RateLimit", `"default";r=11;t=1`)
	h.Del("Retry-After")
	h.Set("Cache-Control", "public, max-age=60")
	in = Inspect(429, h, now)
	if in.LimitErr == nil || in.RetryAfterErr == nil || !in.Storable {
		t.Errorf("Inspect(bad 429) = %+v; want r>q, missing Retry-After and storable flagged", in)
	}

	in = Inspect(200, http.Header{"X-Ratelimit-Remaining": {"1"}}, now)
	if in.HasPolicy || in.HasLimit || in.RetryAfterErr != nil || in.Storable || !in.HasLegacy {
		t.Errorf("Inspect(200 legacy) = %+v", in)
	}
}

// TestLegacyResetDateProperty: any instant from 1970 to 9999, written as
// an IMF-fixdate in GMT or UTC as X-RateLimit-Reset or RateLimit-Reset,
// reads back as its Unix second, an epoch, and the seconds until it.
func TestLegacyResetDateProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 8))
	for range 2000 {
		at := time.Unix(r.Int64N(253402300799), 0).UTC()
		for _, zone := range []string{"GMT", "UTC"} {
			v := at.Format("Mon, 02 Jan 2006 15:04:05 ") + zone
			for _, name := range []string{"X-Ratelimit-Reset", "Ratelimit-Reset"} {
				l, ok := ParseLegacy(http.Header{name: {v}})
				if !ok || !l.ResetIsDate || !l.ResetIsEpoch || l.Reset != at.Unix() || l.ResetExact != float64(at.Unix()) {
					t.Fatalf("%s: %s: ParseLegacy = %+v, %v; want the Unix time %d", name, v, l, ok, at.Unix())
				}
				now := at.Add(-1500 * time.Millisecond)
				if d, rounding, ok := l.Until(now); !ok || d != 1500*time.Millisecond || rounding != 2*time.Second {
					t.Fatalf("%s: Until(1.5 s before) = %v, %v, %v", v, d, rounding, ok)
				}
			}
		}
	}
}
