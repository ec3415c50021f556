package cluster

import (
	"fmt"
	"strings"
)

// Finding is a key argument of redis.call or redis.pcall that does not come
// from KEYS[...]: Redis Cluster cannot route it, and scripts with a shebang
// flag line and functions refuse undeclared keys.
type Finding struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Call    string `json:"call"`
	Command string `json:"command"`
	Arg     int    `json:"arg"`
	Expr    string `json:"expr"`
	Reason  string `json:"reason"`
}

// Message is the finding as one line, without the file position.
func (f Finding) Message() string {
	if f.Arg == 0 {
		return f.Reason
	}
	return fmt.Sprintf("%s(%s ...) argument %d: %s is %s; pass the key in KEYS and use KEYS[i]",
		f.Call, f.Command, f.Arg, f.Expr, f.Reason)
}

// ScriptReport is the lint result for one script.
type ScriptReport struct {
	File     string    `json:"file"`
	Calls    int       `json:"calls"`
	Findings []Finding `json:"findings"`
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
func keyArgs(spec keySpec, args [][]token) []int {
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
		if a := args[spec.numkeys-1]; len(a) == 1 && a[0].kind == tokNumber {
			fmt.Sscan(a[0].text, &nk)
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
// passes when it is KEYS[...], unpack(KEYS), or a variable bound to
// KEYS[...] at the call (local k = KEYS[1], for _, k in ipairs(KEYS)).
// Everything else is a finding: string literals, concatenations, ARGV
// values, function results, other variables and function parameters.
//
// Variables are tracked by name, without scopes, in file order: the binding
// in force at a call is the last assignment before it in the file (so
// x = KEYS[1] after x = ARGV[1] clears it), together with the assignments
// later in a loop body that holds the call (they reach it in the next
// iteration). A variable assigned only after the call (a global set later)
// counts with all its assignments. Branches are not told apart: an
// assignment in an if counts as if it always ran. Which arguments are keys follows commandKeys; other
// commands are taken to have their key first; a command name that is not a
// string literal is a finding, since its keys cannot be known. Calls made
// through an alias (local call = redis.call) are not seen. A script that
// cannot be read as Lua gives one finding at the place it stops.
func Lint(file string, src []byte) ScriptReport {
	rep := ScriptReport{File: file, Findings: []Finding{}}
	text := string(src)
	toks, err := lexLua(text)
	if err != nil {
		line := 0
		fmt.Sscanf(err.Error(), "line %d", &line)
		rep.Findings = append(rep.Findings, Finding{File: file, Line: line, Reason: "cannot read the script: " + err.Error()})
		return rep
	}
	binds, loops := collectBindings(text, toks)
	for i := 0; i+3 < len(toks); i++ {
		if (!toks[i].is(tokName, "redis") && !toks[i].is(tokName, "server")) || !toks[i+1].is(tokOp, ".") ||
			(toks[i+2].text != "call" && toks[i+2].text != "pcall") || !toks[i+3].is(tokOp, "(") {
			continue
		}
		if i > 0 && (toks[i-1].is(tokOp, ".") || toks[i-1].is(tokOp, ":")) {
			continue
		}
		call := toks[i].text + "." + toks[i+2].text
		args, end := splitCallArgs(toks, i+3)
		if end < 0 {
			rep.Findings = append(rep.Findings, Finding{File: file, Line: toks[i].line, Call: call,
				Reason: "cannot read the script: " + call + " has no closing parenthesis"})
			return rep
		}
		rep.Calls++
		if len(args) == 0 {
			continue
		}
		name := args[0]
		if len(name) != 1 || name[0].kind != tokString {
			rep.Findings = append(rep.Findings, Finding{File: file, Line: name0Line(name, toks[i]), Call: call,
				Expr: exprText(text, name), Reason: fmt.Sprintf("%s with a command name that is not a literal (%s): its key arguments cannot be checked",
					call, exprText(text, name))})
			continue
		}
		cmd := strings.ToUpper(luaStringValue(name[0].text))
		if noKeys[cmd] {
			continue
		}
		spec, ok := commandKeys[cmd]
		if !ok {
			spec = keySpec{first: 1}
		}
		rest := args[1:]
		for _, p := range keyArgs(spec, rest) {
			arg := rest[p-1]
			reason := classifyKey(arg, binds, loops, i)
			if reason == "" {
				continue
			}
			rep.Findings = append(rep.Findings, Finding{File: file, Line: name0Line(arg, toks[i]), Call: call,
				Command: cmd, Arg: p, Expr: exprText(text, arg), Reason: reason})
		}
	}
	return rep
}

func name0Line(arg []token, fallback token) int {
	if len(arg) > 0 {
		return arg[0].line
	}
	return fallback.line
}

// exprText returns the source of an argument with runs of white space
// folded to one space.
func exprText(src string, arg []token) string {
	if len(arg) == 0 {
		return ""
	}
	return strings.Join(strings.Fields(src[arg[0].start:arg[len(arg)-1].end]), " ")
}

// splitCallArgs splits the argument list that opens at toks[open] ("(") at
// its top-level commas and returns the arguments and the index of the
// closing parenthesis, or -1 when there is none.
func splitCallArgs(toks []token, open int) ([][]token, int) {
	var args [][]token
	depth := 0
	start := open + 1
	for j := open; j < len(toks); j++ {
		t := toks[j]
		if t.kind == tokEOF {
			return nil, -1
		}
		if t.kind != tokOp {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				if j > start || len(args) > 0 {
					args = append(args, toks[start:j])
				}
				return args, j
			}
		case ",":
			if depth == 1 {
				args = append(args, toks[start:j])
				start = j + 1
			}
		}
	}
	return nil, -1
}

// source is where a variable's value comes from at one assignment.
type source struct {
	kind string // "keys", "argv", "param", "other"
	expr string
	line int
	pos  int // index of the token from which the binding is in force
}

// span is a range of token indexes [start, end].
type span struct{ start, end int }

// collectBindings finds every assignment of a plain variable, loop
// variable and function parameter, in file order, and the loop bodies.
func collectBindings(src string, toks []token) (map[string][]source, []span) {
	binds := map[string][]source{}
	add := func(name string, s source) { binds[name] = append(binds[name], s) }
	loops, inTable := blocks(toks)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.is(tokOp, "=") && !inTable[i]:
			names := lhsNames(toks, i)
			// The values are read first; the names are bound after the
			// whole list (local k = redis.call('GET', k) reads the old k).
			var vals []source
			p, last := i+1, i
			for range names {
				if p < 0 {
					vals = append(vals, source{kind: "other", expr: "nil", line: t.line})
					continue
				}
				kind, end := exprKind(toks, p)
				vals = append(vals, source{kind: kind, expr: sourceText(src, toks[p:end]), line: toks[min(p, len(toks)-1)].line})
				last = max(last, end)
				p = nextExpr(toks, end)
			}
			for k, name := range names {
				vals[k].pos = last
				add(name, vals[k])
			}
		case t.is(tokName, "for"):
			var names []string
			j := i + 1
			for j < len(toks) && toks[j].kind == tokName {
				names = append(names, toks[j].text)
				if !toks[j+1].is(tokOp, ",") {
					j++
					break
				}
				j += 2
			}
			if j+4 < len(toks) && toks[j].is(tokName, "in") && len(names) == 2 &&
				(toks[j+1].text == "ipairs" || toks[j+1].text == "pairs") && toks[j+2].is(tokOp, "(") &&
				toks[j+3].is(tokName, "KEYS") && toks[j+4].is(tokOp, ")") {
				add(names[0], source{kind: "other", expr: "index of KEYS", line: t.line, pos: i})
				add(names[1], source{kind: "keys", expr: "KEYS", line: t.line, pos: i})
				continue
			}
			for _, n := range names {
				add(n, source{kind: "other", expr: "loop variable", line: t.line, pos: i})
			}
		case t.is(tokName, "function"):
			j := i + 1
			for j < len(toks) && !toks[j].is(tokOp, "(") && toks[j].kind != tokEOF {
				j++
			}
			for j++; j < len(toks) && !toks[j].is(tokOp, ")") && toks[j].kind != tokEOF; j++ {
				if toks[j].kind == tokName {
					add(toks[j].text, source{kind: "param", expr: toks[j].text, line: toks[j].line, pos: j})
				}
			}
		}
	}
	return binds, loops
}

