package failoverdoc

import "testing"

// TestExtraSaved: WAIT saves at most the no-wait median's extra
// admissions; refusals below the model are a cost, not a saving.
func TestExtraSaved(t *testing.T) {
	tests := []struct {
		noWait, wait, saved, refused float64
	}{
		{10, -8, 10, 8}, // the run: 10, never 18
		{10, 0, 10, 0},
		{10, 3, 7, 0},
		{0, -2, 0, 2},
		{-1, 4, -4, 0}, // WAIT let more through: a negative saving, said as it is
	}
	for _, tt := range tests {
		if got := ExtraSaved(tt.noWait, tt.wait); got != tt.saved {
			t.Errorf("ExtraSaved(%v, %v) = %v, want %v", tt.noWait, tt.wait, got, tt.saved)
		}
		if got := RefusedByWait(tt.wait); got != tt.refused {
			t.Errorf("RefusedByWait(%v) = %v, want %v", tt.wait, got, tt.refused)
		}
	}
}

// TestMostlyDropped: a trial that dropped half or more of its plan.
func TestMostlyDropped(t *testing.T) {
	tests := []struct {
		decisions, dropped, failed int
		want                       bool
	}{
		{100, 0, 0, false},
		{100, 99, 0, false},
		{100, 100, 0, true},
		{40, 60, 0, true},
		{0, 0, 0, false},
	}
	for _, tt := range tests {
		tr := Trial{Decisions: tt.decisions, Dropped: tt.dropped, Failed: tt.failed}
		if got := tr.MostlyDropped(); got != tt.want {
			t.Errorf("Trial{decisions %d, dropped %d}.MostlyDropped() = %v, want %v", tt.decisions, tt.dropped, got, tt.want)
		}
	}
}
