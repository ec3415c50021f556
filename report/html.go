package report

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// HTMLOptions shape the HTML page.
type HTMLOptions struct {
	// Title of the page; empty means "ratelimit report".
	Title string
	// Generated is shown in the page's header; the zero time hides it.
	Generated time.Time
}

// htmlCSS styles the page and its charts. System fonts only: nothing is
// fetched. Colours of the data classes: admitted green, limited amber,
// failed red, expectations dark blue lines.
const htmlCSS = `
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dde5; --bg:#ffffff; --panel:#f6f7f9;
  --ok:#1b7f3b; --bad:#c0262d; --warn:#b26a00; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--fg); background: var(--bg); max-width: 1180px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 0 0 8px; display: flex; gap: 10px; align-items: center; }
h3 { font-size: 15px; margin: 22px 0 6px; }
p { margin: 4px 0; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
nav ul { list-style: none; padding: 0; margin: 10px 0 0; display: flex; flex-wrap: wrap; gap: 8px; }
nav a { color: var(--fg); text-decoration: none; border: 1px solid var(--line); border-radius: 6px; padding: 3px 8px; display: inline-block; }
section.doc { border: 1px solid var(--line); border-radius: 10px; padding: 18px 20px; margin: 22px 0; background: var(--bg); }
.badge { font-size: 12px; font-weight: 700; letter-spacing: .04em; border-radius: 4px; padding: 2px 7px; border: 2px solid; }
.badge.pass { color: var(--ok); border-color: var(--ok); }
.badge.fail { color: #fff; background: var(--bad); border-color: var(--bad); }
.badge.skip, .badge.note { color: var(--warn); border-color: var(--warn); }
.verdict { font-size: 15px; font-weight: 600; margin: 8px 0; padding: 8px 12px; border-left: 5px solid var(--ok); background: var(--panel); }
.verdict.fail { border-left-color: var(--bad); }
.warn { color: var(--warn); }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px 4px 0; text-align: left; vertical-align: top; }
th { font-weight: 600; color: var(--muted); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
ul.notes { margin: 4px 0; padding-left: 20px; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 4px 0 8px; font-family: system-ui, sans-serif; }
svg .grid { stroke: #eceef2; stroke-width: 1; }
svg .axis { stroke: #8a92a3; stroke-width: 1; }
svg .tick { fill: #5b6475; font-size: 11px; }
svg .axis-label, svg .legend { fill: #1d2330; font-size: 12px; }
svg .group-label { fill: #1d2330; font-size: 12px; font-weight: 600; }
svg .ref-label { fill: #c0262d; font-size: 12px; font-weight: 600; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg .value { fill: #1d2330; font-size: 10px; font-variant-numeric: tabular-nums; }
svg .admitted { fill: #2e9d55; }
svg .limited { fill: #f0b429; }
svg .failed { fill: #d64545; }
svg .over { fill: #d64545; }
svg .racy { fill: #9aa5b8; }
svg .atomic { fill: #2e9d55; }
svg .lat-send { fill: #5b8def; }
svg .lat-due { fill: #1f3f8f; }
svg .lat-late { fill: #b8c2d6; }
svg .keys { fill: #5b8def; }
svg .p0 { fill: #5b8def; } svg .p1 { fill: #2e9d55; } svg .p2 { fill: #f0b429; }
svg .p3 { fill: #9b59b6; } svg .p4 { fill: #17a2b8; } svg .p5 { fill: #e67e22; }
svg .pnone { fill: #b8c2d6; }
svg .line-expected { fill: none; stroke: #1a237e; stroke-width: 2.5; stroke-dasharray: 6 3; }
svg .line-observed { fill: none; stroke: #2e9d55; stroke-width: 2.5; }
svg .line-remaining { fill: none; stroke: #5b8def; stroke-width: 2; }
svg .band-expected { fill: #5b6cd6; fill-opacity: .3; stroke: #1a237e; stroke-opacity: .45; stroke-width: 1; }
svg .ref-limit { stroke: #c0262d; stroke-width: 2; stroke-dasharray: 5 4; }
svg .dot-allowed { fill: #2e9d55; stroke: #fff; stroke-width: 1; }
svg .dot-refused { fill: #d64545; stroke: #fff; stroke-width: 1; }
svg .fault { fill: #c0262d; fill-opacity: .12; stroke: #c0262d; stroke-opacity: .5; stroke-dasharray: 3 3; }
svg .fault-label { fill: #c0262d; font-size: 11px; font-weight: 600; }
footer { margin-top: 28px; color: var(--muted); font-size: 12px; }
`

