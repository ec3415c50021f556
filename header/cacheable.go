package header

import (
	"net/http"
	"strings"
	"time"
)

// Caching levels of a 429, from Cache429.
const (
	CacheOK   = "ok"   // no-store: no cache keeps it
	CacheNote = "note" // no explicit freshness, so not storable, but no no-store either
	CacheBad  = "bad"  // a cache may store it and replay the refusal
)

// Cache429 judges how a cache may treat a 429 with header h, by the HTTP
// caching rules (RFC 9111): a 429 is not heuristically cacheable, so a
// cache stores it only with explicit freshness (max-age, s-maxage,
// Expires) or Cache-Control: public. Such a 429 is CacheBad (a proxy could
// refuse clients whose quota has come back), more so with a validator
// (ETag, Last-Modified) that lets the cache revalidate and keep it.
// Without explicit freshness it is not storable: CacheNote when no-store
// is missing (RFC 6585 asks for it), CacheOK with no-store.
func Cache429(h http.Header) (level, why string) {
	cc := ParseCacheControl(h["Cache-Control"])
	if cc.NoStore {
		return CacheOK, "Cache-Control: no-store"
	}
	var fresh []string
	if cc.MaxAge > 0 {
		fresh = append(fresh, "max-age")
	}
	if cc.SMaxAge > 0 {
		fresh = append(fresh, "s-maxage")
	}
	if expiresFresh(h) {
		fresh = append(fresh, "Expires")
	}
	if cc.Public {
		fresh = append(fresh, "public")
	}
	if len(fresh) > 0 {
		why := "explicit freshness (" + strings.Join(fresh, ", ") + ") without no-store: a shared cache may store the 429 and refuse clients whose quota is back"
		var validators []string
		for _, v := range []string{"ETag", "Last-Modified"} {
			if h.Get(v) != "" {
				validators = append(validators, v)
			}
		}
		if len(validators) > 0 {
			why += "; " + strings.Join(validators, " and ") + " let it revalidate and keep it"
		}
		return CacheBad, why
	}
	if len(h["Cache-Control"]) == 0 {
		return CacheNote, "no Cache-Control: not storable (a 429 is not heuristically cacheable), but RFC 6585 asks for no-store"
	}
	return CacheNote, "no explicit freshness, so not storable, but no no-store either (RFC 6585 asks for it)"
}

// expiresFresh reports whether Expires gives the response a freshness
// lifetime: a valid HTTP date later than the response's Date (RFC 9111
// 5.3: an invalid date, "0" above all, means already expired; 4.2.1: the
// lifetime is Expires minus Date). Without a Date to compare with, a valid
// Expires counts: a cache would use the time it received the response.
func expiresFresh(h http.Header) bool {
	vs := h["Expires"]
	if len(vs) == 0 {
		return false
	}
	exp, err := http.ParseTime(strings.TrimSpace(vs[0]))
	if err != nil {
		return false
	}
	if date, err := http.ParseTime(strings.TrimSpace(h.Get("Date"))); err == nil {
		return exp.After(date)
	}
	return exp.After(time.Time{})
}
