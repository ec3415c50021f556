package report

import (
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// A kind builds the rows it shows once, as cells that say what a value is
// (text, a name to show as code, a verdict, a failing value); text,
// Markdown and HTML each draw the same rows in their own way.

type cellKind int

const (
	cellText     cellKind = iota // plain text
	cellCode                     // a name or value: as is in text, code in Markdown and HTML
	cellKey                      // a Redis key: quoted when needed (ksKey) in text and HTML, code everywhere but text
	cellVerdict                  // PASS or FAIL (pass), then the text
	cellDecision                 // yes or no (pass): a limiter's decision
	cellWarn                     // text in the warning style
	cellFlag                     // a value that fails a check
	cellCheck                    // a check's result: PASS, FAIL, WARN (a failed warning) or skipped
	cellKeys                     // Redis keys (list), each as cellKey shows one, space-separated
)

type cell struct {
	prefix string // plain text before the value ("tag ")
	text   string
	kind   cellKind
	pass   bool
	list   []string // the keys of a cellKeys
}

func textCell(s string) cell { return cell{text: s} }

func codeCell(s string) cell { return cell{text: s, kind: cellCode} }

func keyCell(s string) cell { return cell{text: s, kind: cellKey} }

func verdictCell(pass bool, suffix string) cell {
	return cell{text: suffix, kind: cellVerdict, pass: pass}
}

func decisionCell(allowed bool) cell { return cell{kind: cellDecision, pass: allowed} }

func warnCell(s string) cell { return cell{text: s, kind: cellWarn} }

// checkCell shows the result of c; word is the check's state.
func checkCell(c doc.Check) cell {
	state := "pass"
	switch {
	case c.Skipped:
		state = "skip"
	case !c.Pass && c.Counts():
		state = "fail"
	case !c.Pass:
		state = "warn"
	}
	return cell{text: state, kind: cellCheck}
}

func flagCell(s string) cell { return cell{text: s, kind: cellFlag} }

func keysCell(keys []string) cell { return cell{kind: cellKeys, list: keys} }

// checkTable is the table of a document's checks: id, result, finding.
func checkTable(cs []doc.Check) table {
	t := table{headers: []string{"check", "result", "finding"}}
	for _, c := range cs {
		t.rows = append(t.rows, []cell{codeCell(c.ID), checkCell(c), textCell(c.Message)})
	}
	return t
}

// textCells makes a row of plain cells.
func textCells(xs ...string) []cell {
	out := make([]cell, len(xs))
	for i, x := range xs {
		out[i] = textCell(x)
	}
	return out
}

// table is rows under headers; columns in right hold numbers.
type table struct {
	headers []string
	rows    [][]cell
	right   []int
}

func (c cell) forText(st Styles) string { return Printable(c.prefix) + c.textValue(st) }

func (c cell) forMarkdown() string { return md(c.prefix) + c.markdownValue() }

func (c cell) forHTML() string { return esc(c.prefix) + c.htmlValue() }

func (c cell) textValue(st Styles) string {
	switch c.kind {
	case cellKey:
		return ksKey(c.text)
	case cellKeys:
		return ksKeys(c.list)
	case cellVerdict:
		return joinNonEmpty(st.Verdict(c.pass), Printable(c.text))
	case cellDecision:
		if c.pass {
			return st.Pass.Render("yes")
		}
		return st.Fail.Render("no")
	case cellWarn:
		return st.Warn.Render(Printable(c.text))
	case cellFlag:
		return st.Fail.Render(Printable(c.text))
	case cellCheck:
		switch c.text {
		case "skip":
			return st.Dim.Render("skipped")
		case "warn":
			return st.Warn.Render("WARN")
		case "undecided":
			return st.Warn.Render("UNDECIDED")
		}
		return st.Verdict(c.text == "pass")
	}
	return Printable(c.text)
}

func (c cell) markdownValue() string {
	switch c.kind {
	case cellCode, cellKey:
		return mdCode(c.text)
	case cellKeys:
		return mdKeys(c.list)
	case cellVerdict:
		return joinNonEmpty(mdVerdict(c.pass), md(c.text))
	case cellDecision:
		if c.pass {
			return "yes"
		}
		return "no"
	case cellFlag:
		return "**" + md(c.text) + " FAIL**"
	case cellCheck:
		switch c.text {
		case "skip":
			return "skipped"
		case "warn":
			return "**WARN**"
		case "undecided":
			return "**UNDECIDED**"
		}
		return mdVerdict(c.text == "pass")
	}
	return md(c.text)
}

func (c cell) htmlValue() string {
	switch c.kind {
	case cellCode:
		return htmlCode(c.text)
	case cellKey:
		return htmlCode(ksKey(c.text))
	case cellKeys:
		out := make([]string, len(c.list))
		for i, k := range c.list {
			out[i] = htmlCode(ksKey(k))
		}
		return strings.Join(out, " ")
	case cellVerdict:
		return joinNonEmpty(htmlBadge(c.pass), esc(c.text))
	case cellDecision:
		if c.pass {
			return `<span class="badge pass">YES</span>`
		}
		return `<span class="badge fail">NO</span>`
	case cellFlag:
		return htmlBadge(false) + " " + esc(c.text)
	case cellCheck:
		switch c.text {
		case "skip":
			return `<span class="badge skip">SKIPPED</span>`
		case "warn":
			return `<span class="badge note">WARN</span>`
		case "undecided":
			return `<span class="badge fail">UNDECIDED</span>`
		}
		return htmlBadge(c.text == "pass")
	}
	return esc(c.text)
}

func joinNonEmpty(a, b string) string {
	if b == "" {
		return a
	}
	return a + " " + b
}

// text draws the table for a terminal (Table).
func (t table) text(st Styles) string {
	rows := make([][]string, len(t.rows))
	for i, r := range t.rows {
		rows[i] = make([]string, len(r))
		for k, c := range r {
			rows[i][k] = c.forText(st)
		}
	}
	return Table(printables(t.headers), rows, st, t.right...)
}

// markdown draws the table as GFM (mdTable).
func (t table) markdown(b *strings.Builder) {
	rows := make([][]string, len(t.rows))
	for i, r := range t.rows {
		rows[i] = make([]string, len(r))
		for k, c := range r {
			rows[i][k] = c.forMarkdown()
		}
	}
	mdTable(b, mdHeaders(t.headers), rows, t.right...)
}

// html draws the table as HTML (htmlTable).
func (t table) html(b *strings.Builder) {
	rows := make([][]string, len(t.rows))
	for i, r := range t.rows {
		rows[i] = make([]string, len(r))
		for k, c := range r {
			rows[i][k] = c.forHTML()
		}
	}
	htmlTable(b, t.headers, rows, t.right...)
}
