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
