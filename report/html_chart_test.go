package report

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/race"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// svgRect is a bar drawn by barChart.
type svgRect struct {
	class     string
	y, height float64
}

var (
	rectRE    = regexp.MustCompile(`<rect class="([^"]+)" x="[-\d.]+" y="([-\d.]+)" width="[\d.]+" height="([\d.]+)"/>`)
	polygonRE = regexp.MustCompile(`<polygon class="([^"]+)" points="([^"]+)">`)
	valueRE   = regexp.MustCompile(`<text class="value"[^>]*>([^<]*)</text>`)
)

// svgRects lists the bars of class cls in an SVG (legend squares, which
// are 10 high at y 7, are left out by their position).
func svgRects(t *testing.T, svg, cls string) []svgRect {
	t.Helper()
	var out []svgRect
	for _, m := range rectRE.FindAllStringSubmatch(svg, -1) {
		if m[1] != cls {
			continue
		}
		y, _ := strconv.ParseFloat(m[2], 64)
		h, _ := strconv.ParseFloat(m[3], 64)
		if y < 20 { // the legend row
			continue
		}
		out = append(out, svgRect{m[1], y, h})
	}
	return out
}

// svgValues lists the value labels written above bars.
func svgValues(svg string) []string {
	var out []string
	for _, m := range valueRE.FindAllStringSubmatch(svg, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestBarMinHeight: a bar of count 1 next to thousands, on a linear and
// on a log axis, is at least minBarPx tall (it was 0.5 px, which looks
// like no bar), and a stacked segment of 1 keeps its height too.
func TestBarMinHeight(t *testing.T) {
	for _, logY := range []bool{false, true} {
		c := barChart{logY: logY, ints: true, groups: []barGroup{{bars: []bar{
			{segs: []seg{{1, "one"}}}, {segs: []seg{{5000, "many"}}}, {segs: []seg{{0, "zero"}}},
			{segs: []seg{{5000, "base"}, {1, "top"}}},
		}}}}
		svg := c.svg()
		for _, cls := range []string{"one", "top"} {
			rs := svgRects(t, svg, cls)
			if len(rs) != 1 || rs[0].height < minBarPx {
				t.Errorf("logY=%v: bars of class %s = %+v, want one at least %v px tall", logY, cls, rs, minBarPx)
			}
		}
		if rs := svgRects(t, svg, "zero"); len(rs) != 0 {
			t.Errorf("logY=%v: a count of 0 draws %+v, want no bar", logY, rs)
		}
		// The segment on top starts where the base ends: no overlap.
		base, top := svgRects(t, svg, "base"), svgRects(t, svg, "top")
		if len(base) == 1 && len(top) == 1 && top[0].y+top[0].height > base[0].y+0.05 {
			t.Errorf("logY=%v: stacked segment %+v overlaps its base %+v", logY, top[0], base[0])
		}
	}
}

// TestLogScaleLowestDecade: the smallest positive value sits above the
// bottom of a log axis, so its bar has a height of its own.
func TestLogScaleLowestDecade(t *testing.T) {
	tests := []struct {
		minPos, maxV float64
		ints         bool
		lo, hi       float64
	}{
		{100, 10000, true, 10, 10000},
		{19, 10000, true, 10, 10000},
		{1, 277, true, 1, 1000},
		{0.5, 35.6, false, 0.1, 100},
		{0.01, 35, false, 0.001, 100},
	}
	for _, tt := range tests {
		sc := newScale(0, 100, tt.minPos, tt.maxV, true, tt.ints)
		if sc.lo != tt.lo || sc.hi != tt.hi {
			t.Errorf("newScale(min %v, max %v, ints %v) = lo %v hi %v, want lo %v hi %v", tt.minPos, tt.maxV, tt.ints, sc.lo, sc.hi, tt.lo, tt.hi)
		}
		if tt.minPos > sc.lo && sc.y(tt.minPos) >= sc.bottom {
			t.Errorf("newScale(min %v): the smallest value sits on the axis", tt.minPos)
		}
	}
}

// bigRace is a race of 10000 goroutines against a limit of 100: the
// racy strategies admit everything, the atomic ones the limit, and a
// WATCH that gave up often admits 19 to 24.
func bigRace() race.Result {
	return race.Result{Concurrency: 10000, Limit: 100, Trials: 3, Verdict: "pass", Strategies: []race.Strategy{
		{Label: "naive GET+SET", Allowed: []int{10000, 10000, 9998}},
		{Label: "WATCH/MULTI", AtomicExpected: true, Allowed: []int{19, 24, 21}},
		{Label: "Lua script", AtomicExpected: true, Allowed: []int{100, 100, 100}},
	}}
}

// raceChart renders a race and returns its chart of admissions.
func raceChart(t *testing.T, res race.Result) string {
	t.Helper()
	var b strings.Builder
	raceHTML(&b, res)
	page := b.String()
	start := strings.Index(page, `aria-label="admitted per strategy and trial`)
	if start < 0 {
		t.Fatal("no chart of admissions")
	}
	return page[start : start+strings.Index(page[start:], "</svg>")]
}

// TestRaceChartSmallCountsVisible: with 10000 goroutines and a limit of
// 100, the atomic strategies' bars (100 and 19-24) are tall enough to
// see, the axis says it is a log scale, and every bar carries its value.
// On the old linear 0-10000 axis the limit bar was about 2 px.
func TestRaceChartSmallCountsVisible(t *testing.T) {
	svg := raceChart(t, bigRace())
	if !strings.Contains(svg, "admitted of 10000 requests (log scale)") {
		t.Error("the axis of a 10000-against-100 race is not labelled as a log scale")
	}
	atomic := svgRects(t, svg, "atomic")
	if len(atomic) != 6 {
		t.Fatalf("atomic bars = %+v, want 6", atomic)
	}
	for i, r := range atomic {
		min := 40.0 // the limit's bars: a third of the plot
		if i < 3 {
			min = 10 // 19-24 admitted
		}
		if r.height < min {
			t.Errorf("atomic bar %d is %v px tall, want at least %v", i, r.height, min)
		}
	}
	want := []string{"10000", "10000", "9998", "19", "24", "21", "100", "100", "100"}
	if got := svgValues(svg); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("bar values = %v, want %v", got, want)
	}
}

// TestRaceChartLinearWhenClose: a race whose counts are within a factor
// of raceLogRatio of the limit keeps its linear axis (bars compare by
// height there), still with values on the bars.
func TestRaceChartLinearWhenClose(t *testing.T) {
	res := bigRace()
	res.Concurrency, res.Limit = 200, 10
	res.Strategies[0].Allowed = []int{200, 196, 200}
	res.Strategies[1].Allowed = []int{10, 10, 10}
	res.Strategies[2].Allowed = []int{10, 10, 10}
	svg := raceChart(t, res)
	if strings.Contains(svg, "log scale") {
		t.Error("a 200-against-10 race is drawn on a log scale")
	}
	if got := svgValues(svg); len(got) != 9 || got[0] != "200" || got[8] != "10" {
		t.Errorf("bar values = %v", got)
	}
}

// polygonYs returns the y extent of a polygon's points.
func polygonYs(t *testing.T, points string) (lo, hi float64) {
	t.Helper()
	lo, hi = 1e9, -1e9
	for _, p := range strings.Fields(points) {
		_, ys, ok := strings.Cut(p, ",")
		if !ok {
			t.Fatalf("point %q", p)
		}
		y, err := strconv.ParseFloat(ys, 64)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi = min(lo, y), max(hi, y)
	}
	return lo, hi
}

// TestLoadToleranceBand: the tolerance around the expectation is a
// filled polygon with a legend entry, on the cumulative chart and on the
// chart of the difference, where ±tolerance is tall enough to see.
func TestLoadToleranceBand(t *testing.T) {
	res := fixtureLoad(t)
	var b strings.Builder
	loadHTML(&b, res)
	page := b.String()
	bands := polygonRE.FindAllStringSubmatch(page, -1)
	if len(bands) != 2 {
		t.Fatalf("page has %d band polygons, want 2 (cumulative and difference)", len(bands))
	}
	legend := "expected ±" + strconv.FormatInt(res.Expect.Tolerance, 10) + " (the verdict&#39;s tolerance)"
	if n := strings.Count(page, `<rect class="band-expected"`); n != 2 || !strings.Contains(page, legend) {
		t.Errorf("band legend: %d squares, text %q present %v", n, legend, strings.Contains(page, legend))
	}
	for _, m := range bands {
		if m[1] != "band-expected" {
			t.Errorf("band class %q", m[1])
		}
	}
	lo, hi := polygonYs(t, bands[1][2])
	if hi-lo < 40 {
		t.Errorf("the band on the difference chart is %v px tall, want at least 40", hi-lo)
	}
	if !strings.Contains(page, `aria-label="cumulative admitted minus expected: the count ends within the tolerance"`) {
		t.Error("no chart of the difference from the expectation")
	}
}

// TestLoadHistogramCountOne: a bucket holding one request draws a bar of
// at least minBarPx, labelled 1.
func TestLoadHistogramCountOne(t *testing.T) {
	res := fixtureLoad(t)
	// One slow request past every other bucket (of both histograms).
	res.LatencyHistogram.Buckets = append(res.LatencyHistogram.Buckets, tally.Bucket{LeMs: 1e6, Count: 1})
	svg := loadHistogramChart(res)
	rs := svgRects(t, svg, "lat-send")
	if len(rs) == 0 {
		t.Fatal("no bars")
	}
	last := rs[len(rs)-1]
	if last.height < minBarPx {
		t.Errorf("a count of 1 is %v px tall, want at least %v", last.height, minBarPx)
	}
	if vs := svgValues(svg); len(vs) == 0 || vs[len(vs)-1] != "1" {
		t.Errorf("values = %v, want the last to be 1", vs)
	}
}
