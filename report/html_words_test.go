package report

import (
	"strings"
	"testing"
)

// TestLoadDiffTitleFollowsTheCount: the aria-label of the chart of the
// count's distance from the expectation says what the verdict on the
// count says: within the tolerance only when it passed.
func TestLoadDiffTitleFollowsTheCount(t *testing.T) {
	res := fixtureLoad(t)
	tests := []struct {
		pass, faults bool
		want, not    string
	}{
		{true, false, "ends within the tolerance", "outside"},
		{false, false, "ends outside the tolerance (the count fails)", "within"},
		{false, true, "ends outside the tolerance (a warning under --fault)", "within"},
	}
	for _, tt := range tests {
		r := *res
		x := *res.Expect
		x.Pass = tt.pass
		r.Expect = &x
		if tt.faults {
			r.Faults = loadFault("open").Faults
		}
		var b strings.Builder
		loadHTML(&b, &r)
		label := `aria-label="cumulative admitted minus expected: the count ` + tt.want + `"`
		if page := b.String(); !strings.Contains(page, label) || strings.Contains(page, `aria-label="cumulative admitted minus expected: the count ends `+tt.not) {
			t.Errorf("pass %v, faults %v: the page lacks %s", tt.pass, tt.faults, label)
		}
	}
}

// TestLoadBucketTitle: the histogram's tooltips count in words that fit
// the number, and name the bucket's lower bound.
func TestLoadBucketTitle(t *testing.T) {
	bounds := []float64{0.1, 0.3, 1}
	tests := []struct {
		n    int64
		i    int
		want string
	}{
		{0, 0, "no request at most 0.1 ms"},
		{1, 1, "1 request over 0.1 ms and at most 0.3 ms"},
		{1500, 2, "1,500 requests over 0.3 ms and at most 1 ms"},
	}
	for _, tt := range tests {
		if got := loadBucketTitle(tt.n, bounds, tt.i); got != tt.want {
			t.Errorf("loadBucketTitle(%d, %v, %d) = %q, want %q", tt.n, bounds, tt.i, got, tt.want)
		}
	}
}

// TestLoadLatencyChartHasP95: the HTML latency percentiles chart draws
// p95 beside p50, p90, p99 and max, as the latency table does.
func TestLoadLatencyChartHasP95(t *testing.T) {
	var b strings.Builder
	loadHTML(&b, fixtureLoad(t))
	page := b.String()
	for _, p := range []string{"p50", "p90", "p95", "p99", "max"} {
		if !strings.Contains(page, `text-anchor="middle">`+p+`</text>`) || !strings.Contains(page, "<title>"+p+" from due time: ") {
			t.Errorf("the latency chart has no %s group", p)
		}
	}
	if !strings.Contains(page, `<th class="num">p95</th>`) {
		t.Error("the latency table has no p95 column")
	}
}
