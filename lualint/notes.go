package lualint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"

	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

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
func (c *checker) notes() []lint.Note {
	var out []lint.Note
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
		out = append(out, lint.Note{Line: uses[0].line, Column: uses[0].col, Key: k, When: when})
	}
	return out
}
