package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// Finding is a key argument of redis.call or redis.pcall that does not come
// from KEYS[...]: Redis Cluster cannot route it, and scripts with a shebang
// flag line and functions refuse undeclared keys. A script that cannot be
// read gives one finding with Arg 0.
type Finding struct {
	File string `json:"file"`
	Line int    `json:"line"`
	// Column is the byte column (from 1) where Expr starts; 0 when unknown.
	Column  int    `json:"column,omitempty"`
	Call    string `json:"call"`
	Command string `json:"command"`
	Arg     int    `json:"arg"`
	Expr    string `json:"expr"`
	Reason  string `json:"reason"`
	// Via is the callee as written when the call goes through an alias
	// (c for local c = redis.call, r.call for local r = redis).
	Via string `json:"via,omitempty"`
	// When is the if branch the call lies in, as the conditions under
	// which it runs ("ARGV[1] == 'x' (line 3)"); empty when the call is
	// in no branch.
	When string `json:"when,omitempty"`
}

// Message is the finding as one line, without the file position.
func (f Finding) Message() string {
	if f.Arg == 0 {
		return f.Reason
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s(%s ...) argument %d", f.Call, f.Command, f.Arg)
	if f.Via != "" {
		b.WriteString(", called as " + f.Via)
	}
	fmt.Fprintf(&b, ": %s is %s", f.Expr, f.Reason)
	if f.When != "" {
		b.WriteString(", used only when " + f.When)
	}
	b.WriteString("; pass the key in KEYS and use KEYS[i]")
	return b.String()
}

// Note says that a key taken from KEYS is used only in some branches of
// the script's ifs: one run of the script does not necessarily use it
// together with the others.
type Note struct {
	Line   int    `json:"line"`             // the first use
	Column int    `json:"column,omitempty"` // byte column of the first use, from 1
	Key    string `json:"key"`              // KEYS[2]; KEYS for unpack(KEYS) and ipairs(KEYS)
	When   string `json:"when"`             // the branches, as in Finding.When, joined with ", or when "
}

// Message is the note as one line, without the file position.
func (n Note) Message() string { return n.Key + " is used only when " + n.When }

// ScriptReport is the lint result for one script.
type ScriptReport struct {
	File     string    `json:"file"`
	Calls    int       `json:"calls"`
	Findings []Finding `json:"findings"`
	// Notes are about keys used only in some branches; they do not fail
	// the script.
	Notes []Note `json:"notes,omitempty"`
}

// keySpec says which arguments of a command (1 = the first after the
// command name) are keys.
type keySpec struct {
	first   int // first key argument; 0 means the command takes no keys
	fixed   []int
	step    int // 0: only first (and fixed); 1: every argument from first; 2: every other
	lastOff int // with step: leave out this many trailing arguments (BLPOP's timeout)
	numkeys int // position of a numkeys argument; keys follow it
}

// commandKeys lists the commands a rate limiting or general script uses
// whose keys are not simply the first argument. Any command not listed here
// and not in noKeys is taken to have its key as the first argument.
var commandKeys = map[string]keySpec{
	"DEL": {first: 1, step: 1}, "UNLINK": {first: 1, step: 1}, "EXISTS": {first: 1, step: 1},
	"TOUCH": {first: 1, step: 1}, "MGET": {first: 1, step: 1}, "WATCH": {first: 1, step: 1},
	"SINTER": {first: 1, step: 1}, "SUNION": {first: 1, step: 1}, "SDIFF": {first: 1, step: 1},
	"SINTERSTORE": {first: 1, step: 1}, "SUNIONSTORE": {first: 1, step: 1}, "SDIFFSTORE": {first: 1, step: 1},
	"PFCOUNT": {first: 1, step: 1}, "PFMERGE": {first: 1, step: 1},
	"MSET": {first: 1, step: 2}, "MSETNX": {first: 1, step: 2},
	"BLPOP": {first: 1, step: 1, lastOff: 1}, "BRPOP": {first: 1, step: 1, lastOff: 1},
	"BZPOPMIN": {first: 1, step: 1, lastOff: 1}, "BZPOPMAX": {first: 1, step: 1, lastOff: 1},
	"RENAME": {fixed: []int{1, 2}}, "RENAMENX": {fixed: []int{1, 2}}, "COPY": {fixed: []int{1, 2}},
	"RPOPLPUSH": {fixed: []int{1, 2}}, "BRPOPLPUSH": {fixed: []int{1, 2}}, "LMOVE": {fixed: []int{1, 2}},
	"BLMOVE": {fixed: []int{1, 2}}, "SMOVE": {fixed: []int{1, 2}}, "GEOSEARCHSTORE": {fixed: []int{1, 2}},
	"ZRANGESTORE": {fixed: []int{1, 2}}, "LCS": {fixed: []int{1, 2}},
	"BITOP":  {first: 2, step: 1},
	"OBJECT": {fixed: []int{2}}, "MEMORY": {fixed: []int{2}},
	"ZUNION": {numkeys: 1}, "ZINTER": {numkeys: 1}, "ZDIFF": {numkeys: 1}, "ZINTERCARD": {numkeys: 1},
	"SINTERCARD": {numkeys: 1}, "LMPOP": {numkeys: 1}, "ZMPOP": {numkeys: 1},
	"ZUNIONSTORE": {fixed: []int{1}, numkeys: 2}, "ZINTERSTORE": {fixed: []int{1}, numkeys: 2},
	"ZDIFFSTORE": {fixed: []int{1}, numkeys: 2},
	"BLMPOP":     {numkeys: 2}, "BZMPOP": {numkeys: 2},
	"EVAL": {numkeys: 2}, "EVALSHA": {numkeys: 2}, "EVAL_RO": {numkeys: 2}, "EVALSHA_RO": {numkeys: 2},
	"FCALL": {numkeys: 2}, "FCALL_RO": {numkeys: 2},
}

// noKeys are commands without key arguments.
var noKeys = map[string]bool{
	"TIME": true, "PING": true, "ECHO": true, "INFO": true, "DBSIZE": true, "LASTSAVE": true,
	"RANDOMKEY": true, "SCAN": true, "KEYS": true, "PUBLISH": true, "SELECT": true, "SWAPDB": true,
	"FLUSHALL": true, "FLUSHDB": true, "SCRIPT": true, "FUNCTION": true, "CONFIG": true,
	"CLIENT": true, "COMMAND": true, "CLUSTER": true, "READONLY": true, "READWRITE": true,
	"WAIT": true, "ROLE": true, "LOLWUT": true, "MULTI": true, "EXEC": true, "DISCARD": true, "UNWATCH": true,
}

// keyArgs returns the argument positions (1-based, after the command name)
// that hold keys, given the call's arguments after the command name. n is
// the number of those arguments; numkeys reads a literal numkeys argument.
func keyArgs(spec keySpec, args []ast.Expr) []int {
	n := len(args)
	var pos []int
	for _, p := range spec.fixed {
		if p <= n {
			pos = append(pos, p)
		}
	}
	if spec.numkeys > 0 {
		if spec.numkeys > n {
			return pos
		}
		nk := -1
		if a, ok := args[spec.numkeys-1].(*ast.NumberExpr); ok {
			if v, err := strconv.Atoi(a.Value); err == nil {
				nk = v
			}
		}
		last := n
		if nk >= 0 && spec.numkeys+nk < n {
			last = spec.numkeys + nk
		}
		for p := spec.numkeys + 1; p <= last; p++ {
			pos = append(pos, p)
		}
		return pos
	}
	if spec.first > 0 {
		if spec.step == 0 {
			if spec.first <= n {
				pos = append(pos, spec.first)
			}
			return pos
		}
		for p := spec.first; p <= n-spec.lastOff; p += spec.step {
			pos = append(pos, p)
		}
	}
	return pos
}

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
func Lint(file string, src []byte) (rep ScriptReport) {
	rep = ScriptReport{File: file, Findings: []Finding{}}
	defer func() {
		if r := recover(); r != nil {
			rep = ScriptReport{File: file, Findings: []Finding{{File: file, Line: 1,
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
		rep.Findings = append(rep.Findings, Finding{File: file, Line: 1,
			Reason: fmt.Sprintf("cannot read the script: it nests statements and expressions more than %d levels deep", maxLevels)})
		return rep
	}
	a := align(s, chunk)
	if a.ambiguous >= 0 {
		// Lua 5.1 refuses a call whose ( starts a line; gopher-lua only
		// when the line before ends in ).
		f := Finding{File: file, Reason: "cannot read the script: ambiguous syntax (function call x new statement)"}
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
	c := &checker{file: file, src: s, spans: a.spans, r: r, values: vals, rep: &rep,
		vals: map[*variable][]*value{}, uses: map[string][]keyUse{}}
	c.block(chunk)
	slices.SortStableFunc(rep.Findings, func(x, y Finding) int {
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
func (s *luaSource) syntaxFinding(file string, err error) Finding {
	f := Finding{File: file, Line: 1}
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
func (s *luaSource) stmtFinding(file string, st ast.Stmt, types []int, reason string) Finding {
	f := Finding{File: file, Reason: reason}
	f.Line, _ = s.posAt(s.goffset(st.Line()))
	for _, t := range s.toks {
		if slices.Contains(types, t.typ) && t.gline == st.Line() {
			f.Line, f.Column = s.posAt(t.start)
			break
		}
	}
	return f
}