// HTML writes one self-contained page for all documents: inline CSS and
// SVG charts, no scripts, nothing fetched from anywhere, so it works
// offline and can be attached to a ticket. Every text from a document is
// escaped.
func HTML(w io.Writer, docs []Document, o HTMLOptions) error {
	title := o.Title
	if title == "" {
		title = "ratelimit report"
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", esc(title), htmlCSS)
	fmt.Fprintf(&b, "<header>\n<h1>%s</h1>\n<p class=\"muted\">%s", esc(title), esc(countNoun(len(docs), "document", "documents")))
	if !o.Generated.IsZero() {
		fmt.Fprintf(&b, ", generated %s", esc(o.Generated.UTC().Format("2006-01-02 15:04:05 UTC")))
	}
	b.WriteString("</p>\n<nav><ul>\n")
	for i, d := range docs {
		pass, has := docVerdict(d)
		badge := ""
		if has {
			badge = htmlBadge(pass) + " "
		}
		fmt.Fprintf(&b, "<li><a href=\"#doc-%d\">%s%s</a></li>\n", i+1, badge, esc(docLabel(d)))
	}
	b.WriteString("</ul></nav>\n</header>\n")
	for i, d := range docs {
		k, v, err := kinds.of(d.Value)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "<section class=\"doc\" id=\"doc-%d\">\n", i+1)
		pass, has := k.verdict(v)
		badge := ""
		if has {
			badge = htmlBadge(pass)
		}
		fmt.Fprintf(&b, "<h2>%s <span>%s</span></h2>\n", badge, esc(docLabel(d)))
		htmlEnvelope(&b, v)
		k.html(&b, v)
		b.WriteString("</section>\n")
	}
	b.WriteString("<footer>Written by ratelimit report. A self-contained page: inline CSS and SVG, no scripts, nothing fetched.</footer>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// docLabel names a document: its kind and, when known, its file.
func docLabel(d Document) string {
	kind, _, err := docKind(d.Value)
	if err != nil {
		kind = d.Kind
	}
	label := "ratelimit " + kind
	if d.Source != "" {
		label += " · " + d.Source
	}
	return label
}

// Verdict returns a document's verdict, as the HTML page's badge and
// every format draw it; has is false for a kind without one (scripts).
func Verdict(d Document) (pass, has bool) { return docVerdict(d) }

// docVerdict returns a document's verdict, when its kind has one.
func docVerdict(d Document) (pass, has bool) {
	k, v, err := kinds.of(d.Value)
	if err != nil {
		return false, false
	}
	return k.verdict(v)
}

// htmlEnvelope writes what the document says of itself: the build that
// wrote it, when the run started and the command line. Documents upgraded
// from version 1 know none of it, and the line is left out.
func htmlEnvelope(b *strings.Builder, v any) {
	h := headerOf(v)
	if h == nil {
		return
	}
	var parts []string
	if h.Tool != nil {
		parts = append(parts, "written by "+h.Tool.String())
	}
	if !h.StartedAt.IsZero() {
		parts = append(parts, "started "+h.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if len(h.Command) > 0 {
		parts = append(parts, "command "+strings.Join(h.Command, " "))
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(strings.Join(parts, " · ")))
	}
}

// headerOf is the envelope of a result value (a pointer to it, or the
// value, whose header is then a copy), nil for a value without one.
func headerOf(v any) *doc.Header {
	if rv := reflect.ValueOf(v); rv.IsValid() && rv.Kind() != reflect.Pointer {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		v = p.Interface()
	}
	if dh, ok := v.(interface{ DocHeader() *doc.Header }); ok {
		return dh.DocHeader()
	}
	return nil
}

// htmlBadge is the verdict as a word in a box; colour only repeats it.
func htmlBadge(pass bool) string {
	if pass {
		return `<span class="badge pass">PASS</span>`
	}
	return `<span class="badge fail">FAIL</span>`
}

// htmlVerdict is a verdict line: the word, then the explanation.
func htmlVerdict(b *strings.Builder, pass bool, text string) {
	cls := "verdict"
	if !pass {
		cls += " fail"
	}
	fmt.Fprintf(b, "<p class=\"%s\">%s %s</p>\n", cls, htmlBadge(pass), esc(text))
}

// htmlTable writes a table; cells are HTML (escape text with esc), columns
// in right are numeric and right-aligned.
func htmlTable(b *strings.Builder, headers []string, rows [][]string, right ...int) {
	isRight := map[int]bool{}
	for _, r := range right {
		isRight[r] = true
	}
	cls := func(i int) string {
		if isRight[i] {
			return ` class="num"`
		}
		return ""
	}
	b.WriteString("<table>\n<thead><tr>")
	for i, h := range headers {
		fmt.Fprintf(b, "<th%s>%s</th>", cls(i), esc(h))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for i, c := range r {
			fmt.Fprintf(b, "<td%s>%s</td>", cls(i), c)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
}

// htmlNotes writes a list of escaped lines.
func htmlNotes(b *strings.Builder, cls string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "<ul class=\"notes %s\">\n", cls)
	for _, l := range lines {
		fmt.Fprintf(b, "<li>%s</li>\n", esc(l))
	}
	b.WriteString("</ul>\n")
}

// htmlServer is the line saying what a command ran against.
func htmlServer(b *strings.Builder, s string) {
	fmt.Fprintf(b, "<p class=\"muted\">server: %s</p>\n", esc(s))
}

func htmlCode(s string) string { return "<code>" + esc(s) + "</code>" }
