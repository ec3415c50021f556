package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// How the "keys never expire" check works, and what it cannot see.
//
// A script may write the keys it is given in KEYS and, against advice (and
// against Redis Cluster's rules), keys whose names it builds itself. The
// check never writes, renames or deletes anything and never changes server
// settings (keyspace notifications would need CONFIG SET); it only reads:
//
//   - every key passed in KEYS: PTTL after the run; -1 is reported,
//     with whether the key already existed before the run;
//   - SCAN MATCH patterns derived from the run: *{tag}* for each hash tag of
//     a key, KEY* for a key without one, *ARG* for each non-numeric argument
//     of three characters or more, and LITERAL* for each string literal the
//     script passes as the key of a write command (redis.call('INCR',
//     'hits:' .. ARGV[1])). Before the first call every matching key is
//     recorded with whether it had a TTL and a SHA-256 of its DUMP. After
//     the last call a matching key without TTL is reported when it is new
//     (created during the run: by the script or, on a busy server, by
//     another client), when it had a TTL before (a write dropped it), or
//     when its DUMP changed. OBJECT IDLETIME cannot replace the DUMP: small
//     integers are shared objects whose idle time never resets. A rewrite
//     to the same value is not seen, nor a non-string key on a server
//     whose DUMP only covers strings (the embedded miniredis). SCAN runs on
//     every primary of a cluster, at most scanCallsPerPattern calls per
//     pattern and node, and at most maxTracked keys are recorded;
//     Truncated says when either bound was hit.
//
// Keys whose names share nothing with the keys, arguments or literals are
// not found; the report lists the patterns so the reader knows what was
// looked at.

const (
	scanCount           = 1000
	scanCallsPerPattern = 200
	maxPatterns         = 12
	maxTracked          = 5000
)

type ttlCheck struct {
	c        redis.UniversalClient
	keys     []string
	patterns []string
	existed  map[string]bool     // KEYS that existed before the run
	before   map[string]keyState // pattern matches before the run
	trunc    bool
}

// keyState is what the check remembers of a key before the run.
type keyState struct {
	hadTTL bool
	dump   string // SHA-256 of DUMP; "" when the server could not dump it
}

func startTTLCheck(ctx context.Context, c redis.UniversalClient, keys, args []string, src string) (*ttlCheck, error) {
	t := &ttlCheck{c: c, keys: keys, patterns: DerivePatterns(keys, args, src), existed: map[string]bool{}}
	for _, k := range keys {
		n, err := c.Exists(ctx, k).Result()
		if err != nil {
			return nil, redisError("check key "+k, err)
		}
		t.existed[k] = n > 0
	}
	found, trunc, err := t.scan(ctx)
	if err != nil {
		return nil, err
	}
	t.trunc = trunc
	t.before = make(map[string]keyState, len(found))
	for _, k := range found {
		if len(t.before) >= maxTracked {
			t.trunc = true
			break
		}
		ttl, err := pttl(ctx, c, k)
		if denied(err) {
			continue // outside the user's key patterns: the script cannot write it either
		}
		if err != nil {
			return nil, err
		}
		if ttl == -2 {
			continue
		}
		t.before[k] = keyState{hadTTL: ttl >= 0, dump: dumpSum(ctx, c, k)}
	}
	return t, nil
}

func (t *ttlCheck) finish(ctx context.Context) (*TTLCheck, error) {
	out := &TTLCheck{Patterns: t.patterns, Keys: []NoTTLKey{}}
	seen := map[string]bool{}
	for _, k := range t.keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		ttl, err := pttl(ctx, t.c, k)
		if err != nil {
			return nil, err
		}
		if ttl == -1 {
			out.Keys = append(out.Keys, NoTTLKey{Key: k, Type: keyType(ctx, t.c, k), Found: "keys", ExistedBefore: t.existed[k]})
		}
	}
	after, truncated, err := t.scan(ctx)
	if err != nil {
		return nil, err
	}
	out.Truncated = truncated || t.trunc
	checked := 0
	for _, k := range after {
		if seen[k] {
			continue
		}
		if checked++; checked > maxTracked {
			out.Truncated = true
			break
		}
		ttl, err := pttl(ctx, t.c, k)
		if denied(err) {
			continue // outside the user's key patterns: the script cannot write it either
		}
		if err != nil {
			return nil, err
		}
		if ttl != -1 {
			continue
		}
		was, existed := t.before[k]
		if existed && !was.hadTTL && (was.dump == "" || was.dump == dumpSum(ctx, t.c, k)) {
			continue // there before, without TTL, and unchanged (as far as DUMP tells)
		}
		out.Keys = append(out.Keys, NoTTLKey{Key: k, Type: keyType(ctx, t.c, k), Found: "scan", ExistedBefore: existed})
	}
	sort.Slice(out.Keys, func(i, j int) bool {
		if out.Keys[i].Found != out.Keys[j].Found {
			return out.Keys[i].Found == "keys"
		}
		return out.Keys[i].Key < out.Keys[j].Key
	})
	return out, nil
}

