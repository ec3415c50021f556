// Package lualint is the Lua key lint behind ratelimit keyslot --script:
// it reads a script with gopher-lua's parser, as Redis's Lua 5.1 would,
// and reports every key argument of redis.call and redis.pcall that does
// not come from KEYS (package lint holds the report).
//
// Four jobs read the script's AST, each a visitor of one walk (walk.go),
// the one place that knows which node has which children: tooDeep bounds
// the nesting the others recurse through (depth.go), the aligner places
// every expression on its tokens for columns and source text (align.go),
// the resolver binds names by Lua's scope rules (scope.go), and the
// checker follows the values of variables in the order the script runs
// and checks each call (flow.go, call.go, notes.go).
package lualint

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"

	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

// Lint checks the key arguments of every redis.call and redis.pcall (and
// Valkey's server.call and server.pcall) in a Lua script. A key argument
// passes when it is KEYS[...], unpack(KEYS), or a variable that holds
// KEYS[...] at the call (local k = KEYS[1], for _, k in ipairs(KEYS)).
// Everything else is a finding: string literals, concatenations, ARGV
// values, function results, other variables and function parameters.
//
// The script is read by gopher-lua's parser, which refuses what Redis's
// Lua 5.1 refuses; so does the lint where the parser is more lenient than
// Lua 5.1: goto and labels (Lua 5.2), break outside a loop, a call whose
// ( starts a new line. A script that cannot be read gives one finding at
// the place it stops, never a panic.
// Redis's #! flag line is skipped, and findings give the line and the
// byte column of the argument.
//
// Names are bound by Lua's scope rules: a local is seen only in its block,
// and a new local of the same name hides it. Values are followed in the
// order the script runs, branch by branch: after an if, a variable may hold
// what any branch that does not return left in it; a loop body is read once
// with the assignments later in the body added to what reaches its top (they
// come round on the next iteration), and a loop with a break leaves with any
// value its body gives. A variable assigned only after the call
// (a global set later), and any variable read inside a function other than
// the one declaring it, may hold the value of any of its assignments.
// Copies are followed (local k = KEYS[1]; local k2 = k). So are aliases of
// the call functions: local call = redis.call, local r = redis with
// r.call(...), local pc = redis.pcall; a call through one is checked like
// redis.call itself and its finding names the alias (Via). A shadowing
// local call = print, or call = print, ends the alias. Aliases kept in
// tables and pcall(redis.call, ...) are not followed.
//
// Which arguments are keys follows commandKeys; other commands are taken
// to have their key first; a command name that is not a string literal is
// a finding, since its keys cannot be known.
//
// Branches: a finding in an if branch says under which conditions it runs
// (When): a literal key used only when ARGV[1] == 'x' fails on a cluster
// only on that path, so a test that never takes it does not see it. Keys
// used in different branches are not used together in one run of the
// script; but Redis Cluster checks every key passed in KEYS before the
// script runs, whichever branch uses it, so the keys in KEYS must still
// share one slot. A KEYS key that is used only in some branches (no use
// outside them, and no if with a use in both its then and its else) gets a
// Note naming them, so a caller knows when the key is touched.
func Lint(file string, src []byte) (rep lint.ScriptReport) {
	rep = lint.ScriptReport{File: file, Findings: []lint.Finding{}}
	defer func() {
		if r := recover(); r != nil {
			rep = lint.ScriptReport{File: file, Findings: []lint.Finding{{File: file, Line: 1,
				Reason: fmt.Sprintf("cannot read the script: the lint failed on it (%v)", r)}}}
		}
	}()
	text := prepare(src)
	chunk, err := parse.Parse(strings.NewReader(text), file)
	s := newLuaSource(text)
	if err != nil || chunk == nil {
		rep.Findings = append(rep.Findings, s.syntaxFinding(file, err))
		return rep
	}
	if tooDeep(chunk) {
		rep.Findings = append(rep.Findings, lint.Finding{File: file, Line: 1,
			Reason: fmt.Sprintf("cannot read the script: it nests statements and expressions more than %d levels deep", maxLevels)})
		return rep
	}
	a := align(s, chunk)
	if a.ambiguous >= 0 {
		// Lua 5.1 refuses a call whose ( starts a line; gopher-lua only
		// when the line before ends in ).
		f := lint.Finding{File: file, Reason: "cannot read the script: ambiguous syntax (function call x new statement)"}
		f.Line, f.Column = s.posAt(s.toks[a.ambiguous].start)
		rep.Findings = append(rep.Findings, f)
		return rep
	}
	vals := &values{src: s, fns: map[string]*value{}}
	r := resolve(chunk, a.localFunc, vals)
	if r.lua52 != nil {
		rep.Findings = append(rep.Findings, s.stmtFinding(file, r.lua52, []int{parse.TGoto, parse.T2Colon},
			"cannot read the script: goto and labels are Lua 5.2; Redis runs Lua 5.1, which refuses them"))
		return rep
	}
	if r.noLoop != nil {
		rep.Findings = append(rep.Findings, s.stmtFinding(file, r.noLoop, []int{parse.TBreak},
			"cannot read the script: break outside a loop (Lua 5.1: no loop to break)"))
		return rep
	}
	c := check(file, chunk, a, r, &rep)
	slices.SortStableFunc(rep.Findings, func(x, y lint.Finding) int {
		if x.Line != y.Line {
			return x.Line - y.Line
		}
		return x.Column - y.Column
	})
	rep.Notes = c.notes()
	return rep
}

