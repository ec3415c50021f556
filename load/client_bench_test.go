package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/rate"
)

// BenchmarkClient drives the two HTTP stacks of the client interface, the
// lean HTTP/1.1 client and net/http, against the same loopback target: one
// keep-alive conn sequentially (the cost of one request, allocations
// included), and one conn per goroutine in parallel (what a run with many
// VUs asks of the machine). The target sends the headers a rate-limited
// endpoint sends, so the response is read the way a run reads it.
//
//	go test -run '^$' -bench Client -benchtime 2s ./load/
func BenchmarkClient(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Ratelimit-Policy"] = []string{`"default";q=100;w=1`}
		h["Ratelimit"] = []string{`"default";r=99;t=1`}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	for _, name := range []string{HTTPClientLean, HTTPClientStd} {
		o, err := Options{Target: srv.URL + "/bench", Rate: rate.MustParse("1/s"), Duration: time.Hour,
			Identities: 1, RunID: "bench", HTTPClient: name, MaxVUs: 64}.withDefaults()
		if err != nil {
			b.Fatal(err)
		}
		e := &engine{o: o}
		if err := e.prepare(); err != nil {
			b.Fatal(err)
		}
		if e.clientName != name {
			b.Fatalf("prepare chose %q, want %q", e.clientName, name)
		}
		b.Run(name, func(b *testing.B) {
			var in, out atomic.Int64
			c := e.client.open(context.Background(), &in, &out)
			defer c.close()
			b.ReportAllocs()
			for b.Loop() {
				status, h, err := c.do(0)
				if err != nil || status != http.StatusOK || len(h["Ratelimit"]) != 1 {
					b.Fatalf("do = %d, %v, %v", status, h, err)
				}
			}
		})
		b.Run(name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(4) // 4 conns per CPU, as VUs outnumber CPUs
			b.RunParallel(func(pb *testing.PB) {
				var in, out atomic.Int64
				c := e.client.open(context.Background(), &in, &out)
				defer c.close()
				for pb.Next() {
					status, _, err := c.do(0)
					if err != nil || status != http.StatusOK {
						b.Errorf("do = %d, %v", status, err)
						return
					}
				}
			})
		})
		e.client.close()
	}
}