// blocks returns the loops of the script (from their for, while or repeat
// to their end or until) and marks the "=" tokens of table constructors
// ({key = ARGV[1]} sets a field, not a variable).
func blocks(toks []token) (loops []span, inTable []bool) {
	type frame struct {
		open  string // "(", "[", "{" or a block keyword
		start int
		loop  bool
	}
	inTable = make([]bool, len(toks))
	var stack []frame
	loopAt := -1 // the for or while whose do comes next
	closeBlock := func(j int, kw string) {
		for k := len(stack) - 1; k >= 0; k-- {
			f := stack[k]
			if f.open == "(" || f.open == "[" || f.open == "{" {
				continue // unbalanced brackets: close the block anyway
			}
			if (kw == "until") != (f.open == "repeat") {
				return
			}
			stack = stack[:k]
			if f.loop {
				loops = append(loops, span{f.start, j})
			}
			return
		}
	}
	for j, t := range toks {
		switch {
		case t.kind == tokOp && (t.text == "(" || t.text == "[" || t.text == "{"):
			stack = append(stack, frame{open: t.text, start: j})
		case t.kind == tokOp && (t.text == ")" || t.text == "]" || t.text == "}"):
			if n := len(stack); n > 0 && (stack[n-1].open == "(" || stack[n-1].open == "[" || stack[n-1].open == "{") {
				stack = stack[:n-1]
			}
		case t.is(tokOp, "="):
			inTable[j] = len(stack) > 0 && stack[len(stack)-1].open == "{"
		case t.kind != tokName:
		case t.text == "for" || t.text == "while":
			loopAt = j
		case t.text == "do":
			f := frame{open: "do", start: j}
			if loopAt >= 0 {
				f.start, f.loop, loopAt = loopAt, true, -1
			}
			stack = append(stack, f)
		case t.text == "repeat":
			stack = append(stack, frame{open: "repeat", start: j, loop: true})
		case t.text == "function" || t.text == "if":
			stack = append(stack, frame{open: t.text, start: j})
		case t.text == "end" || t.text == "until":
			closeBlock(j, t.text)
		}
	}
	return loops, inTable
}

