package report

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Charts for the HTML page, written as inline SVG by hand: bar charts
// (stacked and grouped, with an optional step line and a reference line)
// and line plots (with an optional band). All text is escaped; styling
// comes from classes defined in the page's CSS, so the SVG carries no
// colours of its own.

// esc escapes text for HTML and SVG, attributes included; control bytes
// are shown as printable shows them, so they are visible and the page
// stays well-formed XML.
func esc(s string) string { return html.EscapeString(Printable(s)) }

// num prints a coordinate compactly; a value that is not finite (which
// no SVG viewer draws) prints as 0.
func num(f float64) string { return strconv.FormatFloat(finite(f), 'f', 1, 64) }

// finite clamps a value from a document to what a chart can scale: NaN
// is 0, and magnitudes beyond maxFloat are maxFloat, so that no axis
// overflows to Inf and no tick loop runs forever.
func finite(f float64) float64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f > maxFloat:
		return maxFloat
	case f < -maxFloat:
		return -maxFloat
	}
	return f
}

// legendItem names a class in a chart's legend.
type legendItem struct{ name, class string }

// seg is one stacked segment of a bar.
type seg struct {
	value float64
	class string
}

// bar is one bar: segments from the bottom up, a label under it, a
// tooltip and, when value is set, that text written above the bar.
type bar struct {
	segs  []seg
	label string
	title string
	value string
}

func (b bar) total() float64 {
	t := 0.0
	for _, s := range b.segs {
		t += finite(s.value)
	}
	return finite(t)
}

// barGroup is bars drawn side by side under one label.
type barGroup struct {
	label string
	bars  []bar
}

// refLine is a horizontal line at value with a label.
type refLine struct {
	value float64
	label string
	class string
}

// barChart is a vertical bar chart.
type barChart struct {
	title  string // aria label and <title>
	yLabel string
	legend []legendItem
	groups []barGroup
	// line, when set, has one value per bar (all groups flattened) and is
	// drawn as a step line across each bar's slot.
	line      []float64
	lineClass string
	ref       *refLine
	// logY draws a logarithmic y axis (single-segment bars only).
	logY bool
	// ints keeps the ticks of small counts whole.
	ints   bool
	width  int
	height int
	// shades are spans of the x axis, in bar slots (0 is the first
	// bar's left edge), drawn behind the bars with their label: the
	// fault windows of a load run. One group only.
	shades []shade
}

// shade is one shaded span of a bar chart.
type shade struct {
	from, to float64 // bar slots
	label    string
	title    string
}

// niceCeil returns a round upper bound for v and a tick step (1, 2 or 5
// times a power of ten), aiming at about five ticks.
func niceCeil(v float64) (top, step float64) {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1, 0.2
	}
	v = finite(v)
	raw := v / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	top = math.Ceil(v/step-1e-9) * step
	return top, step
}

