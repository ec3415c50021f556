package serve

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Escape makes s safe to write as one log line: control bytes (C0, DEL,
// C1), the Unicode line and paragraph separators and bytes that are not
// UTF-8 become \xNN or \uNNNN, so a value a client chose (a header, a
// path) can neither start a forged line (CR, LF) nor drive the operator's
// terminal (ESC). Everything else, backslashes included, is kept.
func Escape(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
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
		case r < 0x80 && unsafeRune(r, size):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, size):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune, size int) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' ||
		(r == utf8.RuneError && size == 1)
}

// lineWriter escapes each write as a line (see Escape), keeping one
// trailing newline: the net/http server's error log goes through it, since
// its messages may quote what a client sent.
type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	if _, err := io.WriteString(l.w, Escape(line)+"\n"); err != nil {
		return 0, err
	}
	return len(p), nil
}
