package tally

import "github.com/HdrHistogram/hdrhistogram-go"

// Histogram is a compact latency histogram: counts in log-spaced buckets.
type Histogram struct {
	Unit    string   `json:"unit"` // "ms"
	Buckets []Bucket `json:"buckets"`
}

// Bucket counts the samples above the previous bucket's bound and at most
// LeMs (within the HDR histogram's resolution, SignificantDigits).
type Bucket struct {
	LeMs  float64 `json:"le_ms"`
	Count int64   `json:"count"`
}

// histBoundUs is the i-th bucket bound in µs: 1, 2, 3 and 5 times the
// powers of ten from 10 µs (0.01, 0.02, 0.03, 0.05, 0.1, ... ms).
func histBoundUs(i int) int64 {
	b := int64(10)
	for range i / 4 {
		b *= 10
	}
	return b * [4]int64{1, 2, 3, 5}[i%4]
}

// HistogramOf folds h into buckets from the one holding its lowest
// sample to the one holding its highest (about four per decade, so at
// most a few dozen); it is nil when h is empty. Each HDR bucket counts
// towards the first bound at or above its lowest equivalent value.
func HistogramOf(h *hdrhistogram.Histogram) *Histogram {
	if h.TotalCount() == 0 {
		return nil
	}
	out := &Histogram{Unit: "ms"}
	first, i := -1, 0
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		for histBoundUs(i) < bar.From {
			i++
		}
		if first < 0 {
			first = i
		}
		for first+len(out.Buckets) <= i {
			out.Buckets = append(out.Buckets, Bucket{LeMs: ms(histBoundUs(first + len(out.Buckets)))})
		}
		out.Buckets[i-first].Count += bar.Count
	}
	return out
}
