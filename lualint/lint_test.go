package lualint

import (
	"strings"
	"testing"
)

type wantFinding struct {
	line   int
	expr   string
	reason string // substring
}

func TestLint(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []wantFinding
	}{
		{"issue literal", `return redis.call('INCR', 'rl:global')`,
			[]wantFinding{{1, `'rl:global'`, "string literal"}}},
		{"issue argv", `return redis.call('GET', ARGV[1])`,
			[]wantFinding{{1, `ARGV[1]`, "ARGV value"}}},
		{"keys index", `return redis.call('GET', KEYS[1])`, nil},
		{"keys expression index", `local i = 2
return redis.call('GET', KEYS[i + 1])`, nil},
		{"alias", `local key = KEYS[1]
local a, b = KEYS[2], KEYS[3]
redis.call('SET', key, ARGV[1], 'PX', ARGV[2])
return redis.call('MGET', a, b)`, nil},
		{"alias from argv", `local key = ARGV[1]
return redis.call("GET", key)`,
			[]wantFinding{{2, "key", "holding an ARGV value (line 1)"}}},
		{"alias reassigned", `local key = KEYS[1]
key = key .. ':x'
return redis.call("GET", key)`,
			[]wantFinding{{3, "key", "assigned from key .. ':x' (line 2)"}}},
		{"concatenation", `local n = redis.call('INCR', KEYS[1] .. ":count")`,
			[]wantFinding{{1, `KEYS[1] .. ":count"`, "concatenation"}}},
		{"loop built", `for i = 1, tonumber(ARGV[1]) do
  redis.call('DEL', 'rl:' .. i)
end`, []wantFinding{{2, `'rl:' .. i`, "concatenation"}}},
		{"ipairs keys", `for _, k in ipairs(KEYS) do redis.call('DEL', k) end`, nil},
		{"ipairs argv", `for _, k in ipairs(ARGV) do redis.call('DEL', k) end`,
			[]wantFinding{{1, "k", "assigned from loop variable"}}},
		{"unpack keys", `return redis.call('DEL', unpack(KEYS))`, nil},
		{"unpack argv", `return redis.call('DEL', unpack(ARGV))`,
			[]wantFinding{{1, "unpack(ARGV)", "expression not taken from KEYS"}}},
		{"mset every other", `redis.call('MSET', KEYS[1], 'v1', KEYS[2], ARGV[1], 'k3', 'v3')`,
			[]wantFinding{{1, "'k3'", "string literal"}}},
		{"del all args", `redis.call('DEL', KEYS[1], 'other')`,
			[]wantFinding{{1, "'other'", "string literal"}}},
		{"exists", `redis.call('EXISTS', KEYS[1], KEYS[2], ARGV[3])`,
			[]wantFinding{{1, "ARGV[3]", "ARGV value"}}},
		{"blpop timeout not a key", `redis.call('BLPOP', KEYS[1], KEYS[2], 0)`, nil},
		{"zunionstore numkeys", `redis.call('ZUNIONSTORE', KEYS[1], 2, KEYS[2], 'x', 'WEIGHTS', 1, 2)`,
			[]wantFinding{{1, "'x'", "string literal"}}},
		{"hset fields not keys", `redis.call('HSET', KEYS[1], 'tokens', ARGV[1], 'ts', ARGV[2])`, nil},
		{"no keys", `local t = redis.call('TIME')
return redis.call('PING', 'x')`, nil},
		{"lowercase and pcall", `local r = redis.pcall('incrby', 'x', 1)`,
			[]wantFinding{{1, "'x'", "string literal"}}},
		{"comments and strings are not calls", `-- redis.call('GET', 'a')
--[[ redis.call('GET', 'b')
]]
--[==[ redis.call('GET', 'c') ]==]
local s = "redis.call('GET', 'd') \" redis.call('GET', 'e')"
local l = [[redis.call('GET', 'f')]]
local m = [=[ ]] redis.call('GET', 'g') ]=]
return redis.call('GET', KEYS[1])`, nil},
		{"line numbers after long strings", `local doc = [[
line 2
line 3]]
--[[ comment
line 5 ]]
redis.call('SET', 'k', '[[')`, []wantFinding{{6, "'k'", "string literal"}}},
		{"nested parens", `redis.call('SET', string.format('%s:%d', ARGV[1], tonumber(ARGV[2])), math.max(1, 2))`,
			[]wantFinding{{1, "string.format('%s:%d', ARGV[1], tonumber(ARGV[2]))", "expression not taken"}}},
		{"nested call", `redis.call('SET', KEYS[1], redis.call('GET', 'x'))`,
			[]wantFinding{{1, "'x'", "string literal"}}},
		{"function parameter", `local function get(k) return redis.call('GET', k) end
return get(KEYS[1])`, []wantFinding{{1, "k", "function parameter"}}},
		{"unknown variable", `return redis.call('GET', somekey)`,
			[]wantFinding{{1, "somekey", "never assigned"}}},
		{"dynamic command", `return redis.call(ARGV[1], KEYS[1])`,
			[]wantFinding{{1, "ARGV[1]", "not a literal"}}},
		{"multi-line argument", `redis.call('SET',
  'rl:' ..
  ARGV[1], 1)`, []wantFinding{{2, "'rl:' .. ARGV[1]", "concatenation"}}},
		{"escaped quote in key", `redis.call('GET', 'a\'b')`, []wantFinding{{1, `'a\'b'`, "string literal"}}},
		{"unterminated string", `redis.call('GET', 'abc)
`, []wantFinding{{1, "", "cannot read the script"}}},
		{"unterminated call", `redis.call('GET', KEYS[1]`, []wantFinding{{1, "", "ends before the ( at line 1, column 11 is closed"}}},
		{"valkey server.call", `return server.call('GET', ARGV[1])`,
			[]wantFinding{{1, "ARGV[1]", "ARGV value"}}},
		{"field named redis is not redis", `local t = {} t.redis.call('GET', 'x')`, nil},

		// The binding's expression ends where Lua ends it, not at the next
		// keyword: the next statement's text is not part of it.
		{"binding ends before the next statement", `local k = KEYS[1] .. ':total'
redis . call ( 'INCR', k)`, []wantFinding{{2, "k", "assigned from KEYS[1] .. ':total' (line 1), not KEYS[...]"}}},
		{"binding on the same line as the call", `local k = ARGV[1] .. 'x' redis.call('GET', k)`,
			[]wantFinding{{1, "k", "assigned from ARGV[1] .. 'x' (line 1), not"}}},
		{"binding ends before a call on the next line", `local k = KEYS[1]:lower()
redis.call('GET', k)`, []wantFinding{{2, "k", "assigned from KEYS[1]:lower() (line 1), not"}}},
		{"multi-line binding is folded", `local k = KEYS[1] ..
    ':x'
return redis.call('GET', k)`, []wantFinding{{3, "k", "assigned from KEYS[1] .. ':x' (line 1), not"}}},
		{"binding from a function value", `local k = function() return 1 end redis.call('GET', k)`,
			[]wantFinding{{1, "k", "assigned from function() return 1 end (line 1)"}}},
		{"binding of a list", `local a, b = ARGV[1], KEYS[1] .. ':x' redis.call('MGET', a, b)`,
			[]wantFinding{{1, "a", "holding an ARGV value (line 1)"}, {1, "b", "assigned from KEYS[1] .. ':x' (line 1)"}}},

		// The binding in force at the call is the last one before it.
		{"keys after argv clears it", `local x = ARGV[1]
x = KEYS[1]
return redis.call('GET', x)`, nil},
		{"argv after keys", `local x = KEYS[1]
x = ARGV[1]
return redis.call('GET', x)`, []wantFinding{{3, "x", "holding an ARGV value (line 2)"}}},
		{"each call sees its own binding", `local x = ARGV[1]
redis.call('GET', x)
x = KEYS[1]
redis.call('GET', x)
x = 'rl:' .. x
redis.call('GET', x)`, []wantFinding{{2, "x", "holding an ARGV value (line 1)"}, {6, "x", "assigned from 'rl:' .. x (line 5)"}}},
		{"reassigned after the call does not count", `local x = KEYS[1]
redis.call('GET', x)
x = ARGV[1]`, nil},
		{"value read before the new binding", `local x = KEYS[1]
local x = redis.call('GET', x)`, nil},
		{"table field is not a variable", `local key = KEYS[1]
local opts = {key = ARGV[1], n = 2}
return redis.call('GET', key)`, nil},
		{"parameter of an earlier function", `local function f(key) return key end
local key = KEYS[1]
return redis.call('GET', key)`, nil},
		{"loop: a later assignment reaches the next iteration", `local k = KEYS[1]
for i = 1, 3 do
  redis.call('INCR', k)
  k = ARGV[i]
end`, []wantFinding{{3, "k", "holding an ARGV value (line 4)"}}},
		{"loop: assignment before the call in the body", `local k = ARGV[1]
for i = 1, #KEYS do
  k = KEYS[i]
  redis.call('INCR', k)
end`, nil},
		{"while and repeat loops", `local a, b = KEYS[1], KEYS[2]
while true do redis.call('GET', a) a = ARGV[1] end
repeat redis.call('GET', b) b = 'x' until false`,
			[]wantFinding{{2, "a", "holding an ARGV value (line 2)"}, {3, "b", "assigned from 'x' (line 3)"}}},
		{"assigned only after the call", `local function get() return redis.call('GET', k) end
k = ARGV[1]
return get()`, []wantFinding{{1, "k", "holding an ARGV value (line 2)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Lint("s.lua", []byte(tt.src))
			if len(rep.Findings) != len(tt.want) {
				t.Fatalf("Lint found %d findings, want %d: %+v", len(rep.Findings), len(tt.want), rep.Findings)
			}
			for i, w := range tt.want {
				f := rep.Findings[i]
				if f.Line != w.line || f.Expr != w.expr || !strings.Contains(f.Reason, w.reason) || f.File != "s.lua" {
					t.Errorf("finding %d = line %d expr %q reason %q, want line %d expr %q reason ~%q",
						i, f.Line, f.Expr, f.Reason, w.line, w.expr, w.reason)
				}
			}
		})
	}
}

