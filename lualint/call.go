package lualint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/yuin/gopher-lua/ast"

	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

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
		c.rep.Findings = append(c.rep.Findings, lint.Finding{File: c.file, Line: line, Column: col, Call: fn.name,
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
		c.rep.Findings = append(c.rep.Findings, lint.Finding{File: c.file, Line: line, Column: col, Call: fn.name,
			Command: cmd, Arg: p, Expr: c.text(arg), Reason: reason, Via: via, When: when})
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
