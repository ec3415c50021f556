package lualint

import (
	"github.com/yuin/gopher-lua/ast"

	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

// checker is the last pass (check, flow.go): it follows the script in
// order, keeping which values each variable may hold, and checks every
// call (call.go); notes.go says which KEYS keys only some branches use.
type checker struct {
	file   string
	src    *luaSource
	spans  map[ast.Expr]tokSpan
	r      *resolver
	values *values
	rep    *lint.ScriptReport

	fn      *ast.FunctionExpr // the function being read; nil for the main chunk
	vals    map[*variable][]*value
	trail   []trailEntry
	dead    bool // after a return or break: the path joins nothing
	guards  []guard
	inLoop  *loopCtx
	ifs     []*ifCtx
	fns     []fnCtx
	assigns [][][]*value // the values of the assignments being read, for their targets

	uses    map[string][]keyUse
	useKeys []string // keys in order of first use
}

// trailEntry is one write to the state, with what it replaced, so that a
// branch can be undone: the state is one map, and reading a branch costs
// what the branch writes, not the number of variables.
type trailEntry struct {
	v        *variable
	old, new []*value
	had      bool
}

// loopCtx is the innermost loop being read.
type loopCtx struct {
	broke bool // a break that can run

	once       bool // the body runs at least once (repeat)
	mark       int  // the trail's length before the loop
	deadBefore bool
	entry      map[*variable][]*value // the state at the top of the body
	outer      *loopCtx               // the loop around it in the same function
}

// ifCtx is an if being read: the state after its then arm.
type ifCtx struct {
	mark       int // the trail's length before the if
	deadBefore bool
	then       map[*variable][]*value
	thenDead   bool
}

// fnCtx is what the checker restores when a function's body ends.
type fnCtx struct {
	mark   int
	fn     *ast.FunctionExpr
	dead   bool
	guards []guard
	inLoop *loopCtx
}

// guard is one if branch a statement lies in: arm 0 is then, 1 is else.
type guard struct {
	stmt *ast.IfStmt
	arm  int
}

// keyUse is one use of a key taken from KEYS.
type keyUse struct {
	line, col int
	guards    []guard
}

// pos returns the line and column where e starts.
func (c *checker) pos(e ast.Expr) (int, int) {
	if sp, ok := c.spans[e]; ok {
		first, _ := c.src.widen(sp.first, sp.last)
		return c.src.posAt(c.src.toks[first].start)
	}
	line, _ := c.src.posAt(c.src.goffset(e.Line()))
	return line, 0
}

// text returns e's source text, or e written back as Lua when its tokens
// could not be placed.
func (c *checker) text(e ast.Expr) string {
	if sp, ok := c.spans[e]; ok {
		return c.src.text(sp.first, sp.last)
	}
	return render(e)
}

func (c *checker) lineOf(e ast.Expr) int {
	line, _ := c.pos(e)
	return line
}

func (c *checker) other(e ast.Expr) *value {
	c.values.n++
	return &value{kind: kindOther, expr: c.text(e), line: c.lineOf(e), seq: c.values.n}
}

func (c *checker) isGlobal(e ast.Expr, name string) bool { return c.r.isGlobal(e, name) }

// lookup returns the values v may hold where it is read. A variable of
// the function being read that no other function assigns is followed in
// order; any other variable (an upvalue, a global read in a function, one
// a nested function assigns) may hold the value of any of its
// assignments, and so may one that no assignment reaches in order (a
// global set after the call).
func (c *checker) lookup(v *variable, inOrder bool) []*value {
	if v == nil {
		return nil
	}
	if v.global && len(v.assigns) == 0 {
		if v.name == "redis" || v.name == "server" {
			return []*value{c.values.named(kindLib, v.name)}
		}
		return nil
	}
	if inOrder && !v.outer && v.fn == c.fn {
		if vals := c.vals[v]; len(vals) > 0 {
			return vals
		}
	}
	return c.all(v)
}

// all returns the values of every assignment of v.
func (c *checker) all(v *variable) []*value {
	switch v.state {
	case 1:
		return nil // a cycle: x = y, y = x
	case 2:
		return v.all
	}
	v.state = 1
	var out []*value
	for _, a := range v.assigns {
		out = union(out, c.assigned(a, false))
	}
	v.all, v.state = out, 2
	return out
}

// assigned returns the values one assignment gives.
func (c *checker) assigned(a *assignment, inOrder bool) []*value {
	if !inOrder {
		if a.memo == nil {
			a.memo = c.assignedNow(a, false)
		}
		return a.memo
	}
	return c.assignedNow(a, true)
}

func (c *checker) assignedNow(a *assignment, inOrder bool) []*value {
	switch {
	case a.fixed != nil:
		return []*value{a.fixed}
	case a.rhs == nil:
		return []*value{c.values.fixed(kindOther, "nil", a.gline)}
	case a.extra:
		return []*value{c.other(a.rhs)}
	}
	return c.valueOf(a.rhs, inOrder)
}

// valueOf returns the values an expression may have: KEYS[...], ARGV[...],
// the redis table and its call functions, a variable's values, or itself.
func (c *checker) valueOf(e ast.Expr, inOrder bool) []*value {
	switch e := e.(type) {
	case *ast.IdentExpr:
		if vals := c.lookup(c.r.refs[e], inOrder); len(vals) > 0 {
			return vals
		}
	case *ast.AttrGetExpr:
		switch {
		case c.isGlobal(e.Object, "KEYS"):
			c.values.n++
			return []*value{{kind: kindKeys, expr: c.text(e), key: render(e), line: c.lineOf(e), seq: c.values.n}}
		case c.isGlobal(e.Object, "ARGV"):
			c.values.n++
			return []*value{{kind: kindArgv, expr: c.text(e), line: c.lineOf(e), seq: c.values.n}}
		}
		if k, ok := e.Key.(*ast.StringExpr); ok && (k.Value == "call" || k.Value == "pcall") {
			var out []*value
			for _, o := range c.valueOf(e.Object, inOrder) {
				if o.kind == kindLib {
					out = union(out, []*value{c.values.named(kindFn, o.name+"."+k.Value)})
				}
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	return []*value{c.other(e)}
}

func (c *checker) set(v *variable, vals []*value) {
	if v == nil {
		return
	}
	old, had := c.vals[v]
	c.trail = append(c.trail, trailEntry{v: v, old: old, new: vals, had: had})
	c.vals[v] = vals
}

// undo takes back the writes since the trail had length mark.
func (c *checker) undo(mark int) {
	for i := len(c.trail) - 1; i >= mark; i-- {
		e := c.trail[i]
		if e.had {
			c.vals[e.v] = e.old
		} else {
			delete(c.vals, e.v)
		}
	}
	c.trail = c.trail[:mark]
}

// capture returns the values of the variables written since mark.
func (c *checker) capture(mark int) map[*variable][]*value {
	m := map[*variable][]*value{}
	for _, e := range c.trail[mark:] {
		m[e.v] = c.vals[e.v]
	}
	return m
}
