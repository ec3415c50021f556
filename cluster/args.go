package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SplitArgs splits one line into arguments the way redis-cli does: words are
// separated by spaces or tabs; "double quotes" allow the escapes \n \r \t \b
// \a \\ \" and \xHH (so any byte can be written); 'single quotes' allow only
// \'. A closing quote must be followed by a space or the end of the line.
func SplitArgs(line string) ([]string, error) {
	var args []string
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return args, nil
		}
		var cur strings.Builder
		inDouble, inSingle := false, false
		done := false
		for !done {
			if i >= len(line) {
				if inDouble || inSingle {
					return nil, errors.New("unbalanced quotes")
				}
				break
			}
			c := line[i]
			switch {
			case inDouble:
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					b, _ := strconv.ParseUint(line[i+2:i+4], 16, 8)
					cur.WriteByte(byte(b))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						cur.WriteByte('\n')
					case 'r':
						cur.WriteByte('\r')
					case 't':
						cur.WriteByte('\t')
					case 'b':
						cur.WriteByte('\b')
					case 'a':
						cur.WriteByte('\a')
					default:
						cur.WriteByte(line[i])
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, fmt.Errorf("closing quote must be followed by a space at column %d", i+2)
					}
					done = true
				default:
					cur.WriteByte(c)
				}
			case inSingle:
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					cur.WriteByte('\'')
					i++
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, fmt.Errorf("closing quote must be followed by a space at column %d", i+2)
					}
					done = true
				default:
					cur.WriteByte(c)
				}
			default:
				switch {
				case isSpace(c):
					done = true
				case c == '"' && cur.Len() == 0:
					inDouble = true
				case c == '\'' && cur.Len() == 0:
					inSingle = true
				default:
					cur.WriteByte(c)
				}
			}
			i++
		}
		args = append(args, cur.String())
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// QuoteArg returns s unchanged when SplitArgs would read it back as one
// argument and it holds nothing a terminal would act on or hide, else s in
// double quotes with the escapes SplitArgs understands. Only control bytes
// are escaped (C0, DEL, the C1 controls U+0080 to U+009F, and bytes that
// are not valid UTF-8), as \xHH; valid UTF-8 such as "ü" is shown as it
// is, inside quotes when it holds a Unicode space.
func QuoteArg(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if escaped(r, size) || r <= ' ' || r == '"' || r == '\'' || r == '\\' || unicode.IsSpace(r) {
			plain = false
		}
		i += size
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case escaped(r, size):
			for _, c := range []byte(s[i : i+size]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// escaped reports whether the rune r of size bytes that DecodeRuneInString
// returned is shown as \xHH bytes: a C0 or C1 control, DEL, or a byte that
// is not valid UTF-8.
func escaped(r rune, size int) bool {
	return r == utf8.RuneError && size <= 1 || r < ' ' || r == 0x7f || r >= 0x80 && r <= 0x9f
}
