package lualint

import "github.com/yuin/gopher-lua/ast"

// node is a statement (ast.Stmt) or an expression (ast.Expr).
type node = ast.PositionHolder

// place is a point between a node's children where a visitor may act:
// where the grammar puts a keyword or a bracket, where a block of
// statements opens or closes, where an assignment assigns.
type place int

const (
	// placeBody is before a block of statements n holds: the body of a do,
	// loop or function, or an if's then (i = 0) or else (i = 1). false
	// skips the block.
	placeBody place = iota
	// placeBodyEnd is after that block (not reached when placeBody
	// skipped it).
	placeBodyEnd
	// placeSides is between an assignment's targets and its values.
	placeSides
	// placeTarget is before an assignment's i-th target, when its values come
	// first (valuesFirst). false skips the target.
	placeTarget
	// placeKey is before the key of an index (a.b, a[b]) or of the i-th field
	// of a table, when the field has one. false skips the key.
	placeKey
	// placeValue is before the value of the i-th field of a table.
	placeValue
	// placeArgs is before a call's arguments. false skips them.
	placeArgs
)

// order is how walk takes an assignment's two sides.
type order int

const (
	// asWritten takes the targets, then the values: the order of the
	// tokens, which the aligner follows.
	asWritten order = iota
	// valuesFirst takes the values, then each target in turn: the order
	// in which the scope resolver and the flow checker follow a script.
	valuesFirst
)

// A visitor is one job of the lint over a script's AST. walk calls it at
// every statement and expression, and at the places between their
// children, in order; the visitor keeps what it needs of the path so far.
type visitor interface {
	// enter is called at n before its children; false skips them, and
	// leave.
	enter(n node) bool
	// at is called at place p between n's children; i says which field,
	// target or arm. Its result counts where the place says that false
	// skips something, and is ignored elsewhere.
	at(n node, p place, i int) bool
	// leave is called at n after its children.
	leave(n node)
}

// walk takes v through the statements of a chunk. It is the one place that
// knows which children each node of gopher-lua's AST has, and in which
// order a script gives them. A nil expression (a for without a step, the
// half of a function name not used) is not visited.
func walk(v visitor, chunk []ast.Stmt, o order) {
	w := walker{v: v, valuesFirst: o == valuesFirst}
	w.stmts(chunk)
}

type walker struct {
	v           visitor
	valuesFirst bool
}

func (w walker) stmts(stmts []ast.Stmt) {
	for _, st := range stmts {
		w.stmt(st)
	}
}

// block walks a block of statements n holds, between placeBody and
// placeBodyEnd.
func (w walker) block(n node, arm int, stmts []ast.Stmt) {
	if !w.v.at(n, placeBody, arm) {
		return
	}
	w.stmts(stmts)
	w.v.at(n, placeBodyEnd, arm)
}

func (w walker) exprs(es []ast.Expr) {
	for _, e := range es {
		w.expr(e)
	}
}

func (w walker) stmt(st ast.Stmt) {
	if !w.v.enter(st) {
		return
	}
	switch st := st.(type) {
	case *ast.AssignStmt:
		if w.valuesFirst {
			w.exprs(st.Rhs)
			w.v.at(st, placeSides, 0)
			for i, l := range st.Lhs {
				if w.v.at(st, placeTarget, i) {
					w.expr(l)
				}
			}
		} else {
			w.exprs(st.Lhs)
			w.v.at(st, placeSides, 0)
			w.exprs(st.Rhs)
		}
	case *ast.LocalAssignStmt:
		w.exprs(st.Exprs)
	case *ast.FuncCallStmt:
		w.expr(st.Expr)
	case *ast.DoBlockStmt:
		w.block(st, 0, st.Stmts)
	case *ast.WhileStmt:
		w.expr(st.Condition)
		w.block(st, 0, st.Stmts)
	case *ast.RepeatStmt:
		w.block(st, 0, st.Stmts)
		w.expr(st.Condition)
	case *ast.IfStmt:
		w.expr(st.Condition)
		w.block(st, 0, st.Then)
		w.block(st, 1, st.Else)
	case *ast.NumberForStmt:
		w.expr(st.Init)
		w.expr(st.Limit)
		w.expr(st.Step)
		w.block(st, 0, st.Stmts)
	case *ast.GenericForStmt:
		w.exprs(st.Exprs)
		w.block(st, 0, st.Stmts)
	case *ast.FuncDefStmt:
		w.expr(st.Name.Func)
		w.expr(st.Name.Receiver)
		w.expr(st.Func)
	case *ast.ReturnStmt:
		w.exprs(st.Exprs)
	}
	w.v.leave(st)
}

func (w walker) expr(e ast.Expr) {
	if e == nil || !w.v.enter(e) {
		return
	}
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		w.expr(e.Object)
		if w.v.at(e, placeKey, 0) {
			w.expr(e.Key)
		}
	case *ast.FuncCallExpr:
		w.expr(e.Func)
		w.expr(e.Receiver)
		if w.v.at(e, placeArgs, 0) {
			w.exprs(e.Args)
		}
	case *ast.LogicalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		w.expr(e.Expr)
	case *ast.FunctionExpr:
		w.block(e, 0, e.Stmts)
	case *ast.TableExpr:
		for i, f := range e.Fields {
			if f.Key != nil && w.v.at(e, placeKey, i) {
				w.expr(f.Key)
			}
			w.v.at(e, placeValue, i)
			w.expr(f.Value)
		}
	}
	w.v.leave(e)
}
