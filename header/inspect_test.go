package header

import (
	"errors"
	"net/http"
	"reflect"
	"testing"
)

// An Inspector fed a stream of responses answers exactly what a fresh
// Inspect answers for each, however the policy changes between them: the
// cache is keyed by the field's value, never stale.
func TestInspectorMatchesInspect(t *testing.T) {
	mk := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	stream := []struct {
		status int
		h      http.Header
	}{
		{200, mk("RateLimit-Policy", `"default";q=10;w=2`, "RateLimit", `"default";r=9;t=1`)},
		{200, mk("RateLimit-Policy", `"default";q=10;w=2`, "RateLimit", `"default";r=8;t=1`)},
		{200, mk("RateLimit-Policy", `"default";q=5;w=2`, "RateLimit", `"default";r=8;t=1`)}, // r > the new q
		{429, mk("RateLimit-Policy", `"default";q=5;w=2`, "RateLimit", `"default";r=0;t=1`, "Retry-After", "1")},
		{200, mk("RateLimit-Policy", `"default";q=`)}, // invalid
		{200, mk("RateLimit-Policy", `"default";q=`)}, // the cached error
		{200, mk("RateLimit", `"default";r=1;t=1`)},   // no policy at all
		{200, mk("RateLimit-Policy", `"a";q=10;w=2`, "RateLimit-Policy", `"b";q=3;w=1`, "RateLimit", `"b";r=4;t=1`)},
		{200, mk("RateLimit-Policy", `"a";q=10;w=2, "b";q=3;w=1`, "RateLimit", `"b";r=2;t=1`)}, // same value on one line
		{429, mk("X-RateLimit-Remaining", "0")},
	}
	var c Inspector
	for i, r := range stream {
		got := c.Inspect(r.status, r.h, now, r.status == 429)
		want := Inspect(r.status, r.h, now)
		if !reflect.DeepEqual(got.Policies, want.Policies) || !sameErr(got.PolicyErr, want.PolicyErr) ||
			!sameErr(got.LimitErr, want.LimitErr) || !sameErr(got.RetryAfterErr, want.RetryAfterErr) ||
			got.HasPolicy != want.HasPolicy || got.HasLimit != want.HasLimit || got.PolicyValue != want.PolicyValue ||
			got.HasRetryAfter != want.HasRetryAfter || got.HasLegacy != want.HasLegacy {
			t.Errorf("response %d: Inspector.Inspect = %+v, Inspect = %+v", i, got, want)
		}
	}
	// Spot checks of what the stream should have found.
	var fresh Inspector
	if in := fresh.Inspect(200, stream[2].h, now, false); in.LimitErr == nil {
		t.Errorf("r=8 over q=5 after q=10 was cached: LimitErr nil")
	}
	if in := Inspect(200, stream[7].h, now); in.PolicyValue != `"a";q=10;w=2, "b";q=3;w=1` || len(in.Policies) != 2 || in.LimitErr == nil {
		t.Errorf("two policy lines: value %q, %d policies, limit error %v; want them joined, 2, r=4 > q=3", in.PolicyValue, len(in.Policies), in.LimitErr)
	}
	if in := Inspect(429, stream[3].h, now); !in.HasRetryAfter || in.RetryAfterErr != nil {
		t.Errorf("429 with Retry-After: has %v, err %v", in.HasRetryAfter, in.RetryAfterErr)
	}
	if in := Inspect(429, stream[9].h, now); in.HasRetryAfter || in.RetryAfterErr == nil {
		t.Errorf("429 without Retry-After: has %v, err %v", in.HasRetryAfter, in.RetryAfterErr)
	}
	if in := Inspect(200, stream[3].h, now); in.HasRetryAfter {
		t.Errorf("a 200 reports Retry-After: Retry-After is only checked on a 429")
	}
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error() && errors.Is(a, ErrInvalid) == errors.Is(b, ErrInvalid)
}

// BenchmarkInspector: a stream of responses with the same policy skips its
// parse; Inspect parses it every time.
func BenchmarkInspector(b *testing.B) {
	h := http.Header{}
	h.Set("RateLimit-Policy", `"default";q=10;w=2`)
	h.Set("RateLimit", `"default";r=3;t=1`)
	b.Run("Inspect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Inspect(200, h, now)
		}
	})
	b.Run("Inspector", func(b *testing.B) {
		b.ReportAllocs()
		var c Inspector
		for b.Loop() {
			_ = c.Inspect(200, h, now, false)
		}
	})
}
