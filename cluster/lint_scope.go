package cluster

import (
	"github.com/yuin/gopher-lua/ast"
)

// variable is one Lua variable: a local (one declaration, seen only in its
// block), a parameter or loop variable, or a global (one per name).
type variable struct {
	name   string
	global bool
	fn     *ast.FunctionExpr // the function declaring it; nil for the main chunk and globals
	depth  int               // block depth of the declaration; -1 for globals
	// assigns are every assignment to the variable anywhere in the script.
	assigns []*assignment
	// outer is set when a function other than fn assigns it: its value at
	// a read then cannot be followed in order.
	outer bool

	all   []*value // the values of every assignment, once computed
	state int      // of all: 0 not computed, 1 computing, 2 done
}

// assignment is one place a variable gets a value.
type assignment struct {
	rhs   ast.Expr // the value; nil for nil (local x, or a list too short)
	extra bool     // the variable takes a second or later result of rhs (a call or ...)
	fixed *value   // a parameter's or loop variable's value, instead of rhs
	gline int      // the statement's line, for nil
	idx   int      // order of the assignment in the script

	memo []*value // the values when read out of order, once computed
}

type scope struct {
	vars   map[string]*variable
	parent *scope
}

// loopInfo says which assignments lie in a loop's body: those numbered
// lo to hi-1. Of them, the ones to vars (declared outside the body, and
// assigned in it outside the functions it defines) reach the top of the
// body on the next iteration.
type loopInfo struct {
	depth  int
	lo, hi int
	vars   []*variable
	seen   map[*variable]bool
}

func (l *loopInfo) add(v *variable) {
	if v.depth < l.depth && !l.seen[v] {
		l.seen[v] = true
		l.vars = append(l.vars, v)
	}
}

// resolver is the first pass: it binds every name to its variable by
// Lua's scope rules and collects every assignment.
type resolver struct {
	refs      map[*ast.IdentExpr]*variable
	decls     map[any][]*variable // a local statement, for loop or function: the variables it declares
	globals   map[string]*variable
	loops     map[ast.Stmt]*loopInfo
	localFunc map[*ast.LocalAssignStmt]bool
	lua52     ast.Stmt // the first goto or label (Lua 5.2; Redis runs 5.1)
	noLoop    ast.Stmt // the first break outside a loop, which Lua 5.1 refuses
	values    *values

	scope   *scope
	depth   int
	fn      *ast.FunctionExpr
	active  []*loopInfo
	nassign int
}

func resolve(chunk []ast.Stmt, localFunc map[*ast.LocalAssignStmt]bool, vals *values) *resolver {
	r := &resolver{refs: map[*ast.IdentExpr]*variable{}, decls: map[any][]*variable{},
		globals: map[string]*variable{}, loops: map[ast.Stmt]*loopInfo{}, localFunc: localFunc, values: vals}
	r.scoped(func() { r.block(chunk) })
	return r
}

func (r *resolver) scoped(body func()) {
	r.scope = &scope{vars: map[string]*variable{}, parent: r.scope}
	r.depth++
	body()
	r.depth--
	r.scope = r.scope.parent
}

func (r *resolver) declare(name string) *variable {
	v := &variable{name: name, fn: r.fn, depth: r.depth}
	r.scope.vars[name] = v
	return v
}

func (r *resolver) lookup(name string) *variable {
	for s := r.scope; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v
		}
	}
	v, ok := r.globals[name]
	if !ok {
		v = &variable{name: name, global: true, depth: -1}
		r.globals[name] = v
	}
	return v
}

func (r *resolver) assign(v *variable, a *assignment) {
	a.idx = r.nassign
	r.nassign++
	v.assigns = append(v.assigns, a)
	if v.fn != r.fn {
		v.outer = true
	}
	if n := len(r.active); n > 0 {
		r.active[n-1].add(v)
	}
}

// listAssign is the assignment of the i-th of n names from exprs.
func listAssign(exprs []ast.Expr, i int, gline int) *assignment {
	if i < len(exprs) {
		return &assignment{rhs: exprs[i], gline: gline}
	}
	if n := len(exprs); n > 0 && multiValued(exprs[n-1]) {
		return &assignment{rhs: exprs[n-1], extra: true, gline: gline}
	}
	return &assignment{gline: gline}
}

func multiValued(e ast.Expr) bool {
	switch e.(type) {
	case *ast.FuncCallExpr, *ast.Comma3Expr:
		return true
	}
	return false
}

func (r *resolver) block(stmts []ast.Stmt) {
	for _, st := range stmts {
		r.stmt(st)
	}
}

func (r *resolver) loop(st ast.Stmt, body func()) {
	l := &loopInfo{depth: r.depth + 1, lo: r.nassign, seen: map[*variable]bool{}}
	r.loops[st] = l
	r.active = append(r.active, l)
	r.scoped(body)
	r.active = r.active[:len(r.active)-1]
	l.hi = r.nassign
	if n := len(r.active); n > 0 {
		for _, v := range l.vars {
			r.active[n-1].add(v)
		}
	}
}

