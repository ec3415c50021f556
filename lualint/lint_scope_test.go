package lualint

import (
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

// want is one expected finding: position, expression, a substring of the
// reason, the alias and a substring of the branch ("" for none).
type want struct {
	line, col int
	expr      string
	reason    string
	via       string
	when      string
}

func checkFindings(t *testing.T, src string, got []lint.Finding, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("Lint(%q) found %d findings, want %d: %+v", src, len(got), len(wants), got)
	}
	for i, w := range wants {
		f := got[i]
		if f.Line != w.line || f.Column != w.col || f.Expr != w.expr || !strings.Contains(f.Reason, w.reason) ||
			f.Via != w.via || (w.when == "") != (f.When == "") || !strings.Contains(f.When, w.when) {
			t.Errorf("finding %d = %d:%d expr %q reason %q via %q when %q,\nwant %d:%d expr %q reason ~%q via %q when ~%q",
				i, f.Line, f.Column, f.Expr, f.Reason, f.Via, f.When, w.line, w.col, w.expr, w.reason, w.via, w.when)
		}
	}
}

func TestLintAliases(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		calls int
		want  []want
	}{
		{"local alias of redis.call", `local c = redis.call; c('GET','other')`, 1,
			[]want{{1, 31, "'other'", "string literal", "c", ""}}},
		{"alias of the redis table", "local r = redis\nr.call('GET', KEYS[1])\nr.pcall('SET', 'x', 1)", 2,
			[]want{{3, 16, "'x'", "string literal", "r.pcall", ""}}},
		{"alias of pcall", "local pc = redis.pcall\nreturn pc('INCRBY', ARGV[1], 1)", 1,
			[]want{{2, 21, "ARGV[1]", "ARGV value", "pc", ""}}},
		{"valkey alias", "local call = server.call\ncall('DEL', KEYS[1], 'k')", 1,
			[]want{{2, 22, "'k'", "string literal", "call", ""}}},
		{"copy of an alias", "local c = redis.call\nlocal d = c\nd('GET', 'z')", 1,
			[]want{{3, 10, "'z'", "string literal", "d", ""}}},
		{"alias seen from a function", "local call = redis.call\nlocal function get(k)\n  return call('GET', 'lit')\nend", 1,
			[]want{{3, 22, "'lit'", "string literal", "call", ""}}},
		{"alias with a dynamic command", "local c = redis.call\nc(ARGV[1], KEYS[1])", 1,
			[]want{{2, 3, "ARGV[1]", "redis.call (called as c) with a command name that is not a literal", "c", ""}}},
		{"alias in parentheses", `local c = (redis.call) c('GET', 'p')`, 1,
			[]want{{1, 33, "'p'", "string literal", "c", ""}}},

		// Shadowing and reassignment end the alias.
		{"shadowing local ends the alias in its block", "local call = redis.call\ndo\n  local call = print\n  call('GET', 'a')\nend\ncall('GET', 'b')", 1,
			[]want{{6, 13, "'b'", "string literal", "call", ""}}},
		{"reassignment ends the alias", "local call = redis.call\ncall = print\ncall('GET', 'a')", 0, nil},
		{"alias set in one branch may be redis.call", "local call = print\nif ARGV[1] then call = redis.call end\ncall('GET', 'a')", 1,
			[]want{{3, 13, "'a'", "string literal", "call", ""}}},
		{"a local named redis is not redis", "local redis = {call = print}\nredis.call('GET', 'x')", 0, nil},
		{"a parameter named redis is not redis", "local function f(redis) redis.call('GET', 'x') end", 0, nil},
		{"method call is not redis.call", "redis:call('GET', 'x')", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Lint("s.lua", []byte(tt.src))
			checkFindings(t, tt.src, rep.Findings, tt.want)
			if rep.Calls != tt.calls {
				t.Errorf("Calls = %d, want %d", rep.Calls, tt.calls)
			}
		})
	}
}

func TestLintAliasMessage(t *testing.T) {
	rep := Lint("s.lua", []byte(`local c = redis.call; c('GET','other')`))
	if len(rep.Findings) != 1 {
		t.Fatalf("findings = %+v, want one", rep.Findings)
	}
	got := rep.Findings[0].Message()
	want := "redis.call(GET ...) argument 1, called as c: 'other' is a string literal; pass the key in KEYS and use KEYS[i]"
	if got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
}

