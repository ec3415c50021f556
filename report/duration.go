package report

import (
	"fmt"
	"math"
)

// Latency renders a duration given in milliseconds with a unit chosen for
// its size, the same way in every text renderer (eval, race, load):
// 850µs, 12.5ms, 1.25s. Below 1µs it shows 0µs; NaN and negative values
// show as "-".
func Latency(ms float64) string {
	switch {
	case math.IsNaN(ms) || ms < 0 || math.IsInf(ms, 0):
		return "-"
	case ms < 1:
		return fmt.Sprintf("%.0fµs", ms*1000)
	case ms < 10:
		return fmt.Sprintf("%.2fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.2fs", ms/1000)
	}
	return fmt.Sprintf("%.0fs", ms/1000)
}
