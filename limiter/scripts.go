package limiter

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed token_bucket.lua
	tokenBucketLua string
	//go:embed sliding_window.lua
	slidingWindowLua string
	//go:embed fixed_window.lua
	fixedWindowLua string
	//go:embed gcra.lua
	gcraLua string
)

// Script is one embedded limiter script.
type Script struct {
	Name    string // the algorithm name, e.g. "token-bucket"
	File    string // e.g. "token_bucket.lua"
	Summary string // one line
	Source  string // the Lua source, starting with its KEYS/ARGV/reply comment
}

// SHA1 returns the script's SHA-1 digest, the name EVALSHA calls it by.
func (s Script) SHA1() string {
	sum := sha1.Sum([]byte(s.Source))
	return hex.EncodeToString(sum[:])
}

var embedded = []Script{
	{string(TokenBucket), "token_bucket.lua", "token bucket: capacity, refill rate per second, cost; state in a hash", tokenBucketLua},
	{string(SlidingWindow), "sliding_window.lua", "sliding-window log: window ms, limit, request id; sorted set of timestamps", slidingWindowLua},
	{string(FixedWindow), "fixed_window.lua", "fixed window: window ms, limit, cost; counter with a TTL set when new", fixedWindowLua},
	{string(GCRA), "gcra.lua", "GCRA: rate per second, burst, cost; one stored theoretical arrival time", gcraLua},
}

var compiled = map[Algo]*redis.Script{
	TokenBucket:   redis.NewScript(tokenBucketLua),
	SlidingWindow: redis.NewScript(slidingWindowLua),
	FixedWindow:   redis.NewScript(fixedWindowLua),
	GCRA:          redis.NewScript(gcraLua),
}

// Scripts returns the embedded scripts in a stable order.
func Scripts() []Script {
	return append([]Script(nil), embedded...)
}

// ScriptByName finds an embedded script by algorithm name ("token-bucket"),
// file name ("token_bucket.lua") or file stem ("token_bucket").
func ScriptByName(name string) (Script, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, s := range embedded {
		if n == s.Name || n == s.File || n == strings.TrimSuffix(s.File, ".lua") {
			return s, true
		}
	}
	return Script{}, false
}

// ScriptNames lists the names ScriptByName accepts first.
func ScriptNames() []string {
	names := make([]string, len(embedded))
	for i, s := range embedded {
		names[i] = s.Name
	}
	return names
}
