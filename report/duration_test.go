package report

import (
	"math"
	"testing"
)

func TestLatency(t *testing.T) {
	tests := []struct {
		ms   float64
		want string
	}{
		{0, "0µs"}, {0.85, "850µs"}, {1, "1.00ms"}, {1.25, "1.25ms"}, {12.5, "12.5ms"},
		{999.9, "999.9ms"}, {1250, "1.25s"}, {61_000, "61s"}, {-1, "-"}, {math.NaN(), "-"}, {math.Inf(1), "-"},
	}
	for _, tt := range tests {
		if got := Latency(tt.ms); got != tt.want {
			t.Errorf("Latency(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}
