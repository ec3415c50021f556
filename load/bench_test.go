package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// BenchmarkIteration measures one iteration's hot path (request, drain,
// header checks, recording) against a loopback target, sequentially, so
// allocations per iteration are visible: go test -bench Iteration ./load
func BenchmarkIteration(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	o, err := Options{Target: srv.URL, Rate: rate.Rate{Count: 1, Per: time.Second}, Duration: time.Hour}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	e := &engine{o: o, parent: context.Background(), runCtx: context.Background(), maxLat: int64(time.Minute / time.Microsecond),
		st: tally.NewStatuses(judge.Rule{}, []int{200})}
	if err := e.prepare(); err != nil {
		b.Fatal(err)
	}
	e.start = time.Now()
	v := newVU(e, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e.do(v, job{i: int64(i), due: time.Since(e.start)})
	}
	if v.t.Allowed != int64(b.N) {
		b.Fatalf("%d OK of %d", v.t.Allowed, b.N)
	}
}