func TestLintScopes(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []want
	}{
		{"inner local hides the outer one in its block", `local k = KEYS[1]
do
  local k = ARGV[1]
  redis.call('GET', k)
end
redis.call('GET', k)`, []want{{4, 21, "k", "holding an ARGV value (line 3)", "", ""}}},
		{"a block's local is gone after it", `do local k = KEYS[1] end
redis.call('GET', k)`, []want{{2, 19, "k", "a variable (k) never assigned from KEYS", "", ""}}},
		{"nested functions and blocks", `local k = KEYS[1]
local function f()
  local k = 'x'
  local function g()
    if true then
      local k = KEYS[2]
      redis.call('GET', k)
    end
    return redis.call('GET', k)
  end
  return g
end
return redis.call('GET', k)`, []want{{9, 30, "k", "assigned from 'x' (line 3)", "", ""}}},
		{"parameter hides the outer local", `local k = KEYS[1]
local function f(k) return redis.call('GET', k) end`, []want{{2, 46, "k", "function parameter (k)", "", ""}}},
		{"loop variable is local to the loop", `local k = KEYS[1]
for k = 1, 3 do redis.call('GET', k) end
redis.call('GET', k)`, []want{{2, 35, "k", "assigned from loop variable", "", ""}}},
		{"a local named KEYS is not KEYS", `local KEYS = {'a'}
return redis.call('GET', KEYS[1])`, []want{{2, 26, "KEYS[1]", "expression not taken from KEYS", "", ""}}},
		{"copies of KEYS are followed", `local key = KEYS[1]
local k2 = key
return redis.call('GET', k2)`, nil},
		{"local function sees itself", `local function f(n) if n > 0 then return f(n - 1) end return redis.call('GET', KEYS[1]) end
return f(2)`, nil},
		{"repeat's condition sees the body's locals", `repeat local k = KEYS[1] until redis.call('EXISTS', k) == 1`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFindings(t, tt.src, Lint("s.lua", []byte(tt.src)).Findings, tt.want)
		})
	}
}

func TestLintBranches(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		want  []want
		notes []lint.Note
	}{
		{"if elseif else", `if ARGV[1] == 'a' then
  redis.call('GET', 'one')
elseif ARGV[1] == 'b' then
  redis.call('GET', 'two')
else
  redis.call('GET', 'three')
end
redis.call('GET', 'four')`, []want{
			{2, 21, "'one'", "string literal", "", "ARGV[1] == 'a' (line 1)"},
			{4, 21, "'two'", "string literal", "", "ARGV[1] ~= 'a' (line 1) and ARGV[1] == 'b' (line 3)"},
			{6, 21, "'three'", "string literal", "", "ARGV[1] ~= 'a' (line 1) and ARGV[1] ~= 'b' (line 3)"},
			{8, 19, "'four'", "string literal", "", ""},
		}, nil},
		{"nested ifs", `if ARGV[1] then
  if not ARGV[2] then redis.call('DEL', 'x') end
end`, []want{{2, 41, "'x'", "string literal", "", "ARGV[1] (line 1) and not ARGV[2] (line 2)"}}, nil},
		{"negated conditions", `if #ARGV > 2 then else redis.call('GET', 'n') end`,
			[]want{{1, 42, "'n'", "string literal", "", "not (#ARGV > 2) (line 1)"}}, nil},
		{"key used in one branch only", `local n = redis.call('INCR', KEYS[1])
if n > tonumber(ARGV[1]) then
  redis.call('SET', KEYS[2], 1, 'PX', 1000)
end`, nil, []lint.Note{{Line: 3, Column: 21, Key: "KEYS[2]", When: "n > tonumber(ARGV[1]) (line 2)"}}},
		{"key used in both arms is always used", `if ARGV[1] == '1' then
  redis.call('GET', KEYS[1])
else
  redis.call('SET', KEYS[1], 1)
end`, nil, nil},
		{"key used in then and elseif but not else", `local k = KEYS[2]
if ARGV[1] == 'a' then
  redis.call('GET', k)
elseif ARGV[1] == 'b' then
  redis.call('DEL', k)
else
  redis.call('GET', KEYS[1])
end`, nil, []lint.Note{
			{Line: 3, Column: 21, Key: "KEYS[2]", When: "ARGV[1] == 'a' (line 2), or when ARGV[1] ~= 'a' (line 2) and ARGV[1] == 'b' (line 4)"},
			{Line: 7, Column: 21, Key: "KEYS[1]", When: "ARGV[1] ~= 'a' (line 2) and ARGV[1] ~= 'b' (line 4)"},
		}},
		{"key used in every arm of an elseif chain", `if ARGV[1] == 'a' then
  redis.call('GET', KEYS[1])
elseif ARGV[1] == 'b' then
  redis.call('DEL', KEYS[1])
else
  redis.call('TYPE', KEYS[1])
end`, nil, nil},
		{"key used outside any branch too", `if ARGV[1] then redis.call('GET', KEYS[1]) end
redis.call('DEL', KEYS[1])`, nil, nil},
		{"keys of a loop over KEYS in a branch", `if ARGV[1] == 'reset' then
  for _, k in ipairs(KEYS) do redis.call('DEL', k) end
end`, nil, []lint.Note{{Line: 2, Column: 49, Key: "KEYS", When: "ARGV[1] == 'reset' (line 1)"}}},

		// Values are followed branch by branch.
		{"a branch that returns does not reach the call", `local k = KEYS[1]
if ARGV[1] then
  k = 'x:' .. k
  return redis.call('GET', KEYS[2])
end
return redis.call('GET', k)`, nil, []lint.Note{{Line: 4, Column: 28, Key: "KEYS[2]", When: "ARGV[1] (line 2)"}}},
		{"a value set in one branch reaches the call", `local k = ARGV[1]
if ARGV[2] then k = KEYS[1] end
return redis.call('GET', k)`, []want{{3, 26, "k", "holding an ARGV value (line 1)", "", ""}}, nil},
		{"both branches set a key", `local k
if ARGV[1] then k = KEYS[1] else k = KEYS[2] end
return redis.call('GET', k)`, nil, nil},
		{"break leaves the loop with its values", `local k = KEYS[1]
while true do
  if ARGV[1] then k = ARGV[1] break end
  k = KEYS[2]
end
return redis.call('GET', k)`, []want{{6, 26, "k", "holding an ARGV value (line 3)", "", ""}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Lint("s.lua", []byte(tt.src))
			checkFindings(t, tt.src, rep.Findings, tt.want)
			if len(rep.Notes) != len(tt.notes) {
				t.Fatalf("notes = %+v, want %+v", rep.Notes, tt.notes)
			}
			for i, n := range tt.notes {
				if rep.Notes[i] != n {
					t.Errorf("note %d = %+v, want %+v", i, rep.Notes[i], n)
				}
			}
		})
	}
}

