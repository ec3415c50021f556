package report

import (
	"testing"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/lualint"
	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

// hostileKey has a newline, an ANSI colour sequence, a bell and a
// non-ASCII letter: everything but the ü must show as escapes.
const hostileKey = "a\nb\x1b[31mred\x07ü"

// hostileEval is a user script's run whose key, script name, arguments,
// replies and leaked keys carry control bytes (C0, ESC, C1, invalid UTF-8).
func hostileEval() eval.Result {
	res := leakyScriptResult()
	res.Key = hostileKey
	res.Script.Name = "evil\x1b]0;title\x07.lua"
	res.Script.Keys = []string{hostileKey}
	res.Script.Args = []string{"1\r\n", "\u009b2J"}
	for i := range res.Calls {
		res.Calls[i].Reply = []any{int64(1), int64(0), "\u009b31m" + hostileKey + "\xff"}
	}
	res.ReplyShape = "limiter"
	res.NoTTL.Patterns = []string{"*\x1b*"}
	res.NoTTL.Keys = []eval.NoTTLKey{{Key: hostileKey, Type: "string", Found: "keys"}}
	return res
}

// hostileKeyslot is an offline keyslot run over the hostile key, in a
// group and in a script's key literal.
func hostileKeyslot(t *testing.T) cluster.Result {
	t.Helper()
	res, err := cluster.Run(t.Context(), cluster.Options{
		Keys:   []string{hostileKey, "grüße:{ü}"},
		Groups: []cluster.Group{{Keys: []string{hostileKey, "grüße:{ü}"}, File: "groups\x1b[1m.txt", Line: 3}},
		Scripts: []lint.ScriptReport{
			lualint.Lint("lua/evil\x07.lua", []byte("return redis.call('GET', 'a\\27[31mred')\n")),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
