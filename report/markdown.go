package report

import (
	"io"
	"strings"
)

// Markdown renders a result document as GitHub-flavoured Markdown, fit for
// $GITHUB_STEP_SUMMARY: a heading with the verdict in words, short lines and
// tables. Every piece of text from the document is escaped, so a key with
// | or ` cannot break a table or start code.
func Markdown(w io.Writer, doc any) error {
	k, v, err := kinds.of(doc)
	if err != nil {
		return err
	}
	var b strings.Builder
	k.markdown(&b, v)
	_, err = io.WriteString(w, b.String())
	return err
}

// mdEscaper backslash-escapes the characters that Markdown (and GFM
// tables) would interpret inside a line of text; & becomes an entity so
// that text such as "&lt;" shows as written.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "|", `\|`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", `\<`, ">", `\>`, "#", `\#`, "~", `\~`, "&", "&amp;",
)

// md escapes text for a Markdown line or table cell: control bytes as
// printable shows them (a newline is \n, so it cannot end a table row),
// then the characters Markdown would interpret.
func md(s string) string { return mdEscaper.Replace(Printable(s)) }

// mdCode renders s as an inline code span that survives a table: the fence
// is longer than any run of backticks in s, and | is escaped (GFM splits
// table cells before it reads code spans). Control bytes are shown as
// printable shows them (\n, \x1b).
func mdCode(s string) string {
	body := strings.ReplaceAll(Printable(s), "|", `\|`)
	if body == "" {
		return "(empty)"
	}
	longest, run := 0, 0
	for _, r := range body {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(body, "`") || strings.HasSuffix(body, "`") || longest > 0 {
		body = " " + body + " "
	}
	return fence + body + fence
}

// mdVerdict is the verdict as a bold word, never colour alone.
func mdVerdict(pass bool) string {
	if pass {
		return "**PASS**"
	}
	return "**FAIL**"
}

// mdTable renders a GFM table. Cells must already be escaped (md, mdCode);
// columns listed in right are right-aligned.
func mdTable(b *strings.Builder, headers []string, rows [][]string, right ...int) {
	cols := len(headers)
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	line := func(cells []string) {
		b.WriteString("|")
		for i := range cols {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			if c == "" {
				c = " "
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	line(headers)
	b.WriteString("|")
	for i := range cols {
		sep := "---"
		for _, r := range right {
			if r == i {
				sep = "--:"
			}
		}
		b.WriteString(" " + sep + " |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		line(r)
	}
	b.WriteString("\n")
}

// mdServer is the line naming what the command ran against.
func mdServer(b *strings.Builder, s string) {
	b.WriteString("server: " + md(s) + "\n\n")
}
