package lualint

import (
	"fmt"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// render writes an expression back as Lua, in one canonical form: the
// name of a key (KEYS[1] however it was spaced) and the text of an
// expression whose tokens could not be placed.
func render(e ast.Expr) string {
	var b strings.Builder
	renderTo(&b, e)
	return b.String()
}

func renderTo(b *strings.Builder, e ast.Expr) {
	switch e := e.(type) {
	case nil:
	case *ast.IdentExpr:
		b.WriteString(e.Value)
	case *ast.NumberExpr:
		b.WriteString(e.Value)
	case *ast.StringExpr:
		b.WriteString(luaQuote(e.Value))
	case *ast.NilExpr:
		b.WriteString("nil")
	case *ast.TrueExpr:
		b.WriteString("true")
	case *ast.FalseExpr:
		b.WriteString("false")
	case *ast.Comma3Expr:
		b.WriteString("...")
	case *ast.AttrGetExpr:
		renderTo(b, e.Object)
		if k, ok := e.Key.(*ast.StringExpr); ok && isLuaName(k.Value) {
			b.WriteString("." + k.Value)
			return
		}
		b.WriteString("[")
		renderTo(b, e.Key)
		b.WriteString("]")
	case *ast.FuncCallExpr:
		if e.Func != nil {
			renderTo(b, e.Func)
		} else {
			renderTo(b, e.Receiver)
			b.WriteString(":" + e.Method)
		}
		b.WriteString("(")
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			renderTo(b, a)
		}
		b.WriteString(")")
	case *ast.LogicalOpExpr:
		renderBinary(b, e.Lhs, e.Operator, e.Rhs)
	case *ast.RelationalOpExpr:
		renderBinary(b, e.Lhs, e.Operator, e.Rhs)
	case *ast.StringConcatOpExpr:
		renderBinary(b, e.Lhs, "..", e.Rhs)
	case *ast.ArithmeticOpExpr:
		renderBinary(b, e.Lhs, e.Operator, e.Rhs)
	case *ast.UnaryMinusOpExpr:
		b.WriteString("-")
		renderOperand(b, e.Expr)
	case *ast.UnaryNotOpExpr:
		b.WriteString("not ")
		renderOperand(b, e.Expr)
	case *ast.UnaryLenOpExpr:
		b.WriteString("#")
		renderOperand(b, e.Expr)
	case *ast.FunctionExpr:
		b.WriteString("function(")
		if e.ParList != nil {
			b.WriteString(strings.Join(e.ParList.Names, ", "))
			if e.ParList.HasVargs {
				if len(e.ParList.Names) > 0 {
					b.WriteString(", ")
				}
				b.WriteString("...")
			}
		}
		b.WriteString(") ... end")
	case *ast.TableExpr:
		if len(e.Fields) == 0 {
			b.WriteString("{}")
		} else {
			b.WriteString("{...}")
		}
	default:
		fmt.Fprintf(b, "%T", e)
	}
}

func renderBinary(b *strings.Builder, lhs ast.Expr, op string, rhs ast.Expr) {
	renderOperand(b, lhs)
	b.WriteString(" " + op + " ")
	renderOperand(b, rhs)
}

// renderOperand puts an operand that is itself an operator expression in
// parentheses, so the rendering never depends on precedence.
func renderOperand(b *strings.Builder, e ast.Expr) {
	switch e.(type) {
	case *ast.LogicalOpExpr, *ast.RelationalOpExpr, *ast.StringConcatOpExpr, *ast.ArithmeticOpExpr,
		*ast.UnaryMinusOpExpr, *ast.UnaryNotOpExpr, *ast.UnaryLenOpExpr:
		b.WriteString("(")
		renderTo(b, e)
		b.WriteString(")")
	default:
		renderTo(b, e)
	}
}

// luaQuote writes s as a single-quoted Lua string.
func luaQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c < ' ' || c == 0x7f:
			fmt.Fprintf(&b, `\%d`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func isLuaName(s string) bool {
	if s == "" || luaKeywords[s] {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !(i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// luaKeywords are Lua 5.1's reserved words.
var luaKeywords = map[string]bool{
	"and": true, "break": true, "do": true, "else": true, "elseif": true, "end": true, "false": true,
	"for": true, "function": true, "if": true, "in": true, "local": true, "nil": true, "not": true,
	"or": true, "repeat": true, "return": true, "then": true, "true": true, "until": true, "while": true,
}

// shorten cuts a text a message quotes to 40 bytes.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
