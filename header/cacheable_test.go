package header

import (
	"net/http"
	"testing"
)

func TestCache429(t *testing.T) {
	tests := []struct {
		h    http.Header
		want string
	}{
		{http.Header{"Cache-Control": {"no-store"}}, CacheOK},
		{http.Header{"Cache-Control": {"public, max-age=60"}, "Etag": {`"x"`}}, CacheBad},
		{http.Header{"Cache-Control": {"max-age=60"}}, CacheBad},
		{http.Header{"Cache-Control": {"s-maxage=5"}}, CacheBad},
		{http.Header{"Expires": {"Thu, 01 Jan 2099 00:00:00 GMT"}}, CacheBad},
		{http.Header{"Cache-Control": {"public"}}, CacheBad},
		{http.Header{}, CacheNote}, // not heuristically cacheable: a note, not a failure
		{http.Header{"Cache-Control": {"private"}}, CacheNote},
		{http.Header{"Cache-Control": {"no-cache"}, "Etag": {`"x"`}}, CacheNote},
		{http.Header{"Cache-Control": {"max-age=60, no-store"}}, CacheOK},
		// issue 26: the three explicitly cacheable 429s that passed probe
		{http.Header{"Cache-Control": {"public, max-age=60"}}, CacheBad},
		{http.Header{"Cache-Control": {"s-maxage=60"}}, CacheBad},
		{http.Header{"Expires": {"Sat, 04 Dec 2027 11:00:00 GMT"}, "Date": {"Fri, 04 Dec 2026 11:00:00 GMT"}}, CacheBad},
		// Expires that gives no freshness (RFC 9111 5.3): invalid ("0"),
		// or not after Date: already expired, so not storable for long
		{http.Header{"Expires": {"0"}}, CacheNote},
		{http.Header{"Expires": {"Fri, 04 Dec 2026 10:00:00 GMT"}, "Date": {"Fri, 04 Dec 2026 11:00:00 GMT"}}, CacheNote},
	}
	for _, tt := range tests {
		if got, why := Cache429(tt.h); got != tt.want || why == "" {
			t.Errorf("Cache429(%v) = %q (%s), want %q", tt.h, got, why, tt.want)
		}
	}
}