func TestNoteMessage(t *testing.T) {
	n := lint.Note{Line: 3, Key: "KEYS[2]", When: "ARGV[1] == 'x' (line 2)"}
	if got, want := n.Message(), "KEYS[2] is used only when ARGV[1] == 'x' (line 2)"; got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
	f := lint.Finding{Call: "redis.call", Command: "GET", Arg: 1, Expr: "'x'", Reason: "a string literal", When: "ARGV[1] (line 1)"}
	if got, want := f.Message(), "redis.call(GET ...) argument 1: 'x' is a string literal, used only when ARGV[1] (line 1); pass the key in KEYS and use KEYS[i]"; got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
}

// TestLintUnreadable covers scripts Redis's Lua 5.1 would refuse: one
// finding where the script stops, with its line and column.
func TestLintUnreadable(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		reason    string
	}{
		{"syntax error", "local x = 1\nlocal y = = 2", 2, 11, "syntax error near ="},
		{"unfinished string", "local a = 1\nredis.call('GET', 'abc)\n", 2, 19, "unterminated string"},
		{"unfinished long string", "local s = [[abc\n", 1, 11, "unterminated multiline string"},
		{"unclosed block", "if ARGV[1] then\n  redis.call('GET', KEYS[1])\n", 1, 1, "ends before the if at line 1, column 1 is closed"},
		{"unclosed function", "local function f()\n  return 1\n", 1, 7, "ends before the function at line 1, column 7 is closed"},
		{"Lua 5.3 bitwise operator", "return 1 ~ 2", 1, 10, "cannot read the script"},
		{"Lua 5.3 integer division", "return 7 // 2", 1, 11, "syntax error"},
		{"goto is Lua 5.2", "local i = 1\n::top:: i = i + 1\nif i < 3 then goto top end", 2, 1, "goto and labels are Lua 5.2"},
		{"break outside a loop", "if ARGV[1] then\n  break\nend", 2, 3, "break outside a loop"},
		{"ambiguous call", "local f = print\n(f)('x')", 2, 1, "ambiguous syntax"},
		{"statement that is not a call", "x", 1, 1, "cannot read the script"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Lint("s.lua", []byte(tt.src))
			if len(rep.Findings) != 1 {
				t.Fatalf("findings = %+v, want one", rep.Findings)
			}
			f := rep.Findings[0]
			if f.Line != tt.line || f.Column != tt.col || !strings.Contains(f.Reason, tt.reason) || f.Arg != 0 {
				t.Errorf("finding = %d:%d %q (arg %d), want %d:%d ~%q", f.Line, f.Column, f.Reason, f.Arg, tt.line, tt.col, tt.reason)
			}
			if f.Message() != f.Reason {
				t.Errorf("Message() = %q, want the reason", f.Message())
			}
		})
	}
}

// TestLintReadsWhatRedisReads covers source that Lua 5.1 in Redis accepts
// though gopher-lua's scanner alone would not, or reads differently.
func TestLintReadsWhatRedisReads(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []want
	}{
		{"shebang flag line", "#!lua flags=no-writes\nreturn redis.call('GET', 'k')", []want{{2, 26, "'k'", "string literal", "", ""}}},
		{"form feed and vertical tab are white space", "redis.call('GET',\f\v'x')", []want{{1, 20, "'x'", "string literal", "", ""}}},
		{"CRLF line ends", "local k = ARGV[1]\r\n\r\nredis.call('GET', k)\r\n", []want{{3, 19, "k", "holding an ARGV value (line 1)", "", ""}}},
		{"column counts bytes", "-- é\nlocal s = 'é' redis.call('GET', 'é')", []want{{2, 34, "'é'", "string literal", "", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFindings(t, tt.src, Lint("s.lua", []byte(tt.src)).Findings, tt.want)
		})
	}
}
