package lualint

import "github.com/yuin/gopher-lua/ast"

// maxLevels is how deeply statements and expressions may nest before the
// lint stops: walk recurses once per level.
const maxLevels = 1000

// tooDeep reports whether the AST nests more than maxLevels levels. Its
// own walk goes no deeper than that.
func tooDeep(chunk []ast.Stmt) bool {
	d := &depth{}
	walk(d, chunk, asWritten)
	return d.over
}

// depth is the visitor of tooDeep: a statement or expression is one level
// below the one holding it; the blocks between them are not levels.
type depth struct {
	level int
	over  bool
}

func (d *depth) enter(node) bool {
	if d.over || d.level == maxLevels {
		d.over = true
		return false
	}
	d.level++
	return true
}

func (d *depth) at(node, place, int) bool { return !d.over }

func (d *depth) leave(node) { d.level-- }
