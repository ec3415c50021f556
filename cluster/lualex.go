package cluster

import (
	"fmt"
	"strings"
)

type tokKind int

const (
	tokName tokKind = iota
	tokString
	tokNumber
	tokOp
	tokEOF
)

// token is one Lua token; start and end are byte offsets into the source, so
// an expression can be shown exactly as written.
type token struct {
	kind       tokKind
	text       string
	line       int
	start, end int
}

func (t token) is(kind tokKind, text string) bool { return t.kind == kind && t.text == text }

// luaOps are the multi-character operators, longest first.
var luaOps = []string{"...", "..", "==", "~=", "<=", ">=", "::", "<<", ">>", "//"}

// lexLua splits Lua source into tokens, dropping comments (-- and --[[ ]],
// --[==[ ]==]) and keeping strings ('...', "..." with escapes, [[...]],
// [==[...]==]) as single tokens.
func lexLua(src string) ([]token, error) {
	var toks []token
	line := 1
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			j := i + 2
			if lvl, ok := longBracket(src, j); ok {
				end, lines, ok := closeLong(src, j+lvl+2, lvl)
				if !ok {
					return nil, fmt.Errorf("line %d: unfinished long comment", line)
				}
				line += lines
				i = end
				continue
			}
			for j < len(src) && src[j] != '\n' {
				j++
			}
			i = j
		case c == '[':
			if lvl, ok := longBracket(src, i); ok {
				end, lines, ok := closeLong(src, i+lvl+2, lvl)
				if !ok {
					return nil, fmt.Errorf("line %d: unfinished long string", line)
				}
				toks = append(toks, token{kind: tokString, text: src[i:end], line: line, start: i, end: end})
				line += lines
				i = end
				continue
			}
			toks = append(toks, token{kind: tokOp, text: "[", line: line, start: i, end: i + 1})
			i++
		case c == '"' || c == '\'':
			j := i + 1
			startLine := line
			for {
				if j >= len(src) || src[j] == '\n' {
					return nil, fmt.Errorf("line %d: unfinished string", startLine)
				}
				if src[j] == '\\' {
					// An escaped newline continues the string on the next line.
					if j+1 < len(src) && src[j+1] == '\n' {
						line++
					}
					j += 2
					continue
				}
				if src[j] == c {
					j++
					break
				}
				j++
			}
			toks = append(toks, token{kind: tokString, text: src[i:j], line: startLine, start: i, end: j})
			i = j
		case isNameStart(c):
			j := i + 1
			for j < len(src) && (isNameStart(src[j]) || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{kind: tokName, text: src[i:j], line: line, start: i, end: j})
			i = j
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j := i + 1
			for j < len(src) {
				d := src[j]
				if isNameStart(d) || isDigit(d) || d == '.' {
					j++
					continue
				}
				if (d == '+' || d == '-') && strings.ContainsRune("eEpP", rune(src[j-1])) {
					j++
					continue
				}
				break
			}
			toks = append(toks, token{kind: tokNumber, text: src[i:j], line: line, start: i, end: j})
			i = j
		default:
			op := src[i : i+1] // one byte; string(c) would encode a byte >= 0x80 as two
			for _, o := range luaOps {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			toks = append(toks, token{kind: tokOp, text: op, line: line, start: i, end: i + len(op)})
			i += len(op)
		}
	}
	toks = append(toks, token{kind: tokEOF, line: line, start: len(src), end: len(src)})
	return toks, nil
}

// longBracket reports whether src[i:] opens a long bracket [[ or [==[ and
// returns its level (the number of '=').
func longBracket(src string, i int) (int, bool) {
	if i >= len(src) || src[i] != '[' {
		return 0, false
	}
	j := i + 1
	for j < len(src) && src[j] == '=' {
		j++
	}
	if j < len(src) && src[j] == '[' {
		return j - i - 1, true
	}
	return 0, false
}

// closeLong finds the ]=*] of the given level from offset i and returns the
// offset after it and how many newlines it passed.
func closeLong(src string, i, lvl int) (int, int, bool) {
	closer := "]" + strings.Repeat("=", lvl) + "]"
	n := strings.Index(src[i:], closer)
	if n < 0 {
		return 0, 0, false
	}
	end := i + n + len(closer)
	return end, strings.Count(src[i:end], "\n"), true
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool     { return '0' <= c && c <= '9' }

// luaStringValue returns the value of a short string literal with its
// common escapes resolved, or the content of a long string.
func luaStringValue(lit string) string {
	if strings.HasPrefix(lit, "[") {
		lvl, _ := longBracket(lit, 0)
		body := lit[lvl+2 : len(lit)-lvl-2]
		return strings.TrimPrefix(body, "\n")
	}
	body := lit[1 : len(lit)-1]
	if !strings.Contains(body, `\`) {
		return body
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' || i+1 >= len(body) {
			b.WriteByte(body[i])
			continue
		}
		i++
		switch body[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		default:
			b.WriteByte(body[i])
		}
	}
	return b.String()
}