// inForce returns the assignments of a variable that can hold its value
// at token index at: the last one before at and, when at is in a loop,
// those after it in the loop body; all of them when none comes before.
func inForce(srcs []source, loops []span, at int) []source {
	last := -1
	for k, s := range srcs {
		if s.pos <= at && (last < 0 || s.pos >= srcs[last].pos) {
			last = k
		}
	}
	if last < 0 {
		return srcs
	}
	out := []source{srcs[last]}
	for _, l := range loops {
		if l.start >= at || at > l.end {
			continue
		}
		for k, s := range srcs {
			if k != last && s.pos > at && s.pos <= l.end {
				out = append(out, s)
			}
		}
	}
	return out
}

// lhsNames returns the plain variable names assigned by the "=" at
// toks[eq]: "local a, b =" or "a, b =". Fields (t.x =, t[k] =) are skipped.
func lhsNames(toks []token, eq int) []string {
	var names []string
	j := eq - 1
	for j >= 0 && toks[j].kind == tokName {
		if j > 0 && (toks[j-1].is(tokOp, ".") || toks[j-1].is(tokOp, ":")) {
			break
		}
		names = append([]string{toks[j].text}, names...)
		if j > 0 && toks[j-1].is(tokOp, ",") {
			j -= 2
			continue
		}
		break
	}
	return names
}

