package report

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable makes text from a document safe to show on a terminal, in a CI
// log or in a page: C0 control bytes (newline and ESC included), DEL, C1
// controls and bytes that are not valid UTF-8 are shown as escapes (\n,
// \r, \t, \xNN, \u0085); everything else, valid UTF-8 such as ü included,
// is shown as is. Every renderer passes keys, names, targets, header
// values and replies through it, so a key cannot move the cursor, change
// colours or ring the bell.
func Printable(s string) string { return escapeControls(s, false) }

// printableLines is Printable but keeps newlines and tabs, for the
// multi-line text of JUnit failures and system-out.
func printableLines(s string) string { return escapeControls(s, true) }

// isControl reports whether r is a C0 control, DEL or a C1 control.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }

func escapeControls(s string, keepLines bool) string {
	clean := true
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if isControl(rune(c)) && !(keepLines && (c == '\n' || c == '\t')) {
				clean = false
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || isControl(r) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && isControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case isControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// printables applies printable to every element of xs.
func printables(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = Printable(x)
	}
	return out
}

// quoted is s in double quotes with " and \ escaped and control bytes
// shown as printable shows them, for lists of arguments.
func quoted(s string) string {
	return `"` + Printable(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)) + `"`
}
