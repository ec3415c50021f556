package lualint

import "github.com/yuin/gopher-lua/ast"

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

// resolver is the pass before the checker (resolve): it binds every name
// to its variable by Lua's scope rules and collects every assignment.
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
	method  *ast.FunctionExpr // the function of function a:m(), whose first parameter is self
	outer   []outerFn         // the functions around the one being read
}

// outerFn is what the resolver restores when a function's body ends.
type outerFn struct {
	fn     *ast.FunctionExpr
	active []*loopInfo
}

func resolve(chunk []ast.Stmt, localFunc map[*ast.LocalAssignStmt]bool, vals *values) *resolver {
	r := &resolver{refs: map[*ast.IdentExpr]*variable{}, decls: map[any][]*variable{},
		globals: map[string]*variable{}, loops: map[ast.Stmt]*loopInfo{}, localFunc: localFunc, values: vals}
	r.push()
	walk(r, chunk, valuesFirst)
	r.pop()
	return r
}

// push opens a scope, pop closes it.
func (r *resolver) push() {
	r.scope = &scope{vars: map[string]*variable{}, parent: r.scope}
	r.depth++
}

func (r *resolver) pop() {
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

// startLoop opens a loop's scope; endLoop closes it, after its body (and
// the condition of a while or a repeat).
func (r *resolver) startLoop(st ast.Stmt) {
	l := &loopInfo{depth: r.depth + 1, lo: r.nassign, seen: map[*variable]bool{}}
	r.loops[st] = l
	r.active = append(r.active, l)
	r.push()
}

func (r *resolver) endLoop(st ast.Stmt) {
	r.pop()
	r.active = r.active[:len(r.active)-1]
	l := r.loops[st]
	l.hi = r.nassign
	if n := len(r.active); n > 0 {
		for _, v := range l.vars {
			r.active[n-1].add(v)
		}
	}
}

// enter binds a name where it is read, and opens the scopes that start
// with a statement or a function.
func (r *resolver) enter(n node) bool {
	switch n := n.(type) {
	case *ast.LocalAssignStmt:
		if fn, ok := onlyFunc(n.Exprs); ok && r.localFunc[n] {
			// local function f: f is seen in its own body
			v := r.declare(n.Names[0])
			r.decls[n] = []*variable{v}
			r.assign(v, &assignment{rhs: fn, gline: n.Line()})
		}
	case *ast.DoBlockStmt:
		r.push()
	case *ast.WhileStmt:
		r.startLoop(n)
	case *ast.RepeatStmt:
		r.startLoop(n) // until sees the body's locals
	case *ast.FuncDefStmt:
		if id, ok := n.Name.Func.(*ast.IdentExpr); ok {
			v := r.lookup(id.Value)
			r.refs[id] = v
			r.assign(v, &assignment{rhs: n.Func, gline: n.Line()})
		}
		if n.Name.Receiver != nil {
			r.method = n.Func
		}
	case *ast.BreakStmt:
		if len(r.active) == 0 && r.noLoop == nil {
			r.noLoop = n
		}
	case *ast.LabelStmt:
		r.lua52Stmt(n)
	case *ast.GotoStmt:
		r.lua52Stmt(n)
	case *ast.IdentExpr:
		r.refs[n] = r.lookup(n.Value)
	case *ast.FunctionExpr:
		r.function(n)
	}
	return true
}

func (r *resolver) lua52Stmt(st ast.Stmt) {
	if r.lua52 == nil {
		r.lua52 = st
	}
}

// function opens a function's scope with its parameters (self first in a
// method).
func (r *resolver) function(fn *ast.FunctionExpr) {
	r.outer = append(r.outer, outerFn{r.fn, r.active})
	r.fn, r.active = fn, nil
	r.push()
	var params []*variable
	var names []string
	if fn == r.method {
		names = append(names, "self")
		r.method = nil
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
}

// at assigns an assignment's targets, and opens the scopes of an if's
// arms and of a for loop, whose variables are declared after the
// expressions that start it.
func (r *resolver) at(n node, p place, i int) bool {
	switch n := n.(type) {
	case *ast.AssignStmt:
		if p != placeTarget {
			break
		}
		if id, ok := n.Lhs[i].(*ast.IdentExpr); ok {
			v := r.lookup(id.Value)
			r.refs[id] = v
			r.assign(v, listAssign(n.Rhs, i, n.Line()))
		}
	case *ast.IfStmt:
		if p == placeBody {
			r.push()
		} else {
			r.pop()
		}
	case *ast.NumberForStmt:
		if p == placeBody {
			r.startLoop(n)
			v := r.declare(n.Name)
			r.decls[n] = []*variable{v}
			r.assign(v, &assignment{fixed: r.values.fixed(kindOther, "loop variable", n.Line())})
		}
	case *ast.GenericForStmt:
		if p == placeBody {
			r.forIn(n)
		}
	}
	return true
}

// forIn declares the variables of a generic for: the index and the key of
// ipairs(KEYS) and pairs(KEYS) are known.
func (r *resolver) forIn(st *ast.GenericForStmt) {
	overKeys := r.iteratesKeys(st.Exprs)
	r.startLoop(st)
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
}

// leave declares a local statement's names, after its expressions, and
// closes the scopes.
func (r *resolver) leave(n node) {
	switch n := n.(type) {
	case *ast.LocalAssignStmt:
		if _, ok := onlyFunc(n.Exprs); ok && r.localFunc[n] {
			return
		}
		vars := make([]*variable, len(n.Names))
		for i, name := range n.Names {
			vars[i] = r.declare(name)
			r.assign(vars[i], listAssign(n.Exprs, i, n.Line()))
		}
		r.decls[n] = vars
	case *ast.DoBlockStmt:
		r.pop()
	case *ast.WhileStmt, *ast.RepeatStmt, *ast.NumberForStmt, *ast.GenericForStmt:
		r.endLoop(n.(ast.Stmt))
	case *ast.FunctionExpr:
		r.pop()
		o := r.outer[len(r.outer)-1]
		r.outer = r.outer[:len(r.outer)-1]
		r.fn, r.active = o.fn, o.active
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
