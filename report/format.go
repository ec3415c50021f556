package report

import (
	"math"
	"strconv"
)

// Small formatting helpers shared by the renderers of every kind.

// pct prints a fraction as a percentage with one decimal, with three below
// 1% so that a rare event does not print as 0.0%.
func pct(f float64) string {
	digits := 1
	if f > 0 && f < 0.01 {
		digits = 3
	}
	return strconv.FormatFloat(f*100, 'f', digits, 64) + "%"
}

// plural returns one when n is 1, else many: "trial", "trials".
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// countNoun writes n with its noun: "1 finding", "2 findings".
func countNoun(n int, one, many string) string {
	return strconv.Itoa(n) + " " + plural(n, one, many)
}

// secs prints seconds with at most two decimals: "30s", "7.95s".
func secs(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) + "s"
}

// byteSize prints a byte count in SI units as k6 does: "512 B", "12.3 kB",
// "4.56 MB".
func byteSize(n float64) string {
	const unit = 1000
	if n < unit {
		return strconv.FormatFloat(math.Max(n, 0), 'f', 0, 64) + " B"
	}
	for i, u := range []string{"kB", "MB", "GB", "TB", "PB"} {
		if v := n / math.Pow(unit, float64(i+1)); v < unit || u == "PB" {
			digits := 1
			if v < 10 {
				digits = 2
			}
			return strconv.FormatFloat(v, 'f', digits, 64) + " " + u
		}
	}
	return "" // unreachable
}
