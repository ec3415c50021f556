package header

import "testing"

func TestIsToken(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"X-User-ID", true},
		{"GET", true},
		{"a", true},
		{"0", true},
		{"!#$%&'*+-.^_`|~", true},
		{"Content_Type.v2", true},
		{"X User", false},
		{"X-User:", false},
		{"(comment)", false},
		{`"quoted"`, false},
		{"a/b", false},
		{"a,b", false},
		{"a;b", false},
		{"a=b", false},
		{"a@b", false},
		{"[x]", false},
		{"{x}", false},
		{"a?b", false},
		{"a\\b", false},
		{"tab\there", false},
		{"new\nline", false},
		{"nul\x00", false},
		{"del\x7f", false},
		{"é", false},
		{"\x80", false},
	}
	for _, tt := range tests {
		if got := IsToken(tt.in); got != tt.want {
			t.Errorf("IsToken(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