// exprKind looks at the expression starting at toks[p] and says whether it
// is exactly KEYS[...] or ARGV[...] ("keys", "argv", else "other"); it
// returns the index after the expression.
func exprKind(toks []token, p int) (string, int) {
	end := exprEnd(toks, p)
	if p+1 < len(toks) && toks[p].kind == tokName && (toks[p].text == "KEYS" || toks[p].text == "ARGV") &&
		toks[p+1].is(tokOp, "[") && matchClose(toks, p+1)+1 == end {
		if toks[p].text == "KEYS" {
			return "keys", end
		}
		return "argv", end
	}
	return "other", end
}

// unaryOps and binaryOps are Lua's operators; "-" and "~" are both.
var (
	unaryOps  = map[string]bool{"-": true, "not": true, "#": true, "~": true}
	binaryOps = map[string]bool{
		"or": true, "and": true, "<": true, ">": true, "<=": true, ">=": true, "~=": true, "==": true,
		"|": true, "~": true, "&": true, "<<": true, ">>": true, "..": true, "+": true, "-": true,
		"*": true, "/": true, "//": true, "%": true, "^": true,
	}
)

// exprEnd returns the index just after the expression that starts at
// toks[p], read with Lua's grammar: operands (names, literals, function
// bodies, bracketed groups, table constructors) with their suffixes (.name,
// :name, [...], call arguments) joined by binary operators. It stops where
// the grammar says the expression is over: at a comma, a keyword, a closing
// bracket, or at the next statement, which in Lua needs no separator (in
// "local k = KEYS[1] .. ':x'  redis.call('GET', k)" the expression ends
// after ':x'). On a malformed expression it stops where it cannot go on.
func exprEnd(toks []token, p int) int {
	j := p
	for {
		for j < len(toks) && (toks[j].kind == tokOp || toks[j].kind == tokName) && unaryOps[toks[j].text] {
			j++
		}
		if j >= len(toks) {
			return j
		}
		t := toks[j]
		suffixes := false
		switch {
		case t.kind == tokNumber || t.kind == tokString || t.is(tokOp, "..."):
			j++
		case t.is(tokOp, "{"):
			j = closeAfter(toks, j)
		case t.is(tokOp, "("):
			j, suffixes = closeAfter(toks, j), true
		case t.is(tokName, "function"):
			j = blockEnd(toks, j)
		case t.kind == tokName && (!luaKeyword[t.text] || t.text == "nil" || t.text == "true" || t.text == "false"):
			j, suffixes = j+1, !luaKeyword[t.text]
		default:
			return j // no operand here
		}
		for suffixes && j < len(toks) {
			t := toks[j]
			switch {
			case (t.is(tokOp, ".") || t.is(tokOp, ":")) && j+1 < len(toks) && toks[j+1].kind == tokName:
				j += 2
			case t.is(tokOp, "[") || t.is(tokOp, "(") || t.is(tokOp, "{"):
				j = closeAfter(toks, j)
			case t.kind == tokString: // f'x' calls f
				j++
			default:
				suffixes = false
			}
		}
		if j < len(toks) && (toks[j].kind == tokOp || toks[j].kind == tokName) && binaryOps[toks[j].text] {
			j++
			continue
		}
		return j
	}
}

// closeAfter returns the index after the bracket that closes toks[open],
// or the end of the tokens when none does.
func closeAfter(toks []token, open int) int {
	if c := matchClose(toks, open); c >= 0 {
		return c + 1
	}
	return len(toks)
}

