package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// BenchmarkHello measures one limited GET /hello through the handler
// (no HTTP transport): the middleware plus one EVALSHA on the standalone
// server. Run with: go test -run XXX -bench Hello ./serve
func BenchmarkHello(b *testing.B) {
	tg := redistest.Standalone(b)
	params := limiter.Params{Algo: limiter.TokenBucket, Capacity: 1_000_000_000, Rate: rate.Rate{Count: 1_000_000, Per: time.Second}}
	h, err := New(Config{Store: redislimit.NewStore(tg.Client), Params: params, KeyPrefix: "test-" + uuid.NewString()})
	if err != nil {
		b.Fatal(err)
	}
	key := uuid.NewString()
	b.Cleanup(func() {
		_ = tg.Client.Del(context.Background(), APIKey(key).Key(h.Config().KeyPrefix, limiter.TokenBucket)).Err()
	})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest(http.MethodGet, HelloPath, nil)
			r.Header.Set("X-API-Key", key)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Errorf("GET /hello = %d", w.Code)
				return
			}
		}
	})
}
