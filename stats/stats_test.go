package stats

import (
	"slices"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct{ p, want float64 }{{0, 1}, {10, 1}, {11, 2}, {50, 5}, {90, 9}, {99, 10}, {100, 10}} {
		if got := Percentile(xs, tt.p); got != tt.want {
			t.Errorf("Percentile(1..10, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := Percentile([]float64(nil), 50); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
	d := make([]time.Duration, 200)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Microsecond
	}
	if got := Percentile(d, 99); got != 198*time.Microsecond {
		t.Errorf("Percentile(1..200µs, 99) = %v, want 198µs", got)
	}
}

// FuzzPercentile: the result is a sample, within [min, max], and
// monotonic in p.
func FuzzPercentile(f *testing.F) {
	f.Add([]byte{3, 1, 2}, 50.0, 90.0)
	f.Fuzz(func(t *testing.T, raw []byte, p, q float64) {
		if len(raw) == 0 || p != p || q != q {
			return
		}
		xs := make([]int, len(raw))
		for i, b := range raw {
			xs[i] = int(b)
		}
		slices.Sort(xs)
		p, q = min(max(p, 0), 100), min(max(q, 0), 100)
		a, b := Percentile(xs, min(p, q)), Percentile(xs, max(p, q))
		if a > b || a < xs[0] || b > xs[len(xs)-1] || !slices.Contains(xs, a) {
			t.Fatalf("Percentile(%v, %v) = %v, (%v) = %v", xs, min(p, q), a, max(p, q), b)
		}
	})
}