// blockEnd returns the index after the end that closes the block opened at
// toks[open] (function, if, do, while, for), or the end of the tokens.
func blockEnd(toks []token, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		if toks[j].kind != tokName {
			continue
		}
		switch toks[j].text {
		case "function", "if", "do", "repeat":
			depth++
		case "end", "until":
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(toks)
}

// luaKeyword are Lua's reserved words.
var luaKeyword = map[string]bool{
	"and": true, "break": true, "do": true, "else": true, "elseif": true, "end": true, "false": true,
	"for": true, "function": true, "goto": true, "if": true, "in": true, "local": true, "nil": true,
	"not": true, "or": true, "repeat": true, "return": true, "then": true, "true": true, "until": true,
	"while": true,
}

// nextExpr returns the start of the next expression of a list after the
// one that ended at end, or -1 when the list is over.
func nextExpr(toks []token, end int) int {
	if end < len(toks) && toks[end].is(tokOp, ",") {
		return end + 1
	}
	return -1
}

func matchClose(toks []token, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		if toks[j].kind != tokOp {
			continue
		}
		switch toks[j].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// sourceText returns the source of toks as written, runs of white space
// (line breaks too) folded to one space.
func sourceText(src string, toks []token) string {
	if len(toks) == 0 || toks[0].kind == tokEOF {
		return ""
	}
	last := len(toks) - 1
	if toks[last].kind == tokEOF {
		last--
	}
	return strings.Join(strings.Fields(src[toks[0].start:toks[last].end]), " ")
}

// classifyKey returns "" when a key argument comes from KEYS, else what it
// is instead.
func classifyKey(arg []token, binds map[string][]source, loops []span, at int) string {
	if len(arg) == 0 {
		return "an empty argument"
	}
	if kind, end := exprKind(arg, 0); kind == "keys" && end == len(arg) {
		return ""
	}
	if isUnpackKeys(arg) {
		return ""
	}
	if len(arg) == 1 {
		switch arg[0].kind {
		case tokString:
			return "a string literal"
		case tokNumber:
			return "a number literal"
		case tokName:
			return classifyVar(arg[0].text, inForce(binds[arg[0].text], loops, at))
		}
	}
	for _, t := range topLevel(arg) {
		if t.is(tokOp, "..") {
			return "a key built by concatenation"
		}
	}
	if kind, end := exprKind(arg, 0); kind == "argv" && end == len(arg) {
		return "an ARGV value"
	}
	if arg[0].is(tokName, "ARGV") {
		return "built from ARGV"
	}
	return "an expression not taken from KEYS[...]"
}

// classifyVar says what is wrong with a variable given the assignments in
// force at the call, "" when they are all KEYS[...].
func classifyVar(name string, srcs []source) string {
	if len(srcs) == 0 {
		switch name {
		case "nil", "true", "false":
			return "a literal"
		}
		return fmt.Sprintf("a variable (%s) never assigned from KEYS[...]", name)
	}
	allKeys := true
	for _, s := range srcs {
		if s.kind != "keys" {
			allKeys = false
		}
	}
	if allKeys {
		return ""
	}
	for _, s := range srcs {
		switch s.kind {
		case "argv":
			return fmt.Sprintf("a variable (%s) holding an ARGV value (line %d)", name, s.line)
		case "param":
			return fmt.Sprintf("a function parameter (%s), not KEYS[...]", name)
		case "other":
			return fmt.Sprintf("a variable (%s) assigned from %s (line %d), not KEYS[...]", name, shorten(s.expr), s.line)
		}
	}
	return fmt.Sprintf("a variable (%s) not bound from KEYS[...]", name)
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// isUnpackKeys reports whether arg is unpack(KEYS) or table.unpack(KEYS).
func isUnpackKeys(arg []token) bool {
	a := arg
	if len(a) == 6 && a[0].is(tokName, "table") && a[1].is(tokOp, ".") {
		a = a[2:]
	}
	return len(a) == 4 && a[0].is(tokName, "unpack") && a[1].is(tokOp, "(") &&
		a[2].is(tokName, "KEYS") && a[3].is(tokOp, ")")
}

// topLevel returns the tokens of arg outside any brackets.
func topLevel(arg []token) []token {
	var out []token
	depth := 0
	for _, t := range arg {
		if t.kind == tokOp {
			switch t.text {
			case "(", "[", "{":
				depth++
				continue
			case ")", "]", "}":
				depth--
				continue
			}
		}
		if depth == 0 {
			out = append(out, t)
		}
	}
	return out
}
