package load

import (
	"bytes"
	"cmp"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
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

// BenchmarkIterationRaw is BenchmarkIteration against a raw loopback
// target that answers every request with the same bytes, the headers a
// rate-limited endpoint sends (RateLimit-Policy, a RateLimit whose r
// counts down) included, and allocates nothing itself: allocs/op are the
// generator's alone. go test -bench IterationRaw -benchmem ./load
func BenchmarkIterationRaw(b *testing.B) {
	addr := rawLoopTarget(b)
	o, err := Options{Target: "http://" + addr + "/", Rate: rate.Rate{Count: 1, Per: time.Second}, Duration: time.Hour}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	e := &engine{o: o, parent: context.Background(), runCtx: context.Background(), maxLat: int64(time.Minute / time.Microsecond),
		st: tally.NewStatuses(judge.Rule{}, []int{200}), zeros: tally.NewZeros(1)}
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

// rawLoopTarget serves keep-alive connections on loopback: for every
// request (up to its blank line) it writes one of ten prepared responses
// in turn, as a limiter counting down its quota would.
func rawLoopTarget(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	var resp [10][]byte
	for r := range resp {
		resp[r] = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nRatelimit-Policy: \"default\";q=10;w=1\r\n" +
			"Ratelimit: \"default\";r=" + strconv.Itoa(9-r) + ";t=1\r\nContent-Length: 3\r\n\r\nok\n")
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				n, blank := 0, []byte("\r\n\r\n")
				for k := 0; ; {
					m, err := c.Read(buf[n:])
					if err != nil {
						return
					}
					n += m
					for {
						end := bytes.Index(buf[:n], blank)
						if end < 0 {
							break
						}
						if _, err := c.Write(resp[k%len(resp)]); err != nil {
							return
						}
						k++
						n = copy(buf, buf[end+len(blank):n])
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// BenchmarkOpenLoop runs the whole engine, as `ratelimit load` does, at
// RATELIMIT_BENCH_RATE (default 20000/s) for RATELIMIT_BENCH_DURATION
// (default 5s) against RATELIMIT_BENCH_TARGET, a target in another process
// (bench/load.sh's), so that a CPU profile of this process is the
// generator's alone:
//
//	RATELIMIT_BENCH_TARGET=http://127.0.0.1:PORT/ go test -run '^$' \
//	  -bench OpenLoop -benchtime 1x -cpuprofile cpu.out ./load
//
// It reports what a bench/load.sh run judges: sent and dropped shares of
// the plan and the p99 latency from due. Without the variable it is
// skipped: it measures a machine, not the code.
func BenchmarkOpenLoop(b *testing.B) {
	target := os.Getenv("RATELIMIT_BENCH_TARGET")
	if target == "" {
		b.Skip("set RATELIMIT_BENCH_TARGET=http://host:port/ (a target in another process)")
	}
	r := rate.MustParse(cmp.Or(os.Getenv("RATELIMIT_BENCH_RATE"), "20000") + "/s")
	d, err := time.ParseDuration(cmp.Or(os.Getenv("RATELIMIT_BENCH_DURATION"), "5s"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := Run(context.Background(), Options{Target: target, Rate: r, Duration: d,
			PreAllocatedVUs: 50, MaxVUs: 1000, Timeout: 10 * time.Second, MaxFailed: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(100*float64(res.Sent)/float64(max(res.Planned, 1)), "%sent")
		b.ReportMetric(float64(res.Dropped), "dropped")
		b.ReportMetric(res.LatencyFromDue.P99, "p99-due-ms")
		b.ReportMetric(float64(res.VUs.Peak), "vus")
	}
}
