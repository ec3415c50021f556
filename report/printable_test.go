package report

import (
	"testing"

	"github.com/ratelimit-dev/ratelimit/cluster"
)

func TestPrintable(t *testing.T) {
	tests := []struct{ in, want, lines string }{
		{"plain key", "plain key", "plain key"},
		{"ü 日本 🙂", "ü 日本 🙂", "ü 日本 🙂"},
		{"a\nb\x1b[31mred\x07ü", `a\nb\x1b[31mred\x07ü`, "a\nb\\x1b[31mred\\x07ü"},
		{"tab\there\r", `tab\there\r`, "tab\there\\r"},
		{"del\x7f nul\x00", `del\x7f nul\x00`, `del\x7f nul\x00`},
		{"c1 \u0085 \u009b", `c1 \u0085 \u009b`, `c1 \u0085 \u009b`},
		{"bad \xff\xc3 utf8", `bad \xff\xc3 utf8`, `bad \xff\xc3 utf8`},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := printableLines(tt.in); got != tt.lines {
			t.Errorf("printableLines(%q) = %q, want %q", tt.in, got, tt.lines)
		}
		if got := Printable(Printable(tt.in)); got != tt.want {
			t.Errorf("Printable twice (%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestKsKey pins how keyslot output shows a key: valid UTF-8 as is,
// control and invalid bytes escaped, and what it prints reads back as the
// same key with the --groups / redis-cli syntax.
func TestKsKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"rl:{user:42}:tb", "rl:{user:42}:tb"},
		{"grüße", "grüße"},
		{"a b", `"a b"`},
		{"a\nb\x1b[31mred\x07ü", `"a\nb\x1b[31mred\x07ü"`},
		{"q\"'\\", `"q\"'\\"`},
		{"c1\u0085", `"c1\xc2\x85"`},
		{"bad\xff", `"bad\xff"`},
		{"", `""`},
	}
	for _, tt := range tests {
		got := ksKey(tt.in)
		if got != tt.want {
			t.Errorf("ksKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := cluster.SplitArgs(got)
		if err != nil || len(back) != 1 || back[0] != tt.in {
			t.Errorf("SplitArgs(ksKey(%q)) = %q, %v; want the key back", tt.in, back, err)
		}
	}
}
