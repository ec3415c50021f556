package cluster

import (
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

// TestReasonsPlurals: the verdict's reasons read as English for one and
// for many ("1 of 1 group spans", not "1 of 1 groups span").
func TestReasonsPlurals(t *testing.T) {
	tests := []struct {
		groups   []Group
		findings int
		scripts  int
		want     string
	}{
		{[]Group{{Crossslot: true}}, 1, 1, "1 of 1 group spans slots (CROSSSLOT); 1 key argument in 1 script does not come from KEYS"},
		{[]Group{{Crossslot: true}, {}}, 2, 2, "1 of 2 groups spans slots (CROSSSLOT); 2 key arguments in 2 scripts do not come from KEYS"},
		{[]Group{{Crossslot: true}, {Crossslot: true}, {}}, 0, 0, "2 of 3 groups span slots (CROSSSLOT)"},
	}
	for _, tt := range tests {
		r := Result{Groups: tt.groups, Findings: make([]lint.Finding, tt.findings), Scripts: make([]lint.ScriptReport, tt.scripts)}
		if got := strings.Join(r.Reasons(), "; "); got != tt.want {
			t.Errorf("Reasons() = %q, want %q", got, tt.want)
		}
	}
}
