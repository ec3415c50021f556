package tally

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ratelimit-dev/ratelimit/judge"
)

// TestHDRMergeLossless: the percentiles of histograms merged from their
// encoded snapshots equal those of one histogram fed every value.
func TestHDRMergeLossless(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	one := NewHistogram(20_000_000)
	var parts []*hdrhistogram.Histogram
	for range 4 {
		parts = append(parts, NewHistogram(20_000_000))
	}
	for i := range 200_000 {
		v := int64(r.ExpFloat64()*2000) + 1
		if i%97 == 0 {
			v *= 1000
		}
		_ = one.RecordValue(min(v, 20_000_000))
		_ = parts[i%4].RecordValue(min(v, 20_000_000))
	}
	var decoded []*hdrhistogram.Histogram
	for _, h := range parts {
		d, err := decodeHDR(EncodeHDR(h), "test")
		if err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, d)
	}
	m, err := mergeHDR(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if m.TotalCount() != one.TotalCount() {
		t.Fatalf("count %d, want %d", m.TotalCount(), one.TotalCount())
	}
	for _, q := range []float64{0, 1, 50, 90, 99, 99.9, 99.99, 100} {
		if a, b := m.ValueAtQuantile(q), one.ValueAtQuantile(q); a != b {
			t.Errorf("p%v: merged %d, one histogram %d", q, a, b)
		}
	}
	if LatencyOf(m) != LatencyOf(one) {
		t.Errorf("latency %+v, want %+v", LatencyOf(m), LatencyOf(one))
	}
}

func TestPackArrivalsRoundTrip(t *testing.T) {
	in := []judge.Arrival{{Identity: 0, SendNs: 5e6, DoneNs: 7e6, Status: 200}, {Identity: 3, SendNs: 9e6, DoneNs: 9.5e6, Status: 429}, {Identity: 1, SendNs: 12e6, DoneNs: 30e6, Status: 0}}
	out, err := unpackArrivals(PackArrivals(in), 1e9, 4, 3, time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		w := in[i]
		w.SendNs += 1e9
		w.DoneNs += 1e9
		w.DueNs = w.SendNs
		if out[i] != w {
			t.Errorf("arrival %d: %+v, want %+v", i, out[i], w)
		}
	}
	if _, err := unpackArrivals(PackArrivals(in), 0, 2, 3, time.Second, time.Second); err == nil {
		t.Error("an identity beyond the run's was accepted")
	}
	if _, err := unpackArrivals("!!", 0, 2, 3, time.Second, time.Second); err == nil {
		t.Error("garbage accepted")
	}
	// issue 26: a segment's arrivals are bounded by its own counts and
	// plan: more arrivals than its sends, a send after its span, a
	// latency beyond its timeout are out of range
	for _, c := range []struct {
		name      string
		limit     int64
		span, lat time.Duration
	}{{"more arrivals than sends", 2, time.Second, time.Second}, {"a send after the span", 3, 10 * time.Millisecond, time.Second}, {"a latency beyond the timeout", 3, time.Second, 10 * time.Millisecond}} {
		if _, err := unpackArrivals(PackArrivals(in), 0, 4, c.limit, c.span, c.lat); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}
