package lualint

import (
	"slices"

	"github.com/yuin/gopher-lua/ast"

	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

// check is the last pass: it follows the script in the order it runs
// (walk, valuesFirst), with the expressions the aligner placed and the
// names the resolver bound, and adds the calls it checks and their
// findings to rep. The hooks below keep the state of the variables branch
// by branch, and check each call when its arguments have been read.
func check(file string, chunk []ast.Stmt, a *aligner, r *resolver, rep *lint.ScriptReport) *checker {
	c := &checker{file: file, src: a.s, spans: a.spans, r: r, values: r.values, rep: rep,
		vals: map[*variable][]*value{}, uses: map[string][]keyUse{}}
	walk(c, chunk, valuesFirst)
	return c
}

func (c *checker) enter(n node) bool {
	switch n := n.(type) {
	case *ast.WhileStmt:
		c.startLoop(n, false)
	case *ast.RepeatStmt:
		c.startLoop(n, true)
	case *ast.BreakStmt:
		if c.inLoop != nil && !c.dead {
			c.inLoop.broke = true
		}
		c.dead = true
	case *ast.FunctionExpr:
		c.function(n)
	}
	return true
}

func (c *checker) at(n node, p place, i int) bool {
	switch n := n.(type) {
	case *ast.AssignStmt:
		switch p {
		case placeSides:
			c.assigns = append(c.assigns, c.list(n.Rhs, len(n.Lhs), n.Line()))
		case placeTarget:
			if id, ok := n.Lhs[i].(*ast.IdentExpr); ok {
				c.set(c.r.refs[id], c.assigns[len(c.assigns)-1][i])
			}
		}
	case *ast.IfStmt:
		switch {
		case p == placeBody && i == 0:
			c.startIf(n)
		case p == placeBodyEnd && i == 0:
			c.thenEnd()
		}
	case *ast.NumberForStmt, *ast.GenericForStmt:
		if p == placeBody {
			c.startLoop(n.(ast.Stmt), false)
			c.bind(c.r.decls[n])
		}
	}
	return true
}

func (c *checker) leave(n node) {
	switch n := n.(type) {
	case *ast.AssignStmt:
		c.assigns = c.assigns[:len(c.assigns)-1]
	case *ast.LocalAssignStmt:
		vars := c.r.decls[n]
		if fn, ok := onlyFunc(n.Exprs); ok && c.r.localFunc[n] {
			for _, v := range vars {
				c.set(v, []*value{c.other(fn)})
			}
			return
		}
		vals := c.list(n.Exprs, len(n.Names), n.Line())
		for i, v := range vars {
			if i < len(vals) {
				c.set(v, vals[i])
			}
		}
	case *ast.IfStmt:
		c.endIf()
	case *ast.WhileStmt, *ast.RepeatStmt, *ast.NumberForStmt, *ast.GenericForStmt:
		c.endLoop()
	case *ast.FuncDefStmt:
		if id, ok := n.Name.Func.(*ast.IdentExpr); ok {
			c.set(c.r.refs[id], []*value{c.other(n.Func)})
		}
	case *ast.ReturnStmt:
		c.dead = true
	case *ast.FunctionExpr:
		c.endFunction()
	case *ast.FuncCallExpr:
		c.call(n)
	}
}

// list returns the values of expressions, already read, assigned to n
// names.
func (c *checker) list(exprs []ast.Expr, n int, gline int) [][]*value {
	vals := make([][]*value, n)
	for i := range vals {
		vals[i] = c.assigned(listAssign(exprs, i, gline), true)
	}
	return vals
}

// bind gives loop variables and parameters their fixed values.
func (c *checker) bind(vars []*variable) {
	for _, v := range vars {
		if len(v.assigns) > 0 && v.assigns[0].fixed != nil {
			c.set(v, []*value{v.assigns[0].fixed})
		}
	}
}

// An if's two arms are read from the state before it (startIf, thenEnd);
// after it (endIf) a variable may hold what it holds at the end of either
// arm that does not end in return or break.
func (c *checker) startIf(st *ast.IfStmt) {
	c.ifs = append(c.ifs, &ifCtx{mark: len(c.trail), deadBefore: c.dead})
	c.guards = append(c.guards, guard{st, 0})
}

func (c *checker) thenEnd() {
	f := c.ifs[len(c.ifs)-1]
	f.then, f.thenDead = c.capture(f.mark), c.dead
	c.undo(f.mark)
	c.dead = f.deadBefore
	c.guards[len(c.guards)-1].arm = 1
}

func (c *checker) endIf() {
	f := c.ifs[len(c.ifs)-1]
	c.ifs = c.ifs[:len(c.ifs)-1]
	then, thenDead := f.then, f.thenDead
	els, elseDead := c.capture(f.mark), c.dead
	c.undo(f.mark)
	c.guards = c.guards[:len(c.guards)-1]
	join := func(v *variable) {
		t, ok := then[v]
		if !ok {
			t = c.vals[v]
		}
		e, ok := els[v]
		if !ok {
			e = c.vals[v]
		}
		switch {
		case thenDead && !elseDead:
			c.set(v, e)
		case elseDead && !thenDead:
			c.set(v, t)
		default:
			c.set(v, union(t, e))
		}
	}
	for v := range then {
		join(v)
	}
	for v := range els {
		if _, ok := then[v]; !ok {
			join(v)
		}
	}
	c.dead = thenDead && elseDead
}

// A loop body is read once (startLoop to endLoop), from a state to which
// the assignments in the body have been added (they reach its top on the
// next iteration). The loop leaves with the state at the end of the body,
// unless the body runs at least once (repeat) the state before it, and
// when a break can run, any value the body gives a variable (what a
// variable holds at each break is not kept: a loop of many breaks would
// cost their product).
func (c *checker) startLoop(st ast.Stmt, once bool) {
	mark, deadBefore := len(c.trail), c.dead
	if l := c.r.loops[st]; l != nil {
		for _, v := range l.vars {
			vals := c.vals[v]
			i, _ := slices.BinarySearchFunc(v.assigns, l.lo, func(a *assignment, lo int) int { return a.idx - lo })
			for ; i < len(v.assigns) && v.assigns[i].idx < l.hi; i++ {
				vals = union(vals, c.assigned(v.assigns[i], false))
			}
			c.set(v, vals)
		}
	}
	c.inLoop = &loopCtx{once: once, mark: mark, deadBefore: deadBefore, entry: c.capture(mark), outer: c.inLoop}
}

func (c *checker) endLoop() {
	lc := c.inLoop
	c.inLoop = lc.outer
	mark, once, entry := lc.mark, lc.once, lc.entry
	end, endDead := c.capture(mark), c.dead
	var written map[*variable][]*value
	if lc.broke {
		written = map[*variable][]*value{}
		for _, e := range c.trail[mark:] {
			written[e.v] = union(written[e.v], e.new)
		}
	}
	c.undo(mark)
	live := !endDead || lc.broke || (!once && !lc.deadBefore)
	for v := range end {
		ent, ok := entry[v]
		if !ok {
			ent = c.vals[v]
		}
		var out []*value
		if !once {
			out = union(out, ent)
		}
		if !endDead {
			out = union(out, end[v])
		}
		if lc.broke {
			out = union(union(out, ent), written[v])
		}
		c.set(v, out)
	}
	c.dead = lc.deadBefore || !live
}

// A function body is read where the function is defined (function to
// endFunction), with its parameters bound and the branches around it
// forgotten.
func (c *checker) function(fn *ast.FunctionExpr) {
	c.fns = append(c.fns, fnCtx{mark: len(c.trail), fn: c.fn, dead: c.dead, guards: c.guards, inLoop: c.inLoop})
	c.fn, c.dead, c.guards, c.inLoop = fn, false, nil, nil
	c.bind(c.r.decls[fn])
}

func (c *checker) endFunction() {
	f := c.fns[len(c.fns)-1]
	c.fns = c.fns[:len(c.fns)-1]
	c.undo(f.mark)
	c.fn, c.dead, c.guards, c.inLoop = f.fn, f.dead, f.guards, f.inLoop
}
