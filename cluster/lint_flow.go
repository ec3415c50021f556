package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

type valueKind int

const (
	kindOther valueKind = iota
	kindKeys            // KEYS[...]
	kindArgv            // ARGV[...]
	kindParam           // a function parameter
	kindFn              // redis.call or redis.pcall (server.call, server.pcall) itself
	kindLib             // the redis (or server) table itself
)

// value is where a variable's value can come from.
type value struct {
	kind valueKind
	expr string // the source text
	key  string // kindKeys: the key, KEYS[1] (KEYS for every key)
	name string // kindParam: the parameter; kindFn: redis.call; kindLib: redis
	line int
	seq  int // creation order, which is source order within a pass
}

// values makes value records.
type values struct {
	src *luaSource
	n   int
	fns map[string]*value
}

func (vs *values) fixed(kind valueKind, expr string, gline int) *value {
	line, _ := vs.src.posAt(vs.src.goffset(gline))
	vs.n++
	return &value{kind: kind, expr: expr, line: line, seq: vs.n}
}

// named returns the one value for the redis table or one of its call
// functions.
func (vs *values) named(kind valueKind, name string) *value {
	if v, ok := vs.fns[name]; ok {
		return v
	}
	vs.n++
	v := &value{kind: kind, expr: name, name: name, seq: vs.n}
	vs.fns[name] = v
	return v
}

// maxValues is how many values a variable keeps: past it, the earliest
// are kept, and the earliest that does not come from KEYS (the one a
// finding names) is never dropped.
const maxValues = 64

// union returns the values of a and b, without repeats, in creation order.
func union(a, b []*value) []*value {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	if len(b) <= maxValues && !slices.ContainsFunc(b, func(v *value) bool { return !slices.Contains(a, v) }) {
		return a // b adds nothing: the common case of a value met again
	}
	seen := make(map[*value]bool, len(a)+len(b))
	out := make([]*value, 0, len(a)+len(b))
	for _, v := range slices.Concat(a, b) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(x, y *value) int { return x.seq - y.seq })
	if len(out) > maxValues {
		kept := out[:maxValues:maxValues]
		if !slices.ContainsFunc(kept, func(v *value) bool { return v.kind != kindKeys }) {
			if i := slices.IndexFunc(out, func(v *value) bool { return v.kind != kindKeys }); i >= 0 {
				kept = append(kept[:maxValues-1:maxValues-1], out[i])
			}
		}
		out = kept
	}
	return out
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

