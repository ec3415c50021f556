// Package report renders result documents. Every renderer is a pure
// function of a result value and options: no clocks, no environment, no
// terminal probing, so golden files pin the output exactly.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// Options shape text output.
type Options struct {
	// Color enables ANSI colour; off when piped, with --no-color or NO_COLOR.
	Color bool
	// Width is the terminal width; 0 means unknown (no wrapping).
	Width int
}

// Styles are lipgloss styles bound to one writer's renderer.
type Styles struct {
	Title, Header, Dim, Pass, Fail, Warn lipgloss.Style
	r                                    *lipgloss.Renderer
}

// NewStyles builds styles from a renderer bound to w; without o.Color the
// renderer uses the ASCII profile, so output is plain text.
func NewStyles(w io.Writer, o Options) Styles {
	r := lipgloss.NewRenderer(w)
	if o.Color {
		r.SetColorProfile(termenv.ANSI256)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return Styles{
		r:      r,
		Title:  r.NewStyle().Bold(true),
		Header: r.NewStyle().Bold(true),
		Dim:    r.NewStyle().Faint(true),
		Pass:   r.NewStyle().Bold(true).Foreground(lipgloss.Color("2")),
		Fail:   r.NewStyle().Bold(true).Foreground(lipgloss.Color("1")),
		Warn:   r.NewStyle().Foreground(lipgloss.Color("3")),
	}
}

// Verdict renders "PASS" or "FAIL" as words, so the verdict never relies on
// colour alone.
func (s Styles) Verdict(pass bool) string {
	if pass {
		return s.Pass.Render("PASS")
	}
	return s.Fail.Render("FAIL")
}

// Table renders rows under headers as columns separated by two spaces.
// Cells are padded by their visible width, so styled cells align too.
// Columns listed in right are right-aligned (numbers).
func Table(headers []string, rows [][]string, st Styles, right ...int) string {
	cols := len(headers)
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	widths := make([]int, cols)
	measure := func(r []string) {
		for i, c := range r {
			widths[i] = max(widths[i], lipgloss.Width(c))
		}
	}
	measure(headers)
	for _, r := range rows {
		measure(r)
	}
	isRight := make([]bool, cols)
	for _, i := range right {
		if i >= 0 && i < cols {
			isRight[i] = true
		}
	}
	var b strings.Builder
	line := func(r []string, style *lipgloss.Style) {
		var parts []string
		for i := 0; i < cols; i++ {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			pad := strings.Repeat(" ", widths[i]-lipgloss.Width(c))
			if style != nil {
				c = style.Render(c)
			}
			if isRight[i] {
				parts = append(parts, pad+c)
			} else {
				parts = append(parts, c+pad)
			}
		}
		b.WriteString(strings.TrimRight(strings.Join(parts, "  "), " "))
		b.WriteByte('\n')
	}
	if len(headers) > 0 {
		line(headers, &st.Header)
	}
	for _, r := range rows {
		line(r, nil)
	}
	return b.String()
}

// ServerLine is the first line of every text report: what the command ran
// against.
func ServerLine(s doc.Server, st Styles) string {
	return st.Dim.Render("server: "+Printable(s.String())) + "\n"
}

// serverOf is the server of a document, or the zero Server when it names
// none.
func serverOf(h doc.Header) doc.Server {
	if h.Server == nil {
		return doc.Server{}
	}
	return *h.Server
}

// JSON writes doc as indented JSON followed by a newline.
func JSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	return nil
}