// tickLabel prints an axis value without needless decimals.
func tickLabel(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// svgOpen starts an svg element scaled to its container's width.
func svgOpen(b *strings.Builder, w, h int, title string) {
	fmt.Fprintf(b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s"><title>%s</title>`+"\n",
		w, h, w, h, esc(title), esc(title))
}

// legend draws coloured squares with names in one row at y.
func legend(b *strings.Builder, items []legendItem, x, y float64) {
	for _, it := range items {
		if strings.HasPrefix(it.class, "line") || strings.HasPrefix(it.class, "ref") {
			fmt.Fprintf(b, `<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s"/>`, esc(it.class), num(x), num(y-4), num(x+14), num(y-4))
		} else if strings.HasPrefix(it.class, "band") {
			fmt.Fprintf(b, `<rect class="%s" x="%s" y="%s" width="14" height="10"/>`, esc(it.class), num(x), num(y-9))
		} else {
			fmt.Fprintf(b, `<rect class="%s" x="%s" y="%s" width="10" height="10"/>`, esc(it.class), num(x+2), num(y-9))
		}
		fmt.Fprintf(b, `<text class="legend" x="%s" y="%s">%s</text>`+"\n", num(x+18), num(y), esc(it.name))
		x += 28 + 6.5*float64(len([]rune(it.name)))
	}
}

// minBarPx is the least height of a bar (or a stacked segment) whose
// value is not zero, so that a count of 1 next to thousands, or at the
// bottom decade of a log axis, does not look like no bar at all.
const minBarPx = 3.0

// scale maps values to y coordinates, linear (from lo, 0 unless the
// axis is symmetric around 0) or logarithmic.
type scale struct {
	top, bottom float64
	lo, hi      float64 // value range; lo > 0 on a log scale
	log         bool
	step        float64 // linear tick step
}

// newScale makes a y scale up to maxV. A log scale starts a decade
// below the smallest positive value, so that value gets a visible bar
// (100 next to 10000 draws a third of the height, not nothing); with
// ints it starts at 1 at the lowest, since counts have no fractions.
func newScale(top, bottom, minPos, maxV float64, log, ints bool) scale {
	sc := scale{top: top, bottom: bottom, log: log}
	if log && maxV > 0 {
		if !(minPos > 0) || minPos > maxV {
			minPos = maxV
		}
		sc.lo = math.Pow(10, math.Ceil(math.Log10(minPos)-1e-9)-1)
		if ints {
			sc.lo = max(sc.lo, 1)
		}
		sc.hi = math.Pow(10, math.Ceil(math.Log10(maxV)-1e-9))
		if sc.hi <= sc.lo {
			sc.hi = sc.lo * 10
		}
		// at most twelve decades, so a denormal value cannot make the
		// axis (and its ticks) endless
		sc.lo = max(sc.lo, sc.hi/1e12)
		return sc
	}
	sc.log = false
	sc.hi, sc.step = niceCeil(maxV)
	if ints && sc.step < 1 {
		sc.step, sc.hi = 1, math.Max(1, math.Ceil(maxV))
	}
	return sc
}

// newSymScale is a linear scale from -m to m (rounded up), for
// differences around zero; with ints the ticks are whole.
func newSymScale(top, bottom, m float64, ints bool) scale {
	sc := scale{top: top, bottom: bottom}
	sc.hi, sc.step = niceCeil(m)
	if ints && sc.step < 1 {
		sc.step, sc.hi = 1, math.Max(1, math.Ceil(m))
	}
	sc.lo = -sc.hi
	return sc
}

// y is the coordinate of v; values below the range sit on the axis.
func (sc scale) y(v float64) float64 {
	v = finite(v)
	if sc.log {
		if v <= sc.lo {
			return sc.bottom
		}
		f := (math.Log10(v) - math.Log10(sc.lo)) / (math.Log10(sc.hi) - math.Log10(sc.lo))
		return sc.bottom - (sc.bottom-sc.top)*f
	}
	return sc.bottom - (sc.bottom-sc.top)*(v-sc.lo)/(sc.hi-sc.lo)
}

// ticks are the values with grid lines.
func (sc scale) ticks() []float64 {
	var out []float64
	if sc.log {
		for v := sc.lo; v <= sc.hi*1.0001 && len(out) < 16; v *= 10 {
			out = append(out, v)
		}
		return out
	}
	for k := 0; sc.lo+float64(k)*sc.step <= sc.hi+sc.step/2 && k < 128; k++ {
		out = append(out, math.Round((sc.lo+float64(k)*sc.step)*1e6)/1e6)
	}
	return out
}

// axis draws the grid, tick labels, the axis label (its baseline at
// labelY) and the x axis.
func (sc scale) axis(b *strings.Builder, left, right, labelY float64, label string) {
	for _, v := range sc.ticks() {
		y := sc.y(v)
		fmt.Fprintf(b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(left), num(y), num(right), num(y))
		fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`+"\n", num(left-6), num(y+4), esc(tickLabel(v)))
	}
	if label != "" {
		fmt.Fprintf(b, `<text class="axis-label" x="%s" y="%s" text-anchor="start">%s</text>`+"\n", num(left), num(labelY), esc(label))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", num(left), num(sc.bottom), num(right), num(sc.bottom))
}

// svg renders the bar chart.
func (c barChart) svg() string {
	w, h := c.width, c.height
	if w == 0 {
		w = 960
	}
	if h == 0 {
		h = 300
	}
	const left, right, top = 56.0, 16.0, 44.0
	bottom := float64(h) - 44
	n, maxV, minPos := 0, 0.0, math.Inf(1)
	for _, g := range c.groups {
		n += len(g.bars)
		for _, br := range g.bars {
			maxV = max(maxV, br.total())
			for _, s := range br.segs {
				if v := finite(s.value); v > 0 {
					minPos = min(minPos, v)
				}
			}
		}
	}
	for _, v := range c.line {
		maxV = max(maxV, finite(v))
	}
	if c.ref != nil {
		maxV = max(maxV, finite(c.ref.value))
	}
	if c.ref != nil && c.ref.value > 0 {
		minPos = min(minPos, finite(c.ref.value))
	}
	plotTop := top
	for _, g := range c.groups {
		for _, br := range g.bars {
			if br.value != "" {
				plotTop = top + 14 // room for the value above the tallest bar
			}
		}
	}
	sc := newScale(plotTop, bottom, minPos, maxV, c.logY, c.ints)
	var b strings.Builder
	svgOpen(&b, w, h, c.title)
	sc.axis(&b, left, float64(w)-right, top-8, c.yLabel)
	legend(&b, c.legend, left, 16)
	if n == 0 {
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s">no data</text></svg>`+"\n", num(left+10), num(bottom-10))
		return b.String()
	}
	gaps := float64(len(c.groups) - 1)
	plotW := float64(w) - right - left
	slot := plotW / (float64(n) + gaps*0.6)
	groupGap := slot * 0.6
	barW := slot * 0.8
	if slot < 4 {
		barW = slot
	}
	if len(c.groups) == 1 {
		for _, sh := range c.shades {
			x0, x1 := left+max(sh.from, 0)*slot, left+min(sh.to, float64(n))*slot
			if x1 <= x0 {
				x1 = x0 + 2
			}
			fmt.Fprintf(&b, `<g><title>%s</title><rect class="fault" x="%s" y="%s" width="%s" height="%s"/>`, esc(sh.title), num(x0), num(plotTop), num(x1-x0), num(bottom-plotTop))
			fmt.Fprintf(&b, `<text class="fault-label" x="%s" y="%s">%s</text></g>`+"\n", num(x0+3), num(plotTop+12), esc(sh.label))
		}
	}
	x := left
	lastLabel := math.Inf(-1)
	var starts []float64
	for gi, g := range c.groups {
		gStart := x
		for _, br := range g.bars {
			fmt.Fprintf(&b, `<g><title>%s</title>`, esc(br.title))
			// Stack in pixels: each segment starts where the one under it
			// ended and is at least minBarPx tall.
			cum, yPrev := 0.0, sc.bottom
			for _, s := range br.segs {
				v := finite(s.value)
				if v <= 0 {
					continue
				}
				cum += v
				y1 := min(sc.y(cum), yPrev-minBarPx)
				fmt.Fprintf(&b, `<rect class="%s" x="%s" y="%s" width="%s" height="%s"/>`, esc(s.class), num(x+(slot-barW)/2), num(y1), num(barW), num(yPrev-y1))
				yPrev = y1
			}
			// The value above the bar, when it fits the bar's slot.
			if br.value != "" && 6*float64(len([]rune(br.value))) <= slot+2 {
				fmt.Fprintf(&b, `<text class="value" x="%s" y="%s" text-anchor="middle">%s</text>`, num(x+slot/2), num(yPrev-4), esc(br.value))
			}
			b.WriteString("</g>\n")
			// Draw a label unless it would run into the previous one.
			if mid := x + slot/2; br.label != "" && mid-lastLabel >= 8+6.5*float64(len([]rune(br.label))) {
				fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num(mid), num(bottom+14), esc(br.label))
				lastLabel = mid
			}
			starts = append(starts, x)
			x += slot
		}
		if g.label != "" {
			fmt.Fprintf(&b, `<text class="group-label" x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num((gStart+x)/2), num(bottom+32), esc(g.label))
		}
		if gi < len(c.groups)-1 {
			x += groupGap
		}
	}
	if len(c.line) > 0 && len(c.line) <= len(starts) {
		var p strings.Builder
		for k, v := range c.line {
			y := sc.y(v)
			if k == 0 {
				fmt.Fprintf(&p, "M%s %s", num(starts[k]), num(y))
			} else {
				fmt.Fprintf(&p, " V%s", num(y))
			}
			fmt.Fprintf(&p, " H%s", num(starts[k]+slot))
		}
		fmt.Fprintf(&b, `<path class="%s" d="%s"/>`+"\n", esc(c.lineClass), p.String())
	}
	if r := c.ref; r != nil {
		y := sc.y(r.value)
		fmt.Fprintf(&b, `<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s"/>`, esc(r.class), num(left), num(y), num(float64(w)-right), num(y))
		fmt.Fprintf(&b, `<text class="ref-label" x="%s" y="%s" text-anchor="start">%s</text>`+"\n", num(left+4), num(y-5), esc(r.label))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// lineSeries is one line of a line plot.
type lineSeries struct {
	name   string
	class  string
	values []float64
	// dots, when set, draws a marker of that class at each point.
	dots []string
}

// linePlot draws lines over x = 0..n-1 with optional band (lo..hi).
type linePlot struct {
	title   string
	yLabel  string
	xLabels []string // one per point; every k-th is shown
	series  []lineSeries
	bandLo  []float64
	bandHi  []float64
	band    legendItem
	// symmetric draws a linear axis from -m to m around zero, for
	// differences; otherwise the axis runs from 0.
	symmetric bool
	// ints keeps the ticks of a symmetric axis whole.
	ints   bool
	width  int
	height int
}

func (c linePlot) svg() string {
	w, h := c.width, c.height
	if w == 0 {
		w = 960
	}
	if h == 0 {
		h = 260
	}
	const left, right, top = 56.0, 16.0, 44.0
	bottom := float64(h) - 30
	n, maxV, maxAbs := 0, 0.0, 0.0
	for _, s := range c.series {
		n = max(n, len(s.values))
		for _, v := range s.values {
			maxV, maxAbs = max(maxV, finite(v)), max(maxAbs, math.Abs(finite(v)))
		}
	}
	for _, v := range append(slices.Clone(c.bandHi), c.bandLo...) {
		maxV, maxAbs = max(maxV, finite(v)), max(maxAbs, math.Abs(finite(v)))
	}
	sc := newScale(top, bottom, 0, maxV, false, false)
	if c.symmetric {
		sc = newSymScale(top, bottom, maxAbs*1.2, c.ints)
	}
	var b strings.Builder
	svgOpen(&b, w, h, c.title)
	sc.axis(&b, left, float64(w)-right, top-8, c.yLabel)
	var items []legendItem
	if len(c.bandHi) > 0 {
		items = append(items, c.band)
	}
	for _, s := range c.series {
		items = append(items, legendItem{s.name, s.class})
	}
	legend(&b, items, left, 16)
	if n == 0 {
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s">no data</text></svg>`+"\n", num(left+10), num(bottom-10))
		return b.String()
	}
	plotW := float64(w) - right - left
	xOf := func(i int) float64 {
		if n == 1 {
			return left + plotW/2
		}
		return left + 8 + (plotW-16)*float64(i)/float64(n-1)
	}
	yOf := sc.y
	if len(c.bandHi) > 0 && len(c.bandHi) == len(c.bandLo) {
		// A filled polygon: along the upper bound, back along the lower
		// one; a single point is widened so the band still shows.
		var p []string
		for i, v := range c.bandHi {
			p = append(p, num(xOf(i))+","+num(yOf(v)))
		}
		for i := len(c.bandLo) - 1; i >= 0; i-- {
			p = append(p, num(xOf(i))+","+num(yOf(c.bandLo[i])))
		}
		if len(c.bandHi) == 1 {
			x0 := xOf(0)
			p = []string{num(x0-6) + "," + num(yOf(c.bandHi[0])), num(x0+6) + "," + num(yOf(c.bandHi[0])),
				num(x0+6) + "," + num(yOf(c.bandLo[0])), num(x0-6) + "," + num(yOf(c.bandLo[0]))}
		}
		fmt.Fprintf(&b, `<polygon class="%s" points="%s"><title>%s</title></polygon>`+"\n", esc(c.band.class), strings.Join(p, " "), esc(c.band.name))
	}
	every := max(1, int(math.Ceil(float64(n)*40/plotW)))
	for i, l := range c.xLabels {
		if l == "" || (i%every != 0 && i != n-1) {
			continue
		}
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num(xOf(i)), num(bottom+14), esc(l))
	}
	for _, s := range c.series {
		var p strings.Builder
		for i, v := range s.values {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&p, "%s%s %s ", cmd, num(xOf(i)), num(yOf(v)))
		}
		fmt.Fprintf(&b, `<path class="%s" d="%s"/>`+"\n", esc(s.class), strings.TrimSpace(p.String()))
		for i, cls := range s.dots {
			if i >= len(s.values) || cls == "" {
				continue
			}
			fmt.Fprintf(&b, `<circle class="%s" cx="%s" cy="%s" r="4"><title>%s</title></circle>`, esc(cls), num(xOf(i)), num(yOf(s.values[i])),
				esc(fmt.Sprintf("%s: %s", c.label(i), tickLabel(s.values[i]))))
		}
		if len(s.dots) > 0 {
			b.WriteString("\n")
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// label is the x label of point i, or its number.
func (c linePlot) label(i int) string {
	if i < len(c.xLabels) && c.xLabels[i] != "" {
		return c.xLabels[i]
	}
	return strconv.Itoa(i + 1)
}