// checker is the second pass: it follows the script in order, keeping
// which values each variable may hold, and checks every call.
type checker struct {
	file   string
	src    *luaSource
	spans  map[ast.Expr]tokSpan
	r      *resolver
	values *values
	rep    *ScriptReport

	fn     *ast.FunctionExpr // the function being read; nil for the main chunk
	vals   map[*variable][]*value
	trail  []trailEntry
	dead   bool // after a return or break: the path joins nothing
	guards []guard
	inLoop *loopCtx

	uses    map[string][]keyUse
	useKeys []string // keys in order of first use
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

func (c *checker) block(stmts []ast.Stmt) {
	for _, st := range stmts {
		c.stmt(st)
	}
}

// list evaluates the expressions assigned to n names.
func (c *checker) list(exprs []ast.Expr, n int, gline int) [][]*value {
	for _, e := range exprs {
		c.walk(e)
	}
	vals := make([][]*value, n)
	for i := range vals {
		vals[i] = c.assigned(listAssign(exprs, i, gline), true)
	}
	return vals
}

func (c *checker) stmt(st ast.Stmt) {
	switch st := st.(type) {
	case *ast.AssignStmt:
		vals := c.list(st.Rhs, len(st.Lhs), st.Line())
		for i, l := range st.Lhs {
			if id, ok := l.(*ast.IdentExpr); ok {
				c.set(c.r.refs[id], vals[i])
			} else {
				c.walk(l)
			}
		}
	case *ast.LocalAssignStmt:
		vars := c.r.decls[st]
		if fn, ok := onlyFunc(st.Exprs); ok && c.r.localFunc[st] {
			c.walk(fn)
			for _, v := range vars {
				c.set(v, []*value{c.other(fn)})
			}
			return
		}
		vals := c.list(st.Exprs, len(st.Names), st.Line())
		for i, v := range vars {
			if i < len(vals) {
				c.set(v, vals[i])
			}
		}
	case *ast.FuncCallStmt:
		c.walk(st.Expr)
	case *ast.DoBlockStmt:
		c.block(st.Stmts)
	case *ast.WhileStmt:
		c.loop(st, false, func() {
			c.walk(st.Condition)
			c.block(st.Stmts)
		})
	case *ast.RepeatStmt:
		c.loop(st, true, func() {
			c.block(st.Stmts)
			c.walk(st.Condition)
		})
	case *ast.IfStmt:
		c.walk(st.Condition)
		c.ifStmt(st)
	case *ast.NumberForStmt:
		c.walk(st.Init)
		c.walk(st.Limit)
		c.walk(st.Step)
		c.loop(st, false, func() {
			c.bind(c.r.decls[st])
			c.block(st.Stmts)
		})
	case *ast.GenericForStmt:
		for _, e := range st.Exprs {
			c.walk(e)
		}
		c.loop(st, false, func() {
			c.bind(c.r.decls[st])
			c.block(st.Stmts)
		})
	case *ast.FuncDefStmt:
		c.walk(st.Func)
		if id, ok := st.Name.Func.(*ast.IdentExpr); ok {
			c.set(c.r.refs[id], []*value{c.other(st.Func)})
		} else {
			c.walk(st.Name.Func)
			c.walk(st.Name.Receiver)
		}
	case *ast.ReturnStmt:
		for _, e := range st.Exprs {
			c.walk(e)
		}
		c.dead = true
	case *ast.BreakStmt:
		if c.inLoop != nil && !c.dead {
			c.inLoop.broke = true
		}
		c.dead = true
	}
}

// bind gives loop variables and parameters their fixed values.
func (c *checker) bind(vars []*variable) {
	for _, v := range vars {
		if len(v.assigns) > 0 && v.assigns[0].fixed != nil {
			c.set(v, []*value{v.assigns[0].fixed})
		}
	}
}

// ifStmt reads both arms of an if from the state before it; after it a
// variable may hold what it holds at the end of either arm that does not
// end in return or break.
func (c *checker) ifStmt(st *ast.IfStmt) {
	mark, deadBefore := len(c.trail), c.dead
	c.guards = append(c.guards, guard{st, 0})
	c.block(st.Then)
	then, thenDead := c.capture(mark), c.dead
	c.undo(mark)
	c.dead = deadBefore
	c.guards[len(c.guards)-1].arm = 1
	c.block(st.Else)
	els, elseDead := c.capture(mark), c.dead
	c.undo(mark)
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

// loop reads a loop body once, from a state to which the assignments in
// the body have been added (they reach its top on the next iteration).
// The loop leaves with the state at the end of the body, unless the body
// runs at least once (repeat) the state before it, and when a break can
// run, any value the body gives a variable (what a variable holds at each
// break is not kept: a loop of many breaks would cost their product).
func (c *checker) loop(st ast.Stmt, once bool, body func()) {
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
	entry := c.capture(mark)
	saved := c.inLoop
	lc := &loopCtx{}
	c.inLoop = lc
	body()
	c.inLoop = saved
	end, endDead := c.capture(mark), c.dead
	var written map[*variable][]*value
	if lc.broke {
		written = map[*variable][]*value{}
		for _, e := range c.trail[mark:] {
			written[e.v] = union(written[e.v], e.new)
		}
	}
	c.undo(mark)
	live := !endDead || lc.broke || (!once && !deadBefore)
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
	c.dead = deadBefore || !live
}

// function reads a function body where the function is defined, with its
// parameters bound and the branches around it forgotten.
func (c *checker) function(fn *ast.FunctionExpr) {
	mark := len(c.trail)
	savedFn, savedDead, savedGuards, savedLoop := c.fn, c.dead, c.guards, c.inLoop
	c.fn, c.dead, c.guards, c.inLoop = fn, false, nil, nil
	c.bind(c.r.decls[fn])
	c.block(fn.Stmts)
	c.undo(mark)
	c.fn, c.dead, c.guards, c.inLoop = savedFn, savedDead, savedGuards, savedLoop
}

// walk finds the calls in an expression (and the functions it defines).
func (c *checker) walk(e ast.Expr) {
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		c.walk(e.Object)
		c.walk(e.Key)
	case *ast.FuncCallExpr:
		c.walk(e.Func)
		c.walk(e.Receiver)
		for _, a := range e.Args {
			c.walk(a)
		}
		c.call(e)
	case *ast.LogicalOpExpr:
		c.walk(e.Lhs)
		c.walk(e.Rhs)
	case *ast.RelationalOpExpr:
		c.walk(e.Lhs)
		c.walk(e.Rhs)
	case *ast.StringConcatOpExpr:
		c.walk(e.Lhs)
		c.walk(e.Rhs)
	case *ast.ArithmeticOpExpr:
		c.walk(e.Lhs)
		c.walk(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		c.walk(e.Expr)
	case *ast.UnaryNotOpExpr:
		c.walk(e.Expr)
	case *ast.UnaryLenOpExpr:
		c.walk(e.Expr)
	case *ast.FunctionExpr:
		c.function(e)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			c.walk(f.Key)
			c.walk(f.Value)
		}
	}
}

// direct reports whether a callee is written redis.call, redis.pcall,
// server.call or server.pcall, with redis (server) the global.
func (c *checker) direct(callee ast.Expr) bool {
	g, ok := callee.(*ast.AttrGetExpr)
	if !ok || !(c.isGlobal(g.Object, "redis") || c.isGlobal(g.Object, "server")) {
		return false
	}
	k, ok := g.Key.(*ast.StringExpr)
	return ok && (k.Value == "call" || k.Value == "pcall")
}

// call checks one call if its callee may be redis.call or redis.pcall,
// written so or through an alias.
func (c *checker) call(call *ast.FuncCallExpr) {
	if call.Func == nil {
		return // redis:call(...) passes redis as the command
	}
	var fn *value
	for _, v := range c.valueOf(call.Func, true) {
		if v.kind == kindFn {
			fn = v
			break
		}
	}
	if fn == nil {
		return
	}
	c.rep.Calls++
	via := ""
	if !c.direct(call.Func) {
		via = c.text(call.Func)
	}
	if len(call.Args) == 0 {
		return
	}
	when := ""
	if len(c.guards) > 0 {
		when = c.when(c.guards)
	}
	name, ok := call.Args[0].(*ast.StringExpr)
	if !ok {
		line, col := c.pos(call.Args[0])
		expr := c.text(call.Args[0])
		callName := fn.name
		if via != "" {
			callName += " (called as " + via + ")"
		}
		reason := fmt.Sprintf("%s with a command name that is not a literal (%s): its key arguments cannot be checked", callName, expr)
		if when != "" {
			reason += " (the call runs only when " + when + ")"
		}
		c.rep.Findings = append(c.rep.Findings, Finding{File: c.file, Line: line, Column: col, Call: fn.name,
			Expr: expr, Reason: reason, Via: via, When: when})
		return
	}
	cmd := strings.ToUpper(name.Value)
	if noKeys[cmd] {
		return
	}
	spec, ok := commandKeys[cmd]
	if !ok {
		spec = keySpec{first: 1}
	}
	rest := call.Args[1:]
	for _, p := range keyArgs(spec, rest) {
		arg := rest[p-1]
		line, col := c.pos(arg)
		reason, keys := c.classify(arg)
		if reason == "" {
			for _, k := range keys {
				c.use(k, keyUse{line: line, col: col, guards: slices.Clone(c.guards)})
			}
			continue
		}
		c.rep.Findings = append(c.rep.Findings, Finding{File: c.file, Line: line, Column: col, Call: fn.name,
			Command: cmd, Arg: p, Expr: c.text(arg), Reason: reason, Via: via, When: when})
	}
}

func (c *checker) use(key string, u keyUse) {
	if _, ok := c.uses[key]; !ok {
		c.useKeys = append(c.useKeys, key)
	}
	c.uses[key] = append(c.uses[key], u)
}

// classify returns "" and the keys when a key argument comes from KEYS,
// else what it is instead.
func (c *checker) classify(arg ast.Expr) (string, []string) {
	switch e := arg.(type) {
	case *ast.AttrGetExpr:
		if c.isGlobal(e.Object, "KEYS") {
			return "", []string{render(e)}
		}
		if c.isGlobal(e.Object, "ARGV") {
			return "an ARGV value", nil
		}
	case *ast.FuncCallExpr:
		if c.isUnpackKeys(e) {
			return "", []string{"KEYS"}
		}
	case *ast.StringExpr:
		return "a string literal", nil
	case *ast.NumberExpr:
		return "a number literal", nil
	case *ast.NilExpr, *ast.TrueExpr, *ast.FalseExpr:
		return "a literal", nil
	case *ast.IdentExpr:
		return classifyVar(e.Value, c.lookup(c.r.refs[e], true))
	}
	if hasConcat(arg) {
		return "a key built by concatenation", nil
	}
	if c.isGlobal(leftmost(arg), "ARGV") {
		return "built from ARGV", nil
	}
	return "an expression not taken from KEYS[...]", nil
}

// isUnpackKeys reports whether e is unpack(KEYS) or table.unpack(KEYS).
func (c *checker) isUnpackKeys(e *ast.FuncCallExpr) bool {
	if len(e.Args) != 1 || !c.isGlobal(e.Args[0], "KEYS") {
		return false
	}
	if c.isGlobal(e.Func, "unpack") {
		return true
	}
	g, ok := e.Func.(*ast.AttrGetExpr)
	if !ok || !c.isGlobal(g.Object, "table") {
		return false
	}
	k, ok := g.Key.(*ast.StringExpr)
	return ok && k.Value == "unpack"
}

// hasConcat reports whether e joins strings with .., outside the calls,
// indexes, tables and functions within it.
func hasConcat(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.StringConcatOpExpr:
		return true
	case *ast.LogicalOpExpr:
		return hasConcat(e.Lhs) || hasConcat(e.Rhs)
	case *ast.RelationalOpExpr:
		return hasConcat(e.Lhs) || hasConcat(e.Rhs)
	case *ast.ArithmeticOpExpr:
		return hasConcat(e.Lhs) || hasConcat(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		return hasConcat(e.Expr)
	case *ast.UnaryNotOpExpr:
		return hasConcat(e.Expr)
	case *ast.UnaryLenOpExpr:
		return hasConcat(e.Expr)
	}
	return false
}

// leftmost returns the expression written first in e (ARGV in
// ARGV[1]:lower()).
func leftmost(e ast.Expr) ast.Expr {
	for {
		switch x := e.(type) {
		case *ast.AttrGetExpr:
			e = x.Object
		case *ast.FuncCallExpr:
			if x.Func != nil {
				e = x.Func
			} else {
				e = x.Receiver
			}
		case *ast.LogicalOpExpr:
			e = x.Lhs
		case *ast.RelationalOpExpr:
			e = x.Lhs
		case *ast.StringConcatOpExpr:
			e = x.Lhs
		case *ast.ArithmeticOpExpr:
			e = x.Lhs
		default:
			return e
		}
	}
}

// classifyVar says what is wrong with a variable given the values it may
// hold at the call, "" (and the keys) when they all come from KEYS.
func classifyVar(name string, vals []*value) (string, []string) {
	if len(vals) == 0 {
		return fmt.Sprintf("a variable (%s) never assigned from KEYS[...]", name), nil
	}
	var keys []string
	for _, v := range vals {
		switch v.kind {
		case kindKeys:
			keys = append(keys, v.key)
		case kindArgv:
			return fmt.Sprintf("a variable (%s) holding an ARGV value (line %d)", name, v.line), nil
		case kindParam:
			return fmt.Sprintf("a function parameter (%s), not KEYS[...]", name), nil
		default:
			where := ""
			if v.line > 0 {
				where = fmt.Sprintf(" (line %d)", v.line)
			}
			return fmt.Sprintf("a variable (%s) assigned from %s%s, not KEYS[...]", name, shorten(v.expr), where), nil
		}
	}
	return "", keys
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// condition returns the text of the condition under which an arm of an if
// runs: the condition itself for then, its negation for else.
func (c *checker) condition(g guard) string {
	cond := g.stmt.Condition
	line, _ := c.pos(cond)
	at := " (line " + strconv.Itoa(line) + ")"
	if g.arm == 0 {
		return c.text(cond) + at
	}
	switch e := cond.(type) {
	case *ast.RelationalOpExpr:
		switch e.Operator {
		case "==":
			return c.text(e.Lhs) + " ~= " + c.text(e.Rhs) + at
		case "~=":
			return c.text(e.Lhs) + " == " + c.text(e.Rhs) + at
		}
	case *ast.UnaryNotOpExpr:
		return c.text(e.Expr) + at
	case *ast.IdentExpr, *ast.AttrGetExpr, *ast.FuncCallExpr:
		return "not " + c.text(cond) + at
	}
	return "not (" + c.text(cond) + ")" + at
}

// when describes the branches a statement lies in, "" when none.
func (c *checker) when(gs []guard) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = c.condition(g)
	}
	return strings.Join(parts, " and ")
}

