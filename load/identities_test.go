package load

import (
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestIdentitiesLazy (issue 26): load --identities 1000000 built a request
// per identity before the first was sent (1.3 GiB for 100 requests). The
// requests of a million identities now cost what the identities sent do:
// each is built when first asked for, kept for the first maxPrepared, and
// reads exactly as the eager requests did.
func TestIdentitiesLazy(t *testing.T) {
	o := &Options{Method: http.MethodGet, Target: "http://127.0.0.1:8011/hello?a=1", Identities: 1_000_000, IdentityHeader: "X-API-Key", RunID: "r1",
		Headers: http.Header{"Accept": {"*/*"}, "Host": {"api.example.test"}}}
	u, _ := url.Parse(o.Target)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ids, err := newIdentities(o, u)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 100 {
		_ = ids.request(k)
		_ = ids.wire(k)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("a million identities, 100 sent: %d MiB allocated, want what 100 requests take", grew>>20)
	}
	for _, k := range []int{0, 7, maxPrepared - 1, maxPrepared, 999_999} {
		want := IdentityValue("r1", k)
		r := ids.request(k)
		if got := r.Header.Get("X-API-Key"); got != want || r.Host != "api.example.test" || r.Header.Get("Accept") != "*/*" {
			t.Errorf("request(%d): identity %q, host %q, accept %q; want %q, api.example.test, */*", k, got, r.Host, r.Header.Get("Accept"), want)
		}
		if w := string(ids.wire(k).wire); !strings.Contains(w, "X-Api-Key: "+want+"\r\n") || !strings.HasPrefix(w, "GET /hello?a=1 HTTP/1.1\r\n") {
			t.Errorf("wire(%d) = %q, want the identity %s", k, w, want)
		}
		if (k < maxPrepared) != (ids.request(k) == r) {
			t.Errorf("request(%d) kept = %v, want kept below maxPrepared only", k, ids.request(k) == r)
		}
	}
	if ids.template.Header.Get("X-API-Key") != "" {
		t.Error("the template carries an identity")
	}
	// concurrent first sends of one identity agree on one request
	var wg sync.WaitGroup
	got := make([]*http.Request, 8)
	for i := range got {
		wg.Go(func() { got[i] = ids.request(4000) })
	}
	wg.Wait()
	for _, r := range got[1:] {
		if r != got[0] {
			t.Fatal("concurrent first sends kept two requests for one identity")
		}
	}
	none, _ := newIdentities(&Options{Method: http.MethodGet, Target: o.Target}, u)
	if none.n != 1 || none.request(0) != none.template || none.request(0).Header.Get("X-API-Key") != "" {
		t.Error("a run without identities: want the template, one identity, no identity header")
	}
}
