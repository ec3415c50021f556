package lualint

import (
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

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

	// named is the function of the local function or function statement
	// being read: the statement has read its function keyword and its
	// name, up to the ':' of a method (method).
	named  *ast.FunctionExpr
	method *ast.FuncName
	elseif map[*ast.IfStmt]bool // ifs written as the elseif of the if before
	held   []pending
}

// pending is a token that a node's enter or place found and a later place
// or its leave needs: where its span starts, or the bracket to close.
type pending struct {
	tok  int
	form bool // an index written .name; a call with parentheses; a table key in brackets
}

func align(s *luaSource, chunk []ast.Stmt) *aligner {
	a := &aligner{s: s, spans: map[ast.Expr]tokSpan{}, localFunc: map[*ast.LocalAssignStmt]bool{}, ambiguous: -1,
		elseif: map[*ast.IfStmt]bool{}}
	walk(a, chunk, asWritten)
	return a
}

func (a *aligner) push(tok int, form bool) { a.held = append(a.held, pending{tok, form}) }

func (a *aligner) pop() pending {
	p := a.held[len(a.held)-1]
	a.held = a.held[:len(a.held)-1]
	return p
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

func (a *aligner) names(names []string) {
	for _, n := range names {
		a.leaf(parse.TIdent, n, 0)
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

// enter reads the tokens a node starts with, up to its first child: the
// keywords and names of a statement, a leaf, a function's parameters.
func (a *aligner) enter(n node) bool {
	switch n := n.(type) {
	case *ast.LocalAssignStmt:
		a.punct(parse.TLocal)
		if fn, ok := onlyFunc(n.Exprs); ok && len(n.Names) == 1 && a.next() == parse.TFunction {
			a.localFunc[n] = true
			a.punct(parse.TFunction)
			a.names(n.Names)
			a.named, a.method = fn, nil
			return true
		}
		a.names(n.Names)
		if len(n.Exprs) > 0 {
			a.punct('=')
		}
	case *ast.DoBlockStmt:
		a.punct(parse.TDo)
	case *ast.WhileStmt:
		a.punct(parse.TWhile)
	case *ast.RepeatStmt:
		a.punct(parse.TRepeat)
	case *ast.IfStmt:
		if !a.elseif[n] {
			a.punct(parse.TIf)
		}
	case *ast.NumberForStmt:
		a.punct(parse.TFor)
		a.names([]string{n.Name})
		a.punct('=')
	case *ast.GenericForStmt:
		a.punct(parse.TFor)
		a.names(n.Names)
		a.punct(parse.TIn)
	case *ast.FuncDefStmt:
		a.punct(parse.TFunction)
		a.named, a.method = n.Func, nil
		if n.Name.Func == nil {
			a.method = n.Name
		}
	case *ast.ReturnStmt:
		a.punct(parse.TReturn)
	case *ast.BreakStmt:
		a.punct(parse.TBreak)
	case *ast.LabelStmt:
		a.punct(parse.T2Colon)
		a.names([]string{n.Name})
		a.punct(parse.T2Colon)
	case *ast.GotoStmt:
		a.punct(parse.TGoto)
		a.names([]string{n.Label})

	case *ast.IdentExpr:
		a.leafExpr(n, parse.TIdent, n.Value)
	case *ast.StringExpr:
		a.leafExpr(n, parse.TString, n.Value)
	case *ast.NumberExpr:
		a.leafExpr(n, parse.TNumber, n.Value)
	case *ast.NilExpr:
		a.leafExpr(n, parse.TNil, "")
	case *ast.TrueExpr:
		a.leafExpr(n, parse.TTrue, "")
	case *ast.FalseExpr:
		a.leafExpr(n, parse.TFalse, "")
	case *ast.Comma3Expr:
		a.leafExpr(n, parse.T3Comma, "")
	case *ast.FunctionExpr:
		a.funcHead(n)
	case *ast.TableExpr:
		a.push(a.punct('{'), false)
	}
	return true
}

func (a *aligner) leafExpr(e ast.Expr, typ int, str string) {
	i := a.leaf(typ, str, e.Line())
	a.record(e, i, i)
}

// funcHead reads a function up to its body: function ( params ), where a
// local function or function statement has read the keyword and the name
// already. Its span starts at the keyword, or at "(" when the statement
// read it.
func (a *aligner) funcHead(fn *ast.FunctionExpr) {
	first := -1
	if fn == a.named {
		if a.method != nil {
			a.punct(':')
			a.names([]string{a.method.Method})
		}
		a.named, a.method = nil, nil
	} else {
		first = a.punct(parse.TFunction)
	}
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
	a.push(first, false)
}

// at reads the keyword or bracket at a place between a node's children.
func (a *aligner) at(n node, p place, i int) bool {
	switch n := n.(type) {
	case *ast.AssignStmt:
		a.punct('=')
	case *ast.WhileStmt, *ast.NumberForStmt, *ast.GenericForStmt:
		if p == placeBody {
			a.punct(parse.TDo)
		}
	case *ast.RepeatStmt:
		if p == placeBodyEnd {
			a.punct(parse.TUntil)
		}
	case *ast.IfStmt:
		if p == placeBody {
			return a.arm(n, i)
		}
	case *ast.AttrGetExpr:
		return a.index(n)
	case *ast.FuncCallExpr:
		return a.args(n)
	case *ast.TableExpr:
		return a.field(n.Fields[i], p)
	}
	return true
}

// arm reads the keyword opening an arm of an if: then, or else (elseif
// when the else holds only an if written so); false when the if has no
// else.
func (a *aligner) arm(st *ast.IfStmt, arm int) bool {
	if arm == 0 {
		a.punct(parse.TThen)
		return true
	}
	if inner, ok := onlyIf(st.Else); ok && a.next(';', ')') == parse.TElseIf {
		a.punct(parse.TElseIf)
		a.elseif[inner] = true
		return true
	}
	if a.next(';', ')') == parse.TElse {
		a.punct(parse.TElse)
		return true
	}
	return false
}

// index reads what comes between an index's object and its key: .name,
// whose name it reads itself (false), or [.
func (a *aligner) index(e *ast.AttrGetExpr) bool {
	if key, ok := e.Key.(*ast.StringExpr); ok && a.next(')') == '.' {
		a.punct('.')
		last := a.leaf(parse.TIdent, key.Value, key.Line())
		a.record(key, last, last)
		a.push(last, true)
		return false
	}
	a.push(a.punct('['), false)
	return true
}

// args reads what comes between a call's callee and its arguments: the
// method of a:m(...), and ( unless the one argument is a string or a
// table written without parentheses.
func (a *aligner) args(e *ast.FuncCallExpr) bool {
	if e.Func == nil {
		a.punct(':')
		a.names([]string{e.Method})
	}
	if a.next(')') == '(' {
		open := a.punct('(')
		if open > 0 && a.ambiguous < 0 && strings.ContainsAny(a.s.src[a.s.toks[open-1].end:a.s.toks[open].start], "\r\n") {
			a.ambiguous = open
		}
		a.push(open, true)
		return true
	}
	a.push(-1, false)
	return len(e.Args) == 1 // f'x' or f{...}
}

// field reads the key of a table field up to its value: name = (a name
// read here, false) or [ at key; ] = at value after a key in brackets.
func (a *aligner) field(f *ast.Field, p place) bool {
	if p == placeValue {
		if f.Key != nil {
			if o := a.pop(); o.form {
				a.closeAt(o.tok)
				a.punct('=')
			}
		}
		return true
	}
	if key, named := f.Key.(*ast.StringExpr); named && a.next(',', ';', ')') != '[' {
		i := a.leaf(parse.TIdent, key.Value, key.Line())
		a.record(key, i, i)
		a.punct('=')
		a.push(-1, false)
		return false
	}
	a.push(a.punct('['), true)
	return true
}

// leave reads the tokens that end a node and records its span.
func (a *aligner) leave(n node) {
	switch n := n.(type) {
	case *ast.DoBlockStmt, *ast.WhileStmt, *ast.NumberForStmt, *ast.GenericForStmt:
		a.punct(parse.TEnd)
	case *ast.IfStmt:
		if inner, ok := onlyIf(n.Else); !ok || !a.elseif[inner] {
			a.punct(parse.TEnd) // an if and the elseifs after it share one end
		}
	case *ast.FunctionExpr:
		first := a.pop().tok
		a.record(n, first, a.punct(parse.TEnd))
	case *ast.TableExpr:
		open := a.pop().tok
		a.record(n, open, a.closeAt(open))
	case *ast.AttrGetExpr:
		o := a.pop()
		last := o.tok
		if !o.form {
			last = a.closeAt(o.tok)
		}
		a.record(n, a.firstOf(n.Object), last)
	case *ast.FuncCallExpr:
		o := a.pop()
		first := a.firstOf(n.Func)
		if n.Func == nil {
			first = a.firstOf(n.Receiver)
		}
		last := -1
		if o.form {
			last = a.closeAt(o.tok)
		} else if len(n.Args) == 1 {
			last = a.lastOf(n.Args[0])
		}
		a.record(n, first, last)
	case *ast.LogicalOpExpr:
		a.binary(n, n.Lhs, n.Rhs)
	case *ast.RelationalOpExpr:
		a.binary(n, n.Lhs, n.Rhs)
	case *ast.StringConcatOpExpr:
		a.binary(n, n.Lhs, n.Rhs)
	case *ast.ArithmeticOpExpr:
		a.binary(n, n.Lhs, n.Rhs)
	case *ast.UnaryMinusOpExpr:
		a.unary(n, '-', n.Expr)
	case *ast.UnaryNotOpExpr:
		a.unary(n, parse.TNot, n.Expr)
	case *ast.UnaryLenOpExpr:
		a.unary(n, '#', n.Expr)
	}
}

func (a *aligner) binary(e, lhs, rhs ast.Expr) {
	a.record(e, a.firstOf(lhs), a.lastOf(rhs))
}

// unary records an operator expression from its operator, the token
// before the operand's (or before the parentheses opening it): '-' is also
// binary, so the operator is found from the operand, not by looking ahead.
func (a *aligner) unary(e ast.Expr, op int, sub ast.Expr) {
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
