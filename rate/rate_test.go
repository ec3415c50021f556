package rate

import (
	"math"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in        string
		count     float64
		per       time.Duration
		perSecond float64
	}{
		{"5", 5, time.Second, 5},
		{"5/s", 5, time.Second, 5},
		{"20/s", 20, time.Second, 20},
		{"300/m", 300, time.Minute, 5},
		{"1000/h", 1000, time.Hour, 1000.0 / 3600},
		{"5/100ms", 5, 100 * time.Millisecond, 50},
		{"10/2s", 10, 2 * time.Second, 5},
		{"0.5/s", 0.5, time.Second, 0.5},
		{" 7 / s ", 7, time.Second, 7},
		{"1/ms", 1, time.Millisecond, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.in, err)
			}
			if got.Count != tt.count || got.Per != tt.per {
				t.Errorf("Parse(%q) = %v/%v, want %v/%v", tt.in, got.Count, got.Per, tt.count, tt.per)
			}
			if ps := got.PerSecond(); math.Abs(ps-tt.perSecond) > 1e-9 {
				t.Errorf("Parse(%q).PerSecond() = %v, want %v", tt.in, ps, tt.perSecond)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "abc", "5/x", "0", "-1/s", "0/s", "5/-1s", "5/0s", "NaN/s", "Inf", "/s", "5/"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = nil error, want an error", in)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, in := range []string{"20/s", "300/m", "1000/h", "5/100ms", "0.5/s", "3/ms", "10/2s"} {
		r, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(r.String())
		if err != nil || back != r {
			t.Errorf("Parse(%q).String() = %q, parses back to %v, %v", in, r.String(), back, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"20/s", "300/m", "5/100ms", "abc", "5/x", "0.25/h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		if !(r.Count > 0) || r.Per <= 0 || math.IsInf(r.Count, 0) {
			t.Fatalf("Parse(%q) = %+v accepted a non-positive rate", s, r)
		}
		back, err := Parse(r.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", s, r.String(), err)
		}
		if back.PerSecond() != r.PerSecond() && math.Abs(back.PerSecond()-r.PerSecond()) > 1e-9*r.PerSecond() {
			t.Fatalf("round trip of %q changed the rate: %v -> %v", s, r, back)
		}
	})
}

func TestMustParse(t *testing.T) {
	if got := MustParse("300/m"); got.PerSecond() != 5 {
		t.Errorf("MustParse(300/m).PerSecond() = %v, want 5", got.PerSecond())
	}
	defer func() {
		if recover() == nil {
			t.Error("MustParse(abc) did not panic")
		}
	}()
	MustParse("abc")
}