func (r *resolver) stmt(st ast.Stmt) {
	switch st := st.(type) {
	case *ast.AssignStmt:
		r.exprs(st.Rhs)
		for i, l := range st.Lhs {
			id, ok := l.(*ast.IdentExpr)
			if !ok {
				r.expr(l)
				continue
			}
			v := r.lookup(id.Value)
			r.refs[id] = v
			r.assign(v, listAssign(st.Rhs, i, st.Line()))
		}
	case *ast.LocalAssignStmt:
		if fn, ok := onlyFunc(st.Exprs); ok && r.localFunc[st] {
			v := r.declare(st.Names[0])
			r.decls[st] = []*variable{v}
			r.assign(v, &assignment{rhs: fn, gline: st.Line()})
			r.function(fn, false)
			return
		}
		r.exprs(st.Exprs)
		vars := make([]*variable, len(st.Names))
		for i, n := range st.Names {
			vars[i] = r.declare(n)
			r.assign(vars[i], listAssign(st.Exprs, i, st.Line()))
		}
		r.decls[st] = vars
	case *ast.FuncCallStmt:
		r.expr(st.Expr)
	case *ast.DoBlockStmt:
		r.scoped(func() { r.block(st.Stmts) })
	case *ast.WhileStmt:
		r.loop(st, func() {
			r.expr(st.Condition)
			r.block(st.Stmts)
		})
	case *ast.RepeatStmt:
		r.loop(st, func() {
			r.block(st.Stmts)
			r.expr(st.Condition) // until sees the body's locals
		})
	case *ast.IfStmt:
		r.expr(st.Condition)
		r.scoped(func() { r.block(st.Then) })
		r.scoped(func() { r.block(st.Else) })
	case *ast.NumberForStmt:
		r.expr(st.Init)
		r.expr(st.Limit)
		r.expr(st.Step)
		r.loop(st, func() {
			v := r.declare(st.Name)
			r.decls[st] = []*variable{v}
			r.assign(v, &assignment{fixed: r.values.fixed(kindOther, "loop variable", st.Line())})
			r.block(st.Stmts)
		})
	case *ast.GenericForStmt:
		r.exprs(st.Exprs)
		overKeys := r.iteratesKeys(st.Exprs)
		r.loop(st, func() {
			vars := make([]*variable, len(st.Names))
			for i, n := range st.Names {
				vars[i] = r.declare(n)
				val := r.values.fixed(kindOther, "loop variable", st.Line())
				switch {
				case overKeys && i == 0:
					val = r.values.fixed(kindOther, "index of KEYS", st.Line())
				case overKeys && i == 1:
					val = r.values.fixed(kindKeys, "KEYS", st.Line())
					val.key = "KEYS"
				}
				r.assign(vars[i], &assignment{fixed: val})
			}
			r.decls[st] = vars
			r.block(st.Stmts)
		})
	case *ast.FuncDefStmt:
		if id, ok := st.Name.Func.(*ast.IdentExpr); ok {
			v := r.lookup(id.Value)
			r.refs[id] = v
			r.assign(v, &assignment{rhs: st.Func, gline: st.Line()})
		} else {
			r.expr(st.Name.Func)
			r.expr(st.Name.Receiver)
		}
		r.function(st.Func, st.Name.Receiver != nil)
	case *ast.ReturnStmt:
		r.exprs(st.Exprs)
	case *ast.BreakStmt:
		if len(r.active) == 0 && r.noLoop == nil {
			r.noLoop = st
		}
	case *ast.LabelStmt, *ast.GotoStmt:
		if r.lua52 == nil {
			r.lua52 = st
		}
	}
}

// iteratesKeys reports whether a generic for's expressions are
// ipairs(KEYS) or pairs(KEYS).
func (r *resolver) iteratesKeys(exprs []ast.Expr) bool {
	if len(exprs) != 1 {
		return false
	}
	call, ok := exprs[0].(*ast.FuncCallExpr)
	if !ok || len(call.Args) != 1 {
		return false
	}
	return (r.isGlobal(call.Func, "ipairs") || r.isGlobal(call.Func, "pairs")) && r.isGlobal(call.Args[0], "KEYS")
}

// isGlobal reports whether e is the global name (not a local of that name).
func (r *resolver) isGlobal(e ast.Expr, name string) bool {
	id, ok := e.(*ast.IdentExpr)
	if !ok || id.Value != name {
		return false
	}
	v := r.refs[id]
	return v != nil && v.global
}

