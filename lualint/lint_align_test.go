package lualint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"

	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

// checkAligned fails unless every leaf of the script's AST was placed on a
// token, and every placed name and literal sits on a token of its text.
func checkAligned(t *testing.T, name, src string) {
	t.Helper()
	text := prepare([]byte(src))
	chunk, err := parse.Parse(strings.NewReader(text), name)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	s := newLuaSource(text)
	a := align(s, chunk)
	if a.misses != 0 {
		t.Errorf("%s: %d AST leaves not placed on a token", name, a.misses)
	}
	for e, sp := range a.spans {
		tok := s.toks[sp.first]
		var want string
		switch e := e.(type) {
		case *ast.IdentExpr:
			want = e.Value
		case *ast.NumberExpr:
			want = e.Value
		default:
			continue
		}
		if got := s.src[tok.start:tok.end]; got != want {
			line, col := s.posAt(tok.start)
			t.Errorf("%s:%d:%d: %T %q placed on %q", name, line, col, e, want, got)
		}
	}
}

func TestLintAlignsProjectScripts(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../limiter/*.lua", "../eval/testdata/*.lua", "testdata/lint*.lua"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found %d scripts, want the limiter scripts and testdata/lint_constructs.lua", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checkAligned(t, f, string(b))
		})
	}
}

func TestLintConstructs(t *testing.T) {
	b, err := os.ReadFile("testdata/lint_constructs.lua")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	rep := Lint("lint_constructs.lua", b)
	checkFindings(t, "lint_constructs.lua", rep.Findings, []want{
		{17, 25, "key", "a function parameter (key)", "call", ""},
		{28, 17, "'over:' .. KEYS[1]", "concatenation", "pcall_",
			"n ~= 1 (line 25) and not (n <= limit) and mode ~= 'quiet' (line 27)"},
	})
	for _, f := range rep.Findings {
		checkColumn(t, src, f.Line, f.Column, f.Expr)
	}
	if rep.Calls != 6 {
		t.Errorf("Calls = %d, want 6", rep.Calls)
	}
	wantNote := lint.Note{Line: 37, Column: 23, Key: "KEYS[2]", When: "mode == 'log' (line 36)"}
	if len(rep.Notes) != 1 || rep.Notes[0] != wantNote {
		t.Errorf("notes = %+v, want [%+v]", rep.Notes, wantNote)
	}
}

// TestLintAlignsTrickySyntax covers forms where the AST drops or moves
// tokens: grouping parentheses, unary minus after binary minus, string
// and table call arguments, method definitions, elseif after a
// parenthesised expression.
func TestLintAlignsTrickySyntax(t *testing.T) {
	for _, src := range []string{
		"local x = a - -b - (-(c)) return x",
		"f'x' f{1, [2] = 3, y = (4), [5] = 6} f[[long]]",
		"local t = {(a), [k] = v; w = (x)}",
		"function a.b.c:d(e, ...) return self, e, ... end",
		"if c then d = -(-1) elseif (e) then g = (h) else i() end",
		"local v = (\n  x\n)",
		"while (a) do repeat local b = (c) until (b) end",
		"for i = (1), (2), (3) do end for k, v in (pairs(t)) do end",
		"return (f)(1)((2)):m(3)[4].n",
		"local s = 'a' .. \"b\" .. [==[c]==] .. 0x1F .. 1e3 .. .5",
		"x, y.z, w[1] = 1, 2",
		"return not not a, #b, - - c",
	} {
		t.Run(src, func(t *testing.T) { checkAligned(t, "s.lua", src) })
	}
}

// FuzzLintAlign checks, on any script gopher-lua parses, that every AST
// leaf is placed on a token, so findings have columns and source text.
func FuzzLintAlign(f *testing.F) {
	f.Add("local x = a - -b - (-(c)) return x")
	f.Add("f'x' f{1, [2] = 3, y = (4), [5] = 6} f[[long]]")
	f.Add("function a.b.c:d(e, ...) return self, e, ... end")
	f.Add("if c then d = -(-1) elseif (e) then g = (h) else i() end")
	f.Add("for i = (1), (2), (3) do end for k, v in (pairs(t)) do end return (f)(1)((2)):m(3)[4].n")
	f.Fuzz(func(t *testing.T, src string) {
		text := prepare([]byte(src))
		chunk, err := parse.Parse(strings.NewReader(text), "f.lua")
		if err != nil || chunk == nil || tooDeep(chunk) {
			return
		}
		if a := align(newLuaSource(text), chunk); a.misses != 0 {
			t.Fatalf("%d AST leaves of %q not placed on a token", a.misses, src)
		}
	})
}
