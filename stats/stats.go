// Package stats holds the one percentile every command computes from raw
// samples: nearest rank, p from 0 to 100, the scale the HDR histograms of
// load use too, so a p99 means the same in every document.
package stats

import (
	"cmp"
	"math"
)

// Percentile is the nearest-rank p-th percentile (p from 0 to 100) of
// sorted: the smallest sample with at least p% of the samples at or below
// it. p 0 is the minimum, p 100 the maximum; empty input gives the zero
// value.
func Percentile[T cmp.Ordered](sorted []T, p float64) T {
	var zero T
	if len(sorted) == 0 {
		return zero
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
