package cluster

import (
	"sort"
	"strings"

	"github.com/yuin/gopher-lua/ast"
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

// tokSpan is the range of tokens of one AST node.
type tokSpan struct{ first, last int }

// aligner walks the AST in source order beside the tokens and records the
// token range of every expression. Each leaf (name, literal, keyword value)
// takes the next token of its kind on its line or later; keywords and
// punctuation the grammar puts between them are skipped.
type aligner struct {
	s         *luaSource
	pos       int
	spans     map[ast.Expr]tokSpan
	localFunc map[*ast.LocalAssignStmt]bool // local function f() rather than local f = function()
	misses    int                           // leaves not found: the walk and the tokens disagree
	ambiguous int                           // the first call whose ( starts a line, or -1
}

func align(s *luaSource, chunk []ast.Stmt) *aligner {
	a := &aligner{s: s, spans: map[ast.Expr]tokSpan{}, localFunc: map[*ast.LocalAssignStmt]bool{}, ambiguous: -1}
	a.block(chunk)
	return a
}

func leafKind(typ int) bool {
	switch typ {
	case parse.TIdent, parse.TString, parse.TNumber, parse.TNil, parse.TTrue, parse.TFalse, parse.T3Comma:
		return true
	}
	return false
}

// leaf consumes the next leaf token if it has type typ and text str ("" for
// any) and is on gopher-lua line gline or later; leaf tokens on earlier
// lines are skipped (left behind by an earlier miss). It returns the
// token's index, or -1 without moving.
func (a *aligner) leaf(typ int, str string, gline int) int {
	for i := a.pos; i < len(a.s.toks); i++ {
		t := a.s.toks[i]
		if !leafKind(t.typ) {
			continue
		}
		if t.typ == typ && (str == "" || t.str == str) && t.gline >= gline {
			a.pos = i + 1
			return i
		}
		if t.gline < gline {
			continue
		}
		break
	}
	a.misses++
	return -1
}

// punct consumes the next token of type typ, skipping other keywords and
// punctuation but no leaf; -1 without moving when a leaf comes first.
func (a *aligner) punct(typ int) int {
	for i := a.pos; i < len(a.s.toks); i++ {
		t := a.s.toks[i]
		if t.typ == typ {
			a.pos = i + 1
			return i
		}
		if leafKind(t.typ) {
			break
		}
	}
	a.misses++
	return -1
}

// next returns the type of the next token that is not one of skip, or -1.
// A grouping ")" the walk has not consumed (the AST drops parentheses) may
// come before the token a choice depends on.
func (a *aligner) next(skip ...int) int {
	for i := a.pos; i < len(a.s.toks); i++ {
		t := a.s.toks[i].typ
		skipped := false
		for _, k := range skip {
			skipped = skipped || t == k
		}
		if !skipped {
			return t
		}
	}
	return -1
}

// closeAt moves past the token closing the one at open and returns its
// index, or -1.
func (a *aligner) closeAt(open int) int {
	if open < 0 || a.s.match[open] < 0 {
		return -1
	}
	c := a.s.match[open]
	a.pos = max(a.pos, c+1)
	return c
}

func (a *aligner) block(stmts []ast.Stmt) {
	for _, st := range stmts {
		a.stmt(st)
	}
}

func (a *aligner) names(names []string) {
	for _, n := range names {
		a.leaf(parse.TIdent, n, 0)
	}
}

func (a *aligner) stmt(st ast.Stmt) {
	switch st := st.(type) {
	case *ast.AssignStmt:
		a.exprs(st.Lhs)
		a.punct('=')
		a.exprs(st.Rhs)
	case *ast.LocalAssignStmt:
		a.punct(parse.TLocal)
		if fn, ok := onlyFunc(st.Exprs); ok && len(st.Names) == 1 && a.next() == parse.TFunction {
			a.localFunc[st] = true
			a.punct(parse.TFunction)
			a.names(st.Names)
			a.funcBody(fn, -1)
			return
		}
		a.names(st.Names)
		if len(st.Exprs) > 0 {
			a.punct('=')
			a.exprs(st.Exprs)
		}
	case *ast.FuncCallStmt:
		a.expr(st.Expr)
	case *ast.DoBlockStmt:
		a.punct(parse.TDo)
		a.block(st.Stmts)
		a.punct(parse.TEnd)
	case *ast.WhileStmt:
		a.punct(parse.TWhile)
		a.expr(st.Condition)
		a.punct(parse.TDo)
		a.block(st.Stmts)
		a.punct(parse.TEnd)
	case *ast.RepeatStmt:
		a.punct(parse.TRepeat)
		a.block(st.Stmts)
		a.punct(parse.TUntil)
		a.expr(st.Condition)
	case *ast.IfStmt:
		a.punct(parse.TIf)
		a.ifRest(st)
	case *ast.NumberForStmt:
		a.punct(parse.TFor)
		a.names([]string{st.Name})
		a.punct('=')
		a.expr(st.Init)
		a.expr(st.Limit)
		if st.Step != nil {
			a.expr(st.Step)
		}
		a.punct(parse.TDo)
		a.block(st.Stmts)
		a.punct(parse.TEnd)
	case *ast.GenericForStmt:
		a.punct(parse.TFor)
		a.names(st.Names)
		a.punct(parse.TIn)
		a.exprs(st.Exprs)
		a.punct(parse.TDo)
		a.block(st.Stmts)
		a.punct(parse.TEnd)
	case *ast.FuncDefStmt:
		a.punct(parse.TFunction)
		if st.Name.Func != nil {
			a.expr(st.Name.Func)
		} else {
			a.expr(st.Name.Receiver)
			a.punct(':')
			a.names([]string{st.Name.Method})
		}
		a.funcBody(st.Func, -1)
	case *ast.ReturnStmt:
		a.punct(parse.TReturn)
		a.exprs(st.Exprs)
	case *ast.BreakStmt:
		a.punct(parse.TBreak)
	case *ast.LabelStmt:
		a.punct(parse.T2Colon)
		a.names([]string{st.Name})
		a.punct(parse.T2Colon)
	case *ast.GotoStmt:
		a.punct(parse.TGoto)
		a.names([]string{st.Label})
	}
}

// ifRest reads an if or elseif from its condition to its end; an elseif
// is an if alone in the Else of the one before, sharing its end.
func (a *aligner) ifRest(st *ast.IfStmt) {
	a.expr(st.Condition)
	a.punct(parse.TThen)
	a.block(st.Then)
	if inner, ok := onlyIf(st.Else); ok && a.next(';', ')') == parse.TElseIf {
		a.punct(parse.TElseIf)
		a.ifRest(inner)
		return
	}
	if a.next(';', ')') == parse.TElse {
		a.punct(parse.TElse)
		a.block(st.Else)
	}
	a.punct(parse.TEnd)
}

func onlyIf(stmts []ast.Stmt) (*ast.IfStmt, bool) {
	if len(stmts) != 1 {
		return nil, false
	}
	st, ok := stmts[0].(*ast.IfStmt)
	return st, ok
}

func onlyFunc(exprs []ast.Expr) (*ast.FunctionExpr, bool) {
	if len(exprs) != 1 {
		return nil, false
	}
	fn, ok := exprs[0].(*ast.FunctionExpr)
	return fn, ok
}

// funcBody reads ( params ) block end and records the function's span
// from first (its function keyword, or the "(" when -1).
func (a *aligner) funcBody(fn *ast.FunctionExpr, first int) {
	open := a.punct('(')
	if first < 0 {
		first = open
	}
	if fn.ParList != nil {
		a.names(fn.ParList.Names)
		if fn.ParList.HasVargs {
			a.leaf(parse.T3Comma, "", 0)
		}
	}
	a.punct(')')
	a.block(fn.Stmts)
	last := a.punct(parse.TEnd)
	a.record(fn, first, last)
}

func (a *aligner) exprs(es []ast.Expr) {
	for _, e := range es {
		a.expr(e)
	}
}

func (a *aligner) record(e ast.Expr, first, last int) {
	if first >= 0 && last >= first {
		a.spans[e] = tokSpan{first, last}
	}
}

func (a *aligner) firstOf(e ast.Expr) int {
	if sp, ok := a.spans[e]; ok {
		return sp.first
	}
	return -1
}

func (a *aligner) lastOf(e ast.Expr) int {
	if sp, ok := a.spans[e]; ok {
		return sp.last
	}
	return -1
}

func (a *aligner) expr(e ast.Expr) {
	if e == nil {
		return
	}
	switch e := e.(type) {
	case *ast.IdentExpr:
		i := a.leaf(parse.TIdent, e.Value, e.Line())
		a.record(e, i, i)
	case *ast.StringExpr:
		i := a.leaf(parse.TString, e.Value, e.Line())
		a.record(e, i, i)
	case *ast.NumberExpr:
		i := a.leaf(parse.TNumber, e.Value, e.Line())
		a.record(e, i, i)
	case *ast.NilExpr:
		i := a.leaf(parse.TNil, "", e.Line())
		a.record(e, i, i)
	case *ast.TrueExpr:
		i := a.leaf(parse.TTrue, "", e.Line())
		a.record(e, i, i)
	case *ast.FalseExpr:
		i := a.leaf(parse.TFalse, "", e.Line())
		a.record(e, i, i)
	case *ast.Comma3Expr:
		i := a.leaf(parse.T3Comma, "", e.Line())
		a.record(e, i, i)
	case *ast.AttrGetExpr:
		a.expr(e.Object)
		last := -1
		if key, ok := e.Key.(*ast.StringExpr); ok && a.next(')') == '.' {
			a.punct('.')
			last = a.leaf(parse.TIdent, key.Value, key.Line())
			a.record(key, last, last)
		} else {
			open := a.punct('[')
			a.expr(e.Key)
			last = a.closeAt(open)
		}
		a.record(e, a.firstOf(e.Object), last)
	case *ast.FuncCallExpr:
		first := -1
		if e.Func != nil {
			a.expr(e.Func)
			first = a.firstOf(e.Func)
		} else {
			a.expr(e.Receiver)
			first = a.firstOf(e.Receiver)
			a.punct(':')
			a.names([]string{e.Method})
		}
		last := -1
		if a.next(')') == '(' {
			open := a.punct('(')
			if open > 0 && a.ambiguous < 0 && strings.ContainsAny(a.s.src[a.s.toks[open-1].end:a.s.toks[open].start], "\r\n") {
				a.ambiguous = open
			}
			a.exprs(e.Args)
			last = a.closeAt(open)
		} else if len(e.Args) == 1 { // f'x' or f{...}
			a.expr(e.Args[0])
			last = a.lastOf(e.Args[0])
		}
		a.record(e, first, last)
	case *ast.LogicalOpExpr:
		a.binary(e, e.Lhs, e.Rhs)
	case *ast.RelationalOpExpr:
		a.binary(e, e.Lhs, e.Rhs)
	case *ast.StringConcatOpExpr:
		a.binary(e, e.Lhs, e.Rhs)
	case *ast.ArithmeticOpExpr:
		a.binary(e, e.Lhs, e.Rhs)
	case *ast.UnaryMinusOpExpr:
		a.unary(e, '-', e.Expr)
	case *ast.UnaryNotOpExpr:
		a.unary(e, parse.TNot, e.Expr)
	case *ast.UnaryLenOpExpr:
		a.unary(e, '#', e.Expr)
	case *ast.FunctionExpr:
		kw := a.punct(parse.TFunction)
		a.funcBody(e, kw)
	case *ast.TableExpr:
		open := a.punct('{')
		for _, f := range e.Fields {
			switch key, named := f.Key.(*ast.StringExpr); {
			case f.Key == nil:
			case named && a.next(',', ';', ')') != '[':
				i := a.leaf(parse.TIdent, key.Value, key.Line())
				a.record(key, i, i)
				a.punct('=')
			default:
				o := a.punct('[')
				a.expr(f.Key)
				a.closeAt(o)
				a.punct('=')
			}
			a.expr(f.Value)
		}
		a.record(e, open, a.closeAt(open))
	}
}

func (a *aligner) binary(e, lhs, rhs ast.Expr) {
	a.expr(lhs)
	a.expr(rhs)
	a.record(e, a.firstOf(lhs), a.lastOf(rhs))
}

// unary records an operator expression from its operator, the token
// before the operand's (or before the parentheses opening it): '-' is also
// binary, so the operator is found from the operand, not by looking ahead.
func (a *aligner) unary(e ast.Expr, op int, sub ast.Expr) {
	a.expr(sub)
	i := a.firstOf(sub) - 1
	for i >= 0 && a.s.toks[i].typ == '(' {
		i--
	}
	if i < 0 || a.s.toks[i].typ != op {
		a.misses++
		return
	}
	a.record(e, i, a.lastOf(sub))
}