func (r *resolver) function(fn *ast.FunctionExpr, method bool) {
	savedFn, savedActive := r.fn, r.active
	r.fn, r.active = fn, nil
	r.scoped(func() {
		var params []*variable
		var names []string
		if method {
			names = append(names, "self")
		}
		if fn.ParList != nil {
			names = append(names, fn.ParList.Names...)
		}
		for _, n := range names {
			v := r.declare(n)
			val := r.values.fixed(kindParam, n, fn.Line())
			val.name = n
			r.assign(v, &assignment{fixed: val})
			params = append(params, v)
		}
		r.decls[fn] = params
		r.block(fn.Stmts)
	})
	r.fn, r.active = savedFn, savedActive
}

func (r *resolver) exprs(es []ast.Expr) {
	for _, e := range es {
		r.expr(e)
	}
}

func (r *resolver) expr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.IdentExpr:
		r.refs[e] = r.lookup(e.Value)
	case *ast.AttrGetExpr:
		r.expr(e.Object)
		r.expr(e.Key)
	case *ast.FuncCallExpr:
		r.expr(e.Func)
		r.expr(e.Receiver)
		r.exprs(e.Args)
	case *ast.LogicalOpExpr:
		r.expr(e.Lhs)
		r.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		r.expr(e.Lhs)
		r.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		r.expr(e.Lhs)
		r.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		r.expr(e.Lhs)
		r.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		r.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		r.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		r.expr(e.Expr)
	case *ast.FunctionExpr:
		r.function(e, false)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			r.expr(f.Key)
			r.expr(f.Value)
		}
	}
}

// maxLevels is how deeply statements and expressions may nest before the
// lint stops: its walks recurse once per level.
const maxLevels = 1000

// tooDeep reports whether the AST nests more than maxLevels levels.
func tooDeep(stmts []ast.Stmt) bool { return !stmtsWithin(stmts, maxLevels) }

func stmtsWithin(stmts []ast.Stmt, n int) bool {
	if n <= 0 {
		return len(stmts) == 0
	}
	for _, st := range stmts {
		if !stmtWithin(st, n) {
			return false
		}
	}
	return true
}

func stmtWithin(st ast.Stmt, n int) bool {
	n--
	switch st := st.(type) {
	case *ast.AssignStmt:
		return exprsWithin(st.Lhs, n) && exprsWithin(st.Rhs, n)
	case *ast.LocalAssignStmt:
		return exprsWithin(st.Exprs, n)
	case *ast.FuncCallStmt:
		return exprWithin(st.Expr, n)
	case *ast.DoBlockStmt:
		return stmtsWithin(st.Stmts, n)
	case *ast.WhileStmt:
		return exprWithin(st.Condition, n) && stmtsWithin(st.Stmts, n)
	case *ast.RepeatStmt:
		return exprWithin(st.Condition, n) && stmtsWithin(st.Stmts, n)
	case *ast.IfStmt:
		return exprWithin(st.Condition, n) && stmtsWithin(st.Then, n) && stmtsWithin(st.Else, n)
	case *ast.NumberForStmt:
		return exprWithin(st.Init, n) && exprWithin(st.Limit, n) && exprWithin(st.Step, n) && stmtsWithin(st.Stmts, n)
	case *ast.GenericForStmt:
		return exprsWithin(st.Exprs, n) && stmtsWithin(st.Stmts, n)
	case *ast.FuncDefStmt:
		return exprWithin(st.Name.Func, n) && exprWithin(st.Name.Receiver, n) && exprWithin(st.Func, n)
	case *ast.ReturnStmt:
		return exprsWithin(st.Exprs, n)
	}
	return true
}

func exprsWithin(es []ast.Expr, n int) bool {
	for _, e := range es {
		if !exprWithin(e, n) {
			return false
		}
	}
	return true
}

func exprWithin(e ast.Expr, n int) bool {
	if e == nil {
		return true
	}
	if n <= 0 {
		return false
	}
	n--
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		return exprWithin(e.Object, n) && exprWithin(e.Key, n)
	case *ast.FuncCallExpr:
		return exprWithin(e.Func, n) && exprWithin(e.Receiver, n) && exprsWithin(e.Args, n)
	case *ast.LogicalOpExpr:
		return exprWithin(e.Lhs, n) && exprWithin(e.Rhs, n)
	case *ast.RelationalOpExpr:
		return exprWithin(e.Lhs, n) && exprWithin(e.Rhs, n)
	case *ast.StringConcatOpExpr:
		return exprWithin(e.Lhs, n) && exprWithin(e.Rhs, n)
	case *ast.ArithmeticOpExpr:
		return exprWithin(e.Lhs, n) && exprWithin(e.Rhs, n)
	case *ast.UnaryMinusOpExpr:
		return exprWithin(e.Expr, n)
	case *ast.UnaryNotOpExpr:
		return exprWithin(e.Expr, n)
	case *ast.UnaryLenOpExpr:
		return exprWithin(e.Expr, n)
	case *ast.FunctionExpr:
		return stmtsWithin(e.Stmts, n)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if !exprWithin(f.Key, n) || !exprWithin(f.Value, n) {
				return false
			}
		}
	}
	return true
}