func TestLintCountsCalls(t *testing.T) {
	rep := Lint("x.lua", []byte(`redis.call('GET', KEYS[1]) redis.pcall('TIME') -- redis.call('X')`))
	if rep.Calls != 2 {
		t.Errorf("Calls = %d, want 2", rep.Calls)
	}
}

func TestFindingMessage(t *testing.T) {
	rep := Lint("x.lua", []byte(`return redis.call('INCR', 'rl:global')`))
	got := rep.Findings[0].Message()
	want := "redis.call(INCR ...) argument 1: 'rl:global' is a string literal; pass the key in KEYS and use KEYS[i]"
	if got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
}

func FuzzLint(f *testing.F) {
	f.Add(`redis.call('GET', KEYS[1])`)
	f.Add(`--[==[ x ]==] redis.pcall("SET", "a\"b" .. [[c]], ARGV[1])`)
	f.Add(`for _, k in ipairs(KEYS) do redis.call('DEL', k) end`)
	f.Add("local k = KEYS[1] .. ':total'\nredis . call ( 'INCR', k)")
	f.Add("local x = ARGV[1] x = KEYS[1] while x do repeat redis.call('GET', x) x = {x = 1} until f(function() end) end")
	f.Add("local c = redis.call if ARGV[1] then c('GET', 'x') elseif y then redis.pcall('DEL', KEYS[2]) end")
	f.Add("#!lua flags=no-writes\r\nlocal r = redis do local r = print r.call('GET', 'a') end goto x")
	f.Fuzz(func(t *testing.T, src string) {
		rep := Lint("f.lua", []byte(src))
		for _, fd := range rep.Findings {
			if fd.Line < 0 || fd.Line > strings.Count(src, "\n")+1 {
				t.Fatalf("finding line %d outside the script: %+v", fd.Line, fd)
			}
			if strings.Contains(fd.Reason, "the lint failed") {
				t.Fatalf("Lint panicked: %+v", fd)
			}
			checkColumn(t, src, fd.Line, fd.Column, fd.Expr)
		}
		for _, n := range rep.Notes {
			checkColumn(t, src, n.Line, n.Column, "")
		}
	})
}

// checkColumn fails unless line and column (0: unknown) are inside src and,
// when expr is given, the source there starts with expr's first byte.
func checkColumn(t *testing.T, src string, line, col int, expr string) {
	t.Helper()
	if col == 0 {
		return
	}
	lines := strings.Split(src, "\n")
	if col < 0 || line < 1 || line > len(lines) || col > len(lines[line-1]) {
		t.Fatalf("position %d:%d outside the script", line, col)
	}
	if expr != "" && lines[line-1][col-1] != expr[0] {
		t.Fatalf("at %d:%d the script has %q, want the start of %q", line, col, lines[line-1][col-1:], expr)
	}
}
