// Package rate parses and prints request rates such as "20/s", "300/m",
// "1000/h", "5/100ms" or a bare "5" (per second), the vocabulary operators
// know from k6 and vegeta.
package rate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rate is Count events per Per. Count may be fractional ("0.5/s").
type Rate struct {
	Count float64
	Per   time.Duration
}

// Parse reads "N", "N/s", "N/m", "N/h", "N/ms" or "N/<duration>" such as
// "5/100ms" or "10/2s". N must be positive and finite.
func Parse(s string) (Rate, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return Rate{}, fmt.Errorf("rate is empty; want a form such as 20/s, 300/m or 5/100ms")
	}
	num, unit, hasUnit := strings.Cut(in, "/")
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return Rate{}, fmt.Errorf("invalid rate %q; want a form such as 20/s, 300/m or 5/100ms", s)
	}
	if n <= 0 {
		return Rate{}, fmt.Errorf("invalid rate %q: must be greater than 0", s)
	}
	per := time.Second
	if hasUnit {
		per, err = parseUnit(strings.TrimSpace(unit))
		if err != nil {
			return Rate{}, fmt.Errorf("invalid rate %q: %v", s, err)
		}
	}
	return Rate{Count: n, Per: per}, nil
}

func parseUnit(u string) (time.Duration, error) {
	switch u {
	case "ns":
		return time.Nanosecond, nil
	case "us", "µs":
		return time.Microsecond, nil
	case "ms":
		return time.Millisecond, nil
	case "s", "sec":
		return time.Second, nil
	case "m", "min":
		return time.Minute, nil
	case "h", "hour":
		return time.Hour, nil
	}
	d, err := time.ParseDuration(u)
	if err != nil {
		return 0, fmt.Errorf("unknown unit %q; want s, m, h, ms or a duration such as 100ms", u)
	}
	if d <= 0 {
		return 0, fmt.Errorf("unit %q must be a positive duration", u)
	}
	return d, nil
}

// PerSecond returns the rate in events per second.
func (r Rate) PerSecond() float64 {
	if r.Per <= 0 {
		return 0
	}
	return r.Count * float64(time.Second) / float64(r.Per)
}

// IsZero reports whether r is the zero Rate.
func (r Rate) IsZero() bool { return r.Count == 0 || r.Per == 0 }

// String prints the rate in the form Parse reads, e.g. "20/s", "5/100ms".
func (r Rate) String() string {
	if r.IsZero() {
		return "0"
	}
	n := strconv.FormatFloat(r.Count, 'f', -1, 64)
	switch r.Per {
	case time.Millisecond:
		return n + "/ms"
	case time.Second:
		return n + "/s"
	case time.Minute:
		return n + "/m"
	case time.Hour:
		return n + "/h"
	}
	return n + "/" + r.Per.String()
}

// Set and Type make *Rate usable as a pflag.Value.
func (r *Rate) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Type names the flag value in --help.
func (r *Rate) Type() string { return "rate" }

// MustParse is Parse for rates known to be valid (constants, tests); it
// panics on an error.
func MustParse(s string) Rate {
	r, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return r
}
