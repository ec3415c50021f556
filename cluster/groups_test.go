package cluster

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCheckGroup(t *testing.T) {
	tests := []struct {
		name      string
		keys      []string
		crossslot bool
		slots     []int
		fix       string // substring of Fix
	}{
		{"same tag", []string{"rl:{user:42}:minute", "rl:{user:42}:day"}, false, []int{Slot("user:42")}, ""},
		{"one key", []string{"rl:global"}, false, []int{Slot("rl:global")}, ""},
		{"no identity", []string{"rl:user:42:minute", "rl:global:minute"}, true,
			sorted(Slot("rl:user:42:minute"), Slot("rl:global:minute")), "share no identity"},
		{"shared identity", []string{"rl:user:42:minute", "rl:user:42:day"}, true,
			sorted(Slot("rl:user:42:minute"), Slot("rl:user:42:day")), `rl:{user:42}:minute rl:{user:42}:day`},
		{"middle identity", []string{"tb:tenant:7", "sw:tenant:7:x"}, true,
			sorted(Slot("tb:tenant:7"), Slot("sw:tenant:7:x")), `tb:{tenant:7} sw:{tenant:7}:x`},
		{"different tags", []string{"a:{x}", "b:{y}"}, true, sorted(Slot("x"), Slot("y")), `different hash tags (x, y)`},
		{"same slot without tags", []string{"123456789", "123456789"}, false, []int{12739}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := CheckGroup(tt.keys)
			if g.Crossslot != tt.crossslot {
				t.Errorf("CheckGroup(%q).Crossslot = %v, want %v", tt.keys, g.Crossslot, tt.crossslot)
			}
			if !slices.Equal(g.Slots, tt.slots) {
				t.Errorf("CheckGroup(%q).Slots = %v, want %v", tt.keys, g.Slots, tt.slots)
			}
			if !strings.Contains(g.Fix, tt.fix) || (tt.fix == "") != (g.Fix == "") {
				t.Errorf("CheckGroup(%q).Fix = %q, want it to contain %q", tt.keys, g.Fix, tt.fix)
			}
			if g.Crossslot {
				n := 0
				for _, sk := range g.BySlot {
					for _, k := range sk.Keys {
						if Slot(k) != sk.Slot {
							t.Errorf("BySlot lists %q under slot %d, its slot is %d", k, sk.Slot, Slot(k))
						}
						n++
					}
				}
				if n != len(tt.keys) {
					t.Errorf("BySlot lists %d keys, want %d", n, len(tt.keys))
				}
			}
		})
	}
}

func TestSuggestedFixWorks(t *testing.T) {
	g := CheckGroup([]string{"rl:user:42:minute", "rl:user:42:day", "rl:user:42:tb:tokens"})
	const prefix = "put the shared part in {} so the keys hash together: "
	if !strings.HasPrefix(g.Fix, prefix) {
		t.Fatalf("Fix = %q, want prefix %q", g.Fix, prefix)
	}
	fixed, err := SplitArgs(strings.TrimPrefix(g.Fix, prefix))
	if err != nil {
		t.Fatal(err)
	}
	if len(fixed) != 3 {
		t.Fatalf("fix proposes %d keys, want 3: %q", len(fixed), fixed)
	}
	if f := CheckGroup(fixed); f.Crossslot {
		t.Errorf("proposed keys %q still span slots %v", fixed, f.Slots)
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		line string
		want []string
		err  bool
	}{
		{"a b  c", []string{"a", "b", "c"}, false},
		{"\ta\t", []string{"a"}, false},
		{"", nil, false},
		{`"a b" c`, []string{"a b", "c"}, false},
		{`"\x00\xff\n\"" 'it\'s'`, []string{"\x00\xff\n\"", "it's"}, false},
		{`rl:{user 42}:tb "{}" ""`, []string{"rl:{user", "42}:tb", "{}", ""}, false},
		{`"unterminated`, nil, true},
		{`"a"b`, nil, true},
		{`'a`, nil, true},
		{`a"b`, []string{`a"b`}, false},
	}
	for _, tt := range tests {
		got, err := SplitArgs(tt.line)
		if (err != nil) != tt.err {
			t.Errorf("SplitArgs(%q) error = %v, want error %v", tt.line, err, tt.err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("SplitArgs(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// TestQuoteArgUTF8: valid UTF-8 is shown as it is; only control bytes
// (C0, DEL, C1) and bytes that are not UTF-8 are escaped.
func TestQuoteArgUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ü", "ü"},
		{"rl:{üser:42}:tb", "rl:{üser:42}:tb"},
		{"日本:{キー}", "日本:{キー}"},
		{"\uFFFD", "\uFFFD"}, // the replacement character itself is valid
		{"ü b", `"ü b"`},
		{"a\u00a0b", "\"a\u00a0b\""}, // a Unicode space: quoted, not escaped
		{"\xc3", `"\xc3"`},           // a cut-off ü
		{"a\xffü", `"a\xffü"`},
		{"\x1b[31mred", `"\x1b[31mred"`},
		{"\x7f", `"\x7f"`},
		{"\u0085", `"\xc2\x85"`}, // NEL, a C1 control
		{"\u009b31m", `"\xc2\x9b31m"`},
		{"\u00a0", "\"\u00a0\""},
		{"tab\there", `"tab\there"`},
	}
	for _, tt := range tests {
		if got := QuoteArg(tt.in); got != tt.want {
			t.Errorf("QuoteArg(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzQuoteArgRoundTrip(f *testing.F) {
	f.Add("rl:{user 42}:tb")
	f.Add("\x00\"'\\")
	f.Add("")
	f.Add("ü\u0085\xff")
	f.Fuzz(func(t *testing.T, s string) {
		q := QuoteArg(s)
		got, err := SplitArgs(q)
		if err != nil || len(got) != 1 || got[0] != s {
			t.Fatalf("SplitArgs(QuoteArg(%q)) = %q, %v", s, got, err)
		}
		// What a terminal shows: valid UTF-8 without control characters.
		if !utf8.ValidString(q) {
			t.Fatalf("QuoteArg(%q) = %q is not valid UTF-8", s, q)
		}
		for _, r := range q {
			if unicode.IsControl(r) {
				t.Fatalf("QuoteArg(%q) = %q holds the control character %U", s, q, r)
			}
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) && !strings.ContainsAny(s, "\\\"") && !strings.Contains(q, s) {
			t.Fatalf("QuoteArg(%q) = %q escapes valid UTF-8", s, q)
		}
	})
}

func sorted(s ...int) []int {
	slices.Sort(s)
	return slices.Compact(s)
}

func TestFixNamesAFew(t *testing.T) {
	var keys, tagged []string
	for i := range 20 {
		keys = append(keys, "rl:user:42:w"+strconv.Itoa(i))
		tagged = append(tagged, "rl:{t"+strconv.Itoa(i)+"}:x")
	}
	g := CheckGroup(keys)
	if !strings.HasSuffix(g.Fix, "rl:{user:42}:w7 and 12 more") || strings.Count(g.Fix, "{user:42}") != 8 {
		t.Errorf("Fix for 20 keys = %q", g.Fix)
	}
	g = CheckGroup(tagged)
	if !strings.Contains(g.Fix, "t7 and 12 more)") {
		t.Errorf("Fix for 20 tags = %q", g.Fix)
	}
}
