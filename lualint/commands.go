package lualint

import (
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

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
