package header

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestFormatPolicies(t *testing.T) {
	tests := []struct {
		name string
		in   []Policy
		want string
	}{
		{"serve token bucket 10 at 5/s", []Policy{{Name: "default", Quota: 10, Window: 2}}, `"default";q=10;w=2`},
		{"no window", []Policy{{Name: "default", Quota: 100}}, `"default";q=100`},
		{"zero quota", []Policy{{Name: "closed", Quota: 0, Window: 1}}, `"closed";q=0;w=1`},
		{"all parameters in the draft's order", []Policy{{Name: "peruser", Quota: 65535, Window: 10, QuotaUnit: "content-bytes", PartitionKey: "u1"}},
			`"peruser";q=65535;qu="content-bytes";w=10;pk=:dTE=:`},
		{"two policies", []Policy{{Name: "permin", Quota: 50, Window: 60}, {Name: "perhr", Quota: 1000, Window: 3600}},
			`"permin";q=50;w=60, "perhr";q=1000;w=3600`},
		{"quote and backslash escaped", []Policy{{Name: `a"b\c`, Quota: 1, Window: 1}}, `"a\"b\\c";q=1;w=1`},
		{"largest integer", []Policy{{Name: "big", Quota: 999_999_999_999_999, Window: 1}}, `"big";q=999999999999999;w=1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FormatPolicies(tt.in...)
			if err != nil {
				t.Fatalf("FormatPolicies: %v", err)
			}
			if got != tt.want {
				t.Errorf("FormatPolicies(%+v) = %s, want %s", tt.in, got, tt.want)
			}
			back, err := ParsePolicies([]string{got})
			if err != nil {
				t.Fatalf("ParsePolicies(%s): %v", got, err)
			}
			if !reflect.DeepEqual(back, tt.in) {
				t.Errorf("ParsePolicies(%s) = %+v, want %+v", got, back, tt.in)
			}
		})
	}
}

func TestFormatLimits(t *testing.T) {
	tests := []struct {
		in   []Limit
		want string
	}{
		{[]Limit{{Name: "default", Remaining: 0, Reset: 1}}, `"default";r=0;t=1`},
		{[]Limit{{Name: "default", Remaining: 9, Reset: 0}}, `"default";r=9;t=0`},
		{[]Limit{{Name: "default", Remaining: 999, Reset: NoReset, PartitionKey: "trial121323"}}, `"default";r=999;pk=:dHJpYWwxMjEzMjM=:`},
		{[]Limit{{Name: "a", Remaining: 1, Reset: 2}, {Name: "b", Remaining: 3, Reset: 4}}, `"a";r=1;t=2, "b";r=3;t=4`},
	}
	for _, tt := range tests {
		got, err := FormatLimits(tt.in...)
		if err != nil {
			t.Fatalf("FormatLimits(%+v): %v", tt.in, err)
		}
		if got != tt.want {
			t.Errorf("FormatLimits(%+v) = %s, want %s", tt.in, got, tt.want)
		}
		if s := tt.in[0].String(); !strings.HasPrefix(tt.want, s) {
			t.Errorf("Limit.String() = %s, want prefix of %s", s, tt.want)
		}
	}
	if got := (Policy{Name: "default", Quota: 10, Window: 2}).String(); got != `"default";q=10;w=2` {
		t.Errorf("Policy.String() = %s", got)
	}
}

func TestFormatRejects(t *testing.T) {
	policies := []Policy{
		{Name: "neg", Quota: -1},
		{Name: "huge", Quota: 1_000_000_000_000_000},
		{Name: "negw", Quota: 1, Window: -1},
		{Name: "tab\tname", Quota: 1},
		{Name: "ünïcode", Quota: 1},
		{Name: "unit", Quota: 1, QuotaUnit: "bad\x7f"},
	}
	for _, p := range policies {
		if s, err := FormatPolicies(p); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("FormatPolicies(%+v) = %q, %v; want ErrInvalid", p, s, err)
		}
		if s := p.String(); !strings.HasPrefix(s, "invalid policy: ") {
			t.Errorf("Policy.String() = %q, want the invalid description", s)
		}
	}
	limits := []Limit{
		{Name: "neg", Remaining: -1, Reset: 1},
		{Name: "negt", Remaining: 1, Reset: -2},
		{Name: "nl\n", Remaining: 1, Reset: 1},
	}
	for _, l := range limits {
		if s, err := FormatLimits(l); err == nil {
			t.Errorf("FormatLimits(%+v) = %q, want error", l, s)
		}
	}
	if _, err := FormatPolicies(); err == nil {
		t.Error("FormatPolicies() with no policy: want error")
	}
	if _, err := FormatLimits(); err == nil {
		t.Error("FormatLimits() with no limit: want error")
	}
}

func TestParsePolicies(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []Policy
		err   string // substring of the error; "" for success
	}{
		{"draft example", []string{`"default";q=100;w=10`}, []Policy{{Name: "default", Quota: 100, Window: 10}}, ""},
		{"two policies", []string{`"permin";q=50;w=60,"perhr";q=1000;w=3600`},
			[]Policy{{Name: "permin", Quota: 50, Window: 60}, {Name: "perhr", Quota: 1000, Window: 3600}}, ""},
		{"split over two lines", []string{`"permin";q=50;w=60`, `"perhr";q=1000;w=3600`},
			[]Policy{{Name: "permin", Quota: 50, Window: 60}, {Name: "perhr", Quota: 1000, Window: 3600}}, ""},
		{"pk and qu", []string{`"peruser";q=65535;qu="content-bytes";w=10;pk=:c2RmakxKVU9VSA==:`},
			[]Policy{{Name: "peruser", Quota: 65535, Window: 10, QuotaUnit: "content-bytes", PartitionKey: "sdfjLJUOUH"}}, ""},
		{"token name accepted", []string{`default;q=10;w=2`}, []Policy{{Name: "default", Quota: 10, Window: 2}}, ""},
		{"unknown parameter is a comment", []string{`"d";q=1;w=1;acme-burst=5`}, []Policy{{Name: "d", Quota: 1, Window: 1}}, ""},
		{"whitespace", []string{`  "d";q=1  `}, []Policy{{Name: "d", Quota: 1}}, ""},
		{"missing q", []string{`"d";w=1`}, nil, "missing required q"},
		{"w zero", []string{`"d";q=1;w=0`}, nil, "w=0 must be a positive"},
		{"w negative", []string{`"d";q=1;w=-5`}, nil, "w=-5"},
		{"q negative", []string{`"d";q=-1`}, nil, "q=-1"},
		{"q decimal", []string{`"d";q=1.5`}, nil, "q must be an Integer, got a Decimal"},
		{"q string", []string{`"d";q="10"`}, nil, "q must be an Integer, got a String"},
		{"w boolean", []string{`"d";q=1;w`}, nil, "w must be an Integer, got a Boolean"},
		{"qu token", []string{`"d";q=1;qu=requests`}, nil, "qu must be a String"},
		{"pk string", []string{`"d";q=1;pk="x"`}, nil, "pk must be a Byte Sequence"},
		{"draft-06/07: an Integer quota", []string{`10;w=2`}, []Policy{{Quota: 10, Window: 2, Draft: DraftPre08Policy}}, ""},
		{"draft-06/07: several", []string{`10;w=1, 1000;w=3600`}, []Policy{{Quota: 10, Window: 1, Draft: DraftPre08Policy}, {Quota: 1000, Window: 3600, Draft: DraftPre08Policy}}, ""},
		{"draft-06/07: negative", []string{`-1;w=2`}, nil, "must not be negative"},
		{"draft-06/07: w zero", []string{`10;w=0`}, nil, "w=0"},
		{"name decimal", []string{`1.5;q=1`}, nil, "must be a String, got a Decimal"},
		{"inner list", []string{`("a" "b");q=1`}, nil, "inner list"},
		{"not structured", []string{`q=10, w=2 ;;`}, nil, "not a Structured Field List"},
		{"empty", []string{""}, nil, "empty"},
		{"no lines", nil, nil, "empty"},
		{"q too large", []string{`"d";q=9999999999999999`}, nil, "not a Structured Field List"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePolicies(tt.lines)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("ParsePolicies(%q) = %+v, %v; want error containing %q", tt.lines, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePolicies(%q): %v", tt.lines, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePolicies(%q) = %+v, want %+v", tt.lines, got, tt.want)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []Limit
		err   string
	}{
		{"draft example", []string{`"default";r=50;t=30`}, []Limit{{Name: "default", Remaining: 50, Reset: 30}}, ""},
		{"no reset", []string{`"default";r=999;pk=:dHJpYWwxMjEzMjM=:`}, []Limit{{Name: "default", Remaining: 999, Reset: NoReset, PartitionKey: "trial121323"}}, ""},
		{"serve refused", []string{`"default";r=0;t=1`}, []Limit{{Name: "default", Remaining: 0, Reset: 1}}, ""},
		{"missing r", []string{`"default";t=1`}, nil, "missing required r"},
		{"negative r", []string{`"default";r=-1;t=1`}, nil, "r=-1"},
		{"negative t", []string{`"default";r=1;t=-1`}, nil, "t=-1"},
		{"decimal t", []string{`"default";r=1;t=0.5`}, nil, "t must be an Integer"},
		{"draft-07", []string{`limit=10, remaining=5, reset=2`}, []Limit{{Quota: 10, Remaining: 5, Reset: 2, Draft: Draft07}}, ""},
		{"draft-07 without reset", []string{`limit=10, remaining=5`}, []Limit{{Quota: 10, Remaining: 5, Reset: NoReset, Draft: Draft07}}, ""},
		{"draft-07 negative", []string{`limit=10, remaining=-5`}, nil, "non-negative Integer"},
		{"draft-07 decimal", []string{`limit=10, remaining=5, reset=0.5`}, nil, "non-negative Integer"},
		{"garbage", []string{`limit=10;; remaining=5`}, nil, "not a Structured Field List"},
		{"token without r", []string{`limit, remaining`}, nil, "missing required r"},
		{"bad syntax", []string{`"unterminated;r=1`}, nil, "not a Structured Field List"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLimits(tt.lines)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseLimits(%q) = %+v, %v; want error containing %q", tt.lines, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLimits(%q): %v", tt.lines, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseLimits(%q) = %+v, want %+v", tt.lines, got, tt.want)
			}
		})
	}
}

