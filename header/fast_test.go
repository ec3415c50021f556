package header

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

// The fast path reads the lines serve and the current draft's limiters
// send, and leaves every other line to the Structured Fields parser.
func TestParseLimitLine(t *testing.T) {
	tests := []struct {
		in   string
		want Limit
		ok   bool
	}{
		{`"default";r=9;t=1`, Limit{Name: "default", Remaining: 9, Reset: 1}, true},
		{`"default";t=1;r=0`, Limit{Name: "default", Remaining: 0, Reset: 1}, true},
		{`"default";r=5`, Limit{Name: "default", Remaining: 5, Reset: NoReset}, true},
		{`"";r=007;t=0`, Limit{Remaining: 7, Reset: 0}, true},
		{`"per user";r=999999999999999;t=60`, Limit{Name: "per user", Remaining: 999_999_999_999_999, Reset: 60}, true},
		{`"default";r=1000000000000000`, Limit{}, false}, // 16 digits: out of range
		{`"default";r=-1`, Limit{}, false},
		{`"default";t=1`, Limit{}, false},                  // no r
		{`"default";r=1;r=2`, Limit{}, false},              // duplicate
		{`"default";r=1;pk=:dTE=:`, Limit{}, false},        // other parameter
		{`"default"; r=1`, Limit{}, false},                 // space
		{`"a\"b";r=1`, Limit{}, false},                     // escape
		{`"a";r=1, "b";r=2`, Limit{}, false},               // two members
		{`default;r=1`, Limit{}, false},                    // a Token
		{`limit=10, remaining=9, reset=2`, Limit{}, false}, // draft-07
		{`"remaining=";r=1`, Limit{}, false},
		{`"default";r=1.5`, Limit{}, false},
		{`"default";r`, Limit{}, false},
		{`"default`, Limit{}, false},
	}
	for _, tt := range tests {
		got, ok := parseLimitLine(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseLimitLine(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if !tt.ok {
			continue
		}
		back, err := parseLimits([]string{tt.in})
		if err != nil || !reflect.DeepEqual(back, []Limit{got}) {
			t.Errorf("parseLimits(%q) = %+v, %v; the fast path read %+v", tt.in, back, err, got)
		}
	}
}

// FuzzParseLimitLine: whatever line the fast path accepts, the validating
// Structured Fields parser reads as the same one Limit, without error.
func FuzzParseLimitLine(f *testing.F) {
	for _, s := range []string{
		`"default";r=9;t=1`, `"default";t=0;r=0`, `"x";r=1`, `"";r=0`,
		`"a";r=1;r=2`, `"a";r=1;t=2;x=3`, `"a" ;r=1`, `"a";r=01;t=000000000000009`,
		`"a";r=1,`, `"a";r=1;t=1 `, `"ä";r=1`, `"a\\";r=1`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		l, ok := parseLimitLine(in)
		if !ok {
			return
		}
		back, err := parseLimits([]string{in})
		if err != nil {
			t.Fatalf("parseLimitLine(%q) = %+v, but the Structured Fields parser refuses it: %v", in, l, err)
		}
		if !reflect.DeepEqual(back, []Limit{l}) {
			t.Fatalf("parseLimitLine(%q) = %+v, the Structured Fields parser reads %+v", in, l, back)
		}
	})
}

// The common response costs the Inspector no allocation once its policy
// is cached: the fast path parses RateLimit into the Inspector's slice.
func TestInspectorCommonResponseAllocs(t *testing.T) {
	h := http.Header{
		"Ratelimit-Policy": {`"default";q=10;w=2`},
		"Ratelimit":        {`"default";r=9;t=1`},
	}
	var c Inspector
	now := time.Unix(1e9, 0)
	first := c.Inspect(http.StatusOK, h, now, false)
	if first.LimitErr != nil || first.PolicyErr != nil || len(first.Limits) != 1 || first.Limits[0].Remaining != 9 || first.Draft != DraftCurrent {
		t.Fatalf("Inspect = %+v", first)
	}
	allocs := testing.AllocsPerRun(100, func() {
		in := c.Inspect(http.StatusOK, h, now, false)
		if in.LimitErr != nil || len(in.Limits) != 1 {
			t.Fatalf("Inspect = %+v", in)
		}
	})
	if allocs != 0 {
		t.Errorf("Inspect of the common response: %.0f allocations, want 0", allocs)
	}
	// r above q is still found by the consistency check.
	h["Ratelimit"] = []string{`"default";r=11;t=1`}
	if in := c.Inspect(http.StatusOK, h, now, false); in.LimitErr == nil {
		t.Errorf("Inspect of r=11 with q=10: no error")
	}
}
