// Package words writes the numbers and durations of messages the way a
// reader says them, one spelling for every command: 100,000,000; 1m30s;
// per minute; text with its control characters escaped.
package words

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Commas writes n with thousands separators: 100,000,000.
func Commas[T int | int64 | *big.Int](n T) string {
	var s string
	switch v := any(n).(type) {
	case *big.Int:
		s = v.String()
	default:
		s = fmt.Sprint(v)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Span writes a duration without zero units: 10s, 1m, 1h30m, 250ms.
func Span(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Per writes a window as a reader says it: per second, per minute, per
// hour, per day, else per 10s, per 1m30s.
func Per(d time.Duration) string {
	switch d {
	case time.Second:
		return "per second"
	case time.Minute:
		return "per minute"
	case time.Hour:
		return "per hour"
	case 24 * time.Hour:
		return "per day"
	}
	return "per " + Span(d)
}

// Printable shows s with control characters escaped, for one-line error
// messages that quote what a user or a server sent.
func Printable(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// Plural is one when n is 1, else many: "1 request", "2 requests".
func Plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
