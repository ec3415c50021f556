package lualint

import (
	"sort"
	"strings"

	"github.com/yuin/gopher-lua/parse"
)

// luaTok is one token as gopher-lua's scanner reads it, with the byte
// offsets of its text in the script.
type luaTok struct {
	typ        int    // parse.TIdent, parse.TEnd, '(' ...
	str        string // an identifier's name, a string literal's value
	gline      int    // the line as gopher-lua counts it, to match the AST
	start, end int
}

// luaSource is a script read into tokens by the scanner gopher-lua's parser
// uses, so they are the tokens the parser saw. The AST keeps only line
// numbers; the tokens give columns and the source text of expressions.
type luaSource struct {
	src    string
	toks   []luaTok
	match  []int // index of the token closing the bracket or block opened here (and back), else -1
	open   []int // openers never closed, outermost first
	glines []int // glines[l]: offset where gopher-lua's line l starts (l >= 1)
	nls    []int // offset of every '\n'

	lexErr   string // the scanner's message when it could not read a token
	lexStart int    // offset of that token
}

// newLuaSource reads src into tokens. It stops at the first token the
// scanner cannot read and keeps its message.
func newLuaSource(src string) *luaSource {
	s := &luaSource{src: src, glines: []int{0, 0}, lexStart: -1}
	// gopher-lua, like Lua 5.1, ends a line at \n, \r, \r\n or \n\r.
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '\n' && c != '\r' {
			continue
		}
		if j := i + 1; j < len(src) && (src[j] == '\n' || src[j] == '\r') && src[j] != c {
			i = j
		}
		s.glines = append(s.glines, i+1)
	}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			s.nls = append(s.nls, i)
		}
	}
	sc := parse.NewScanner(strings.NewReader(src), "")
	lx := &parse.Lexer{}
	for {
		tok, err := sc.Scan(lx)
		if err != nil {
			s.lexErr = err.Error()
			if pe, ok := err.(*parse.Error); ok {
				s.lexErr = pe.Message
			}
			s.lexStart = s.offset(tok.Pos.Line, tok.Pos.Column)
			break
		}
		if tok.Type < 0 { // EOF
			break
		}
		lx.PrevTokenType = tok.Type
		start := s.offset(tok.Pos.Line, tok.Pos.Column)
		end := len(src)
		if sc.Pos.Line != parse.EOF {
			end = s.offset(sc.Pos.Line, sc.Pos.Column) + 1
		}
		end = min(max(end, start+1), len(src))
		s.toks = append(s.toks, luaTok{typ: tok.Type, str: tok.Str, gline: tok.Pos.Line, start: start, end: end})
	}
	s.matchTokens()
	return s
}

// offset turns a gopher-lua position (1-based column in bytes) into a byte
// offset, clamped to the script.
func (s *luaSource) offset(gline, col int) int {
	if gline < 1 || gline >= len(s.glines) {
		return len(s.src)
	}
	return min(max(s.glines[gline]+col-1, 0), len(s.src))
}

// goffset is where gopher-lua's line gline starts.
func (s *luaSource) goffset(gline int) int { return s.offset(gline, 1) }

// posAt returns the line (counting '\n') and byte column, both from 1, of
// an offset.
func (s *luaSource) posAt(off int) (line, col int) {
	n := sort.SearchInts(s.nls, off) // newlines before off
	if n == 0 {
		return 1, off + 1
	}
	return n + 1, off - s.nls[n-1]
}

// matchTokens pairs brackets and blocks: ( [ { with ) ] }, function, if
// and do (which while and for use) with end, repeat with until.
func (s *luaSource) matchTokens() {
	s.match = make([]int, len(s.toks))
	for i := range s.match {
		s.match[i] = -1
	}
	var stack []int
	for i, t := range s.toks {
		switch t.typ {
		case '(', '[', '{', parse.TFunction, parse.TIf, parse.TDo, parse.TRepeat:
			stack = append(stack, i)
		case ')', ']', '}', parse.TEnd, parse.TUntil:
			n := len(stack)
			if n == 0 || !closes(s.toks[stack[n-1]].typ, t.typ) {
				continue
			}
			s.match[stack[n-1]], s.match[i] = i, stack[n-1]
			stack = stack[:n-1]
		}
	}
	s.open = stack
}

func closes(open, close int) bool {
	switch open {
	case '(':
		return close == ')'
	case '[':
		return close == ']'
	case '{':
		return close == '}'
	case parse.TRepeat:
		return close == parse.TUntil
	}
	return close == parse.TEnd
}

// tokName is how a finding names an opening token.
func tokName(t luaTok) string {
	switch t.typ {
	case parse.TFunction:
		return "function"
	case parse.TIf:
		return "if"
	case parse.TDo:
		return "do"
	case parse.TRepeat:
		return "repeat"
	}
	return string(rune(t.typ))
}

// text returns the source of the tokens first to last, widened, with runs
// of white space folded to one space.
func (s *luaSource) text(first, last int) string {
	first, last = s.widen(first, last)
	return strings.Join(strings.Fields(s.src[s.toks[first].start:s.toks[last].end]), " ")
}

// widen extends the tokens first to last over the grouping parentheses the
// range cuts through (the AST drops them): a .. (b) is not left as a .. (b.
func (s *luaSource) widen(first, last int) (int, int) {
	for changed := true; changed; {
		changed = false
		for i := first; i <= last; i++ {
			switch m := s.match[i]; s.toks[i].typ {
			case '(':
				if m > last {
					last, changed = m, true
				}
			case ')':
				if m >= 0 && m < first {
					first, changed = m, true
				}
			}
		}
	}
	return first, last
}
