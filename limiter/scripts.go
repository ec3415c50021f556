package limiter

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
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
	sha     string
}

// SHA1 returns the script's SHA-1 digest, the name EVALSHA calls it by.
func (s Script) SHA1() string {
	if s.sha != "" {
		return s.sha
	}
	sum := sha1.Sum([]byte(s.Source))
	return hex.EncodeToString(sum[:])
}

func newScript(name Algo, file, summary, src string) Script {
	s := Script{Name: string(name), File: file, Summary: summary, Source: src}
	s.sha = s.SHA1()
	return s
}

var (
	tokenBucketScript = newScript(TokenBucket, "token_bucket.lua",
		"token bucket: capacity, refill rate per second, cost; state in a hash", tokenBucketLua)
	slidingWindowScript = newScript(SlidingWindow, "sliding_window.lua",
		"sliding-window log: window ms, limit, request id; sorted set of timestamps", slidingWindowLua)
	fixedWindowScript = newScript(FixedWindow, "fixed_window.lua",
		"fixed window: window ms, limit, cost; counter with a TTL set when new", fixedWindowLua)
	gcraScript = newScript(GCRA, "gcra.lua",
		"GCRA: rate per second, burst, cost; one stored theoretical arrival time", gcraLua)
)

// Scripts returns the embedded scripts in the registry's order.
func Scripts() []Script {
	var out []Script
	for _, e := range registry {
		if e.Script != nil {
			out = append(out, *e.Script)
		}
	}
	return out
}

// ScriptByName finds an embedded script by algorithm name ("token-bucket"),
// file name ("token_bucket.lua") or file stem ("token_bucket").
func ScriptByName(name string) (Script, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, s := range Scripts() {
		if n == s.Name || n == s.File || n == strings.TrimSuffix(s.File, ".lua") {
			return s, true
		}
	}
	return Script{}, false
}

// ScriptNames lists the names ScriptByName accepts first.
func ScriptNames() []string {
	var names []string
	for _, s := range Scripts() {
		names = append(names, s.Name)
	}
	return names
}

var scriptCall = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z]+)['"]`)

// Commands lists the Redis commands the script calls, lower case, sorted:
// what its ACL user must be allowed besides EVALSHA and EVAL.
func (s Script) Commands() []string {
	seen := map[string]bool{}
	for _, sub := range scriptCall.FindAllStringSubmatch(s.Source, -1) {
		seen[strings.ToLower(sub[1])] = true
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// CommandAt is the command the script calls on line n (from 1), lower
// case; "" when that line calls none.
func (s Script) CommandAt(n int) string {
	lines := strings.Split(s.Source, "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	if c := scriptCall.FindStringSubmatch(lines[n-1]); c != nil {
		return strings.ToLower(c[1])
	}
	return ""
}