// covered reports whether uses, which share their first depth guards,
// happen whichever way the ifs below that go: one of them lies in no
// further branch, or some if has a covered use in both its arms.
func covered(uses []keyUse, depth int) bool {
	var ifs []*ast.IfStmt
	arms := map[*ast.IfStmt]*[2][]keyUse{}
	for _, u := range uses {
		if len(u.guards) == depth {
			return true
		}
		g := u.guards[depth]
		a, ok := arms[g.stmt]
		if !ok {
			a = &[2][]keyUse{}
			arms[g.stmt] = a
			ifs = append(ifs, g.stmt)
		}
		a[g.arm] = append(a[g.arm], u)
	}
	for _, s := range ifs {
		a := arms[s]
		if len(a[0]) > 0 && len(a[1]) > 0 && covered(a[0], depth+1) && covered(a[1], depth+1) {
			return true
		}
	}
	return false
}

// maxWhen is how many branches a note lists.
const maxWhen = 3

// notes returns a note for each KEYS key used only in some branches.
func (c *checker) notes() []Note {
	var out []Note
	for _, k := range c.useKeys {
		uses := c.uses[k]
		if covered(uses, 0) {
			continue
		}
		var whens []string
		more := 0
		for _, u := range uses {
			w := c.when(u.guards)
			if slices.Contains(whens, w) {
				continue
			}
			if len(whens) == maxWhen {
				more++
				continue
			}
			whens = append(whens, w)
		}
		when := strings.Join(whens, ", or when ")
		if more > 0 {
			when += fmt.Sprintf(", or in %d more branches", more)
		}
		out = append(out, Note{Line: uses[0].line, Column: uses[0].col, Key: k, When: when})
	}
	return out
}
