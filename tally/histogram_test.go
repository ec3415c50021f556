package tally

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestHistBoundUs(t *testing.T) {
	want := []int64{10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 3000, 5000, 10000}
	for i, w := range want {
		if got := histBoundUs(i); got != w {
			t.Errorf("histBoundUs(%d) = %d, want %d", i, got, w)
		}
	}
}

func TestLatencyHistogram(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		want    []Bucket // nil: no histogram
	}{
		{name: "empty"},
		{
			name:    "one sample on a bound",
			samples: []time.Duration{time.Millisecond},
			want:    []Bucket{{LeMs: 1, Count: 1}},
		},
		{
			name: "spread with empty buckets between",
			samples: []time.Duration{
				1500 * time.Microsecond, 1800 * time.Microsecond, // (1, 2] ms
				2 * time.Millisecond,    // on the bound: (1, 2] ms
				2500 * time.Millisecond, // (2000, 3000] ms
				40 * time.Millisecond,   // (30, 50] ms
				4 * time.Millisecond,    // (3, 5] ms
				4100 * time.Microsecond, // (3, 5] ms
				700 * time.Microsecond,  // (0.5, 1] ms
				0,                       // recorded as 1 µs: (0, 0.01] ms
			},
			want: []Bucket{
				{0.01, 1}, {0.02, 0}, {0.03, 0}, {0.05, 0},
				{0.1, 0}, {0.2, 0}, {0.3, 0}, {0.5, 0},
				{1, 1}, {2, 3}, {3, 0}, {5, 2},
				{10, 0}, {20, 0}, {30, 0}, {50, 1},
				{100, 0}, {200, 0}, {300, 0}, {500, 0},
				{1000, 0}, {2000, 0}, {3000, 1},
			},
		},
		{
			name:    "clamped at the ceiling",
			samples: []time.Duration{time.Hour, 20 * time.Millisecond},
			want:    []Bucket{{20, 1}, {30, 0}, {50, 0}, {100, 0}, {200, 0}, {300, 0}, {500, 0}, {1000, 0}, {2000, 0}, {3000, 0}, {5000, 0}, {10000, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHistogram(int64(10 * time.Second / time.Microsecond))
			for _, d := range tt.samples {
				Record(h, d)
			}
			got := HistogramOf(h)
			if tt.want == nil {
				if got != nil {
					t.Fatalf("latencyHistogram of no samples = %+v, want nil", got)
				}
				return
			}
			if got == nil || got.Unit != "ms" {
				t.Fatalf("latencyHistogram = %+v, want unit ms", got)
			}
			var sum int64
			for _, b := range got.Buckets {
				sum += b.Count
			}
			if sum != int64(len(tt.samples)) || sum != h.TotalCount() {
				t.Errorf("bucket counts sum to %d, want %d samples", sum, len(tt.samples))
			}
			if !reflect.DeepEqual(got.Buckets, tt.want) {
				t.Errorf("buckets\n got %v\nwant %v", got.Buckets, tt.want)
			}
		})
	}
}

func TestLatencyHistogramJSON(t *testing.T) {
	h := NewHistogram(int64(time.Minute / time.Microsecond))
	Record(h, 3*time.Millisecond)
	res := Result{Kind: "load", Version: 1, LatencyHistogram: HistogramOf(h)}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(data); !strings.Contains(s, `"latency_histogram":{"unit":"ms","buckets":[{"le_ms":3,"count":1}]}`) ||
		strings.Contains(s, "latency_from_due_histogram") {
		t.Errorf("json = %s, want latency_histogram with one bucket and no latency_from_due_histogram", s)
	}
}