// denied reports whether err is NOPERM for a key (or command) the ACL
// user may not touch.
func denied(err error) bool { return err != nil && redisconn.Classify(err) == redisconn.NoPerm }

// dumpSum returns the SHA-256 of DUMP key, or "" when the server cannot
// dump it.
func dumpSum(ctx context.Context, c redis.UniversalClient, key string) string {
	b, err := c.Dump(ctx, key).Bytes()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func keyType(ctx context.Context, c redis.UniversalClient, key string) string {
	t, err := c.Type(ctx, key).Result()
	if err != nil {
		return "unknown"
	}
	return t
}

// scan returns the keys matching the patterns on every primary, sorted.
func (t *ttlCheck) scan(ctx context.Context) ([]string, bool, error) {
	found := map[string]bool{}
	truncated := false
	var mu sync.Mutex
	for _, p := range t.patterns {
		err := primaries(ctx, t.c, func(ctx context.Context, n redis.Cmdable) error {
			var cursor uint64
			for range scanCallsPerPattern {
				keys, next, err := n.Scan(ctx, cursor, p, scanCount).Result()
				if err != nil {
					return err
				}
				mu.Lock()
				for _, k := range keys {
					found[k] = true
				}
				mu.Unlock()
				if cursor = next; cursor == 0 {
					return nil
				}
			}
			mu.Lock()
			truncated = true
			mu.Unlock()
			return nil
		})
		if err != nil {
			return nil, false, redisError("scan for keys without ttl (pattern "+p+")", err)
		}
	}
	keys := make([]string, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, truncated, nil
}

// writeCommands take their key as the first argument and create or change it.
var writeCommands = map[string]bool{
	"set": true, "setex": true, "psetex": true, "setnx": true, "getset": true, "append": true, "setrange": true,
	"setbit": true, "incr": true, "incrby": true, "incrbyfloat": true, "decr": true, "decrby": true,
	"hset": true, "hsetnx": true, "hmset": true, "hincrby": true, "hincrbyfloat": true,
	"zadd": true, "zincrby": true, "sadd": true, "lpush": true, "rpush": true, "lpushx": true, "rpushx": true,
	"linsert": true, "lset": true, "xadd": true, "pfadd": true, "bitfield": true, "geoadd": true,
}

var callWithLiteralKey = regexp.MustCompile(`redis\.p?call\s*\(\s*['"]([A-Za-z]+)['"]\s*,\s*(?:'([^'\\]*)'|"([^"\\]*)")`)

// DerivePatterns returns the SCAN MATCH patterns the no-TTL check searches,
// derived from the keys, the arguments and the script's literal key names.
func DerivePatterns(keys, args []string, src string) []string {
	var out []string
	add := func(p string) {
		if p != "" && p != "*" && !slices.Contains(out, p) && len(out) < maxPatterns {
			out = append(out, p)
		}
	}
	for _, k := range keys {
		if tag, ok := hashTag(k); ok {
			add("*{" + globEscape(tag) + "}*")
		} else if k != "" {
			add(globEscape(k) + "*")
		}
	}
	for _, m := range callWithLiteralKey.FindAllStringSubmatch(src, -1) {
		if lit := m[2] + m[3]; writeCommands[strings.ToLower(m[1])] && len(lit) >= 2 {
			add(globEscape(lit) + "*")
		}
	}
	for _, a := range args {
		if _, err := strconv.ParseFloat(a, 64); err == nil || len(a) < 3 {
			continue
		}
		add("*" + globEscape(a) + "*")
	}
	return out
}

// hashTag returns the part of key Redis Cluster hashes: the text between
// the first '{' and the first '}' after it, when not empty.
func hashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// globEscape escapes the characters SCAN MATCH treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