// prepare returns the script as Lua reads it, with every byte at its
// offset: Redis's #! flag line blanked (Redis strips it before Lua reads
// the script), and form feeds and vertical tabs, white space to Lua 5.1
// but not to gopher-lua's scanner, turned into spaces.
func prepare(src []byte) string {
	b := slices.Clone(src)
	if len(b) >= 2 && b[0] == '#' && b[1] == '!' {
		for i := 0; i < len(b) && b[i] != '\n'; i++ {
			b[i] = ' '
		}
	}
	for i, c := range b {
		if c == '\f' || c == '\v' {
			b[i] = ' '
		}
	}
	return string(b)
}

// syntaxFinding is the finding for a script gopher-lua cannot read.
func (s *luaSource) syntaxFinding(file string, err error) lint.Finding {
	f := lint.Finding{File: file, Line: 1}
	at := func(off int) {
		f.Line, f.Column = s.posAt(off)
	}
	var pe *parse.Error
	if !errors.As(err, &pe) {
		f.Reason = "cannot read the script"
		if err != nil {
			f.Reason += ": " + strings.TrimSpace(err.Error())
		}
		return f
	}
	off := len(s.src)
	if pe.Pos.Line != parse.EOF {
		off = s.offset(pe.Pos.Line, pe.Pos.Column)
	}
	switch {
	case s.lexErr != "" && s.lexStart >= 0 && off >= s.lexStart:
		// The scanner stopped on a token (an unfinished string, a stray
		// character): point at the token's start.
		at(s.lexStart)
		f.Reason = "cannot read the script: " + s.lexErr
	case pe.Pos.Line == parse.EOF:
		if n := len(s.open); n > 0 {
			t := s.toks[s.open[n-1]]
			at(t.start)
			f.Reason = fmt.Sprintf("cannot read the script: it ends before the %s at line %d, column %d is closed",
				tokName(t), f.Line, f.Column)
		} else {
			if n := len(s.toks); n > 0 {
				at(s.toks[n-1].start)
			}
			f.Reason = "cannot read the script: it ends in the middle of a statement"
		}
	default:
		// The parser stopped after reading the token it could not use:
		// point at the token's start.
		start, near := off, pe.Token
		for _, t := range s.toks {
			if t.start <= off && off < t.end {
				start, near = t.start, s.src[t.start:t.end]
				break
			}
		}
		at(start)
		f.Reason = fmt.Sprintf("cannot read the script: %s near %s", pe.Message, shorten(near))
	}
	return f
}

// stmtFinding is a finding at a statement: at its first token of one of
// the types on its line.
func (s *luaSource) stmtFinding(file string, st ast.Stmt, types []int, reason string) lint.Finding {
	f := lint.Finding{File: file, Reason: reason}
	f.Line, _ = s.posAt(s.goffset(st.Line()))
	for _, t := range s.toks {
		if slices.Contains(types, t.typ) && t.gline == st.Line() {
			f.Line, f.Column = s.posAt(t.start)
			break
		}
	}
	return f
}