func TestCheckConsistent(t *testing.T) {
	ps := []Policy{{Name: "default", Quota: 10, Window: 2}}
	if err := CheckConsistent(ps, []Limit{{Name: "default", Remaining: 10, Reset: 0}}); err != nil {
		t.Errorf("r == q: %v", err)
	}
	if err := CheckConsistent(ps, []Limit{{Name: "other", Remaining: 99, Reset: 0}}); err != nil {
		t.Errorf("unrelated limit: %v", err)
	}
	err := CheckConsistent(ps, []Limit{{Name: "default", Remaining: 11, Reset: 0}})
	if err == nil || !strings.Contains(err.Error(), "r=11 exceeds the policy's q=10") {
		t.Errorf("r > q: err = %v", err)
	}
}

func TestSet(t *testing.T) {
	h := http.Header{}
	err := Set(h, []Policy{{Name: "default", Quota: 10, Window: 2}}, []Limit{{Name: "default", Remaining: 0, Reset: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("RateLimit-Policy"); got != `"default";q=10;w=2` {
		t.Errorf("RateLimit-Policy = %s", got)
	}
	if got := h.Get("RateLimit"); got != `"default";r=0;t=1` {
		t.Errorf("RateLimit = %s", got)
	}
	if err := Set(h, []Policy{{Name: "x", Quota: -1}}, nil); err == nil {
		t.Error("Set with an invalid policy: want error")
	}
}

func FuzzParsePolicies(f *testing.F) {
	for _, s := range []string{`"default";q=10;w=2`, `"a";q=1, "b";q=2;w=3;qu="requests";pk=:AQID:`,
		`x;q=1`, `"d";q=-1`, `("a");q=1`, `"d";q=1.5`, ``, `"\"";q=0;w=999999999999999`, `10;w=2`, `-0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePolicies([]string{s})
		if err != nil {
			return
		}
		// an older draft's item is read as it is and written in the
		// current syntax: the round trip keeps everything but the draft
		for i := range ps {
			ps[i].Draft = ""
		}
		out, err := FormatPolicies(ps...)
		if err != nil {
			t.Fatalf("FormatPolicies(ParsePolicies(%q) = %+v): %v", s, ps, err)
		}
		back, err := ParsePolicies([]string{out})
		if err != nil {
			t.Fatalf("ParsePolicies(%q) (formatted from %q): %v", out, s, err)
		}
		if !reflect.DeepEqual(back, ps) {
			t.Fatalf("round trip of %q: %+v, want %+v", s, back, ps)
		}
	})
}

func FuzzParseLimits(f *testing.F) {
	for _, s := range []string{`"default";r=0;t=1`, `"d";r=999;pk=:dHJpYWwxMjEzMjM=:`, `"d";t=1`, `a;r=1, b;r=2;t=3`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ls, err := ParseLimits([]string{s})
		if err != nil {
			return
		}
		out, err := FormatLimits(ls...)
		if err != nil {
			t.Fatalf("FormatLimits(ParseLimits(%q) = %+v): %v", s, ls, err)
		}
		back, err := ParseLimits([]string{out})
		if err != nil || !reflect.DeepEqual(back, ls) {
			t.Fatalf("round trip of %q via %q: %+v, %v; want %+v", s, out, back, err, ls)
		}
	})
}

// FuzzFormatPolicy starts from values: whatever FormatPolicies accepts,
// ParsePolicies gives back unchanged.
func FuzzFormatPolicy(f *testing.F) {
	f.Add("default", int64(10), int64(2), "", "")
	f.Add("peruser", int64(65535), int64(10), "content-bytes", "\x00\xff")
	f.Fuzz(func(t *testing.T, name string, q, w int64, qu, pk string) {
		p := Policy{Name: name, Quota: q, Window: w, QuotaUnit: qu, PartitionKey: pk}
		s, err := FormatPolicies(p)
		if err != nil {
			return
		}
		back, err := ParsePolicies([]string{s})
		if err != nil {
			t.Fatalf("ParsePolicies(%q) from %+v: %v", s, p, err)
		}
		if len(back) != 1 || back[0] != p {
			t.Fatalf("ParsePolicies(FormatPolicies(%+v)) = %+v", p, back)
		}
	})
}

func FuzzFormatLimit(f *testing.F) {
	f.Add("default", int64(0), int64(1), "")
	f.Add("d", int64(5), int64(NoReset), "k")
	f.Fuzz(func(t *testing.T, name string, r, reset int64, pk string) {
		l := Limit{Name: name, Remaining: r, Reset: reset, PartitionKey: pk}
		s, err := FormatLimits(l)
		if err != nil {
			return
		}
		back, err := ParseLimits([]string{s})
		if err != nil || len(back) != 1 || back[0] != l {
			t.Fatalf("ParseLimits(FormatLimits(%+v) = %q) = %+v, %v", l, s, back, err)
		}
	})
}
