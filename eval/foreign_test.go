package eval

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

var safetyParams = map[limiter.Algo]limiter.Params{
	limiter.TokenBucket:   {Algo: limiter.TokenBucket, Capacity: 3, Rate: rate.MustParse("1/m")},
	limiter.SlidingWindow: {Algo: limiter.SlidingWindow, Limit: 3, Window: 10 * time.Second},
	limiter.FixedWindow:   {Algo: limiter.FixedWindow, Limit: 3, Window: 10 * time.Second},
	limiter.GCRA:          {Algo: limiter.GCRA, Rate: rate.MustParse("1/m"), Burst: 3},
}

// foreignCases are keys a limiter script did not write: the user's data
// in the type the script uses, without its shape or without a TTL.
var foreignCases = []struct {
	name  string
	algo  limiter.Algo
	typ   string
	write func(ctx context.Context, c redis.UniversalClient, key string) error
}{
	{"session hash", limiter.TokenBucket, "hash", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.HSet(ctx, key, "user", "alice", "cart", "3").Err()
	}},
	{"session hash with ttl", limiter.TokenBucket, "hash", func(ctx context.Context, c redis.UniversalClient, key string) error {
		if err := c.HSet(ctx, key, "user", "alice", "cart", "3").Err(); err != nil {
			return err
		}
		return c.Expire(ctx, key, time.Hour).Err()
	}},
	{"bucket fields without ttl", limiter.TokenBucket, "hash", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.HSet(ctx, key, "tokens", "1000000", "ts", "1").Err()
	}},
	{"bucket fields and more", limiter.TokenBucket, "hash", func(ctx context.Context, c redis.UniversalClient, key string) error {
		if err := c.HSet(ctx, key, "tokens", "1000000", "ts", "1", "owner", "bob").Err(); err != nil {
			return err
		}
		return c.Expire(ctx, key, time.Hour).Err()
	}},
	{"bucket fields not numbers", limiter.TokenBucket, "hash", func(ctx context.Context, c redis.UniversalClient, key string) error {
		if err := c.HSet(ctx, key, "tokens", "many", "ts", "yesterday").Err(); err != nil {
			return err
		}
		return c.Expire(ctx, key, time.Hour).Err()
	}},
	{"leaderboard zset", limiter.SlidingWindow, "zset", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.ZAdd(ctx, key, redis.Z{Score: 1, Member: "alice"}, redis.Z{Score: 2, Member: "bob"}).Err()
	}},
	{"zset with ttl and fractional scores", limiter.SlidingWindow, "zset", func(ctx context.Context, c redis.UniversalClient, key string) error {
		if err := c.ZAdd(ctx, key, redis.Z{Score: 1.5, Member: "alice"}, redis.Z{Score: 2, Member: "bob"}).Err(); err != nil {
			return err
		}
		return c.Expire(ctx, key, time.Hour).Err()
	}},
	{"hash under sliding window", limiter.SlidingWindow, "hash", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.HSet(ctx, key, "user", "alice").Err()
	}},
	{"profile hash", limiter.FixedWindow, "hash", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.HSet(ctx, key, "user", "alice", "cart", "3").Err()
	}},
	{"half a window with ttl", limiter.FixedWindow, "hash", func(ctx context.Context, c redis.UniversalClient, key string) error {
		if err := c.HSet(ctx, key, "n", "2").Err(); err != nil {
			return err
		}
		return c.Expire(ctx, key, time.Hour).Err()
	}},
	{"counter string", limiter.GCRA, "string", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.Set(ctx, key, "42", 0).Err()
	}},
	{"text with ttl", limiter.GCRA, "string", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.Set(ctx, key, "alice", time.Hour).Err()
	}},
	{"list", limiter.GCRA, "list", func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.RPush(ctx, key, "a", "b").Err()
	}},
}

// snapshot is what a test compares before and after: the key's type, its
// content and whether it has a TTL.
type snapshot struct {
	Type    string
	Content any
	NoTTL   bool
}

func takeSnapshot(t *testing.T, c redis.UniversalClient, key string) snapshot {
	t.Helper()
	ctx := context.Background()
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		t.Fatalf("TYPE %s: %v", key, err)
	}
	s := snapshot{Type: typ}
	switch typ {
	case "hash":
		s.Content, err = c.HGetAll(ctx, key).Result()
	case "zset":
		s.Content, err = c.ZRangeWithScores(ctx, key, 0, -1).Result()
	case "string":
		s.Content, err = c.Get(ctx, key).Result()
	case "list":
		s.Content, err = c.LRange(ctx, key, 0, -1).Result()
	}
	if err != nil {
		t.Fatalf("read %s %s: %v", typ, key, err)
	}
	ttl, err := c.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	s.NoTTL = ttl == -1
	return s
}

// TestForeignKeyUntouched: a key the limiter script did not write (a
// user's hash or sorted set, one without a TTL, one with other fields or
// scores) is refused before anything is written, exit 2, one line naming
// the key and its type; the data and its missing TTL stay as they were,
// through Run and through Limiter.Allow, on every target.
func TestForeignKeyUntouched(t *testing.T) {
	ctx := context.Background()
	for _, tg := range redistest.All(t) {
		for _, tc := range foreignCases {
			t.Run(tg.Name+"/"+string(tc.algo)+"/"+tc.name, func(t *testing.T) {
				key := redistest.Key(t, "user")
				redistest.Cleanup(t, tg.Client, key)
				if err := tc.write(ctx, tg.Client, key); err != nil {
					t.Fatalf("write %s: %v", key, err)
				}
				before := takeSnapshot(t, tg.Client, key)
				_, err := Run(ctx, tg.Client, Options{Params: safetyParams[tc.algo], Key: key, Count: 2})
				checkForeign(t, "Run", err, key, tc.typ)
				_, err = redislimit.Allow(ctx, tg.Client, mustLimiter(t, safetyParams[tc.algo]), key, 0)
				checkForeign(t, "Allow", err, key, tc.typ)
				if after := takeSnapshot(t, tg.Client, key); !reflect.DeepEqual(after, before) {
					t.Errorf("key after the refused calls = %+v, want it untouched: %+v", after, before)
				}
			})
		}
	}
}

func checkForeign(t *testing.T, what string, err error, key, typ string) {
	t.Helper()
	msg := fmt.Sprint(err)
	if code := exitcode.Code(err); code != exitcode.Usage || !strings.Contains(msg, key) || !strings.Contains(msg, "holds a "+typ) ||
		!strings.Contains(msg, "pick another key") || !strings.Contains(msg, "--force") || strings.Contains(msg, "\n") {
		t.Errorf("%s on a foreign %s = %q (exit %d), want one line naming the key, that it holds a %s, and --force; exit 2", what, typ, msg, code, typ)
	}
}

// TestForceReplacesForeignKey: with Force the script deletes the key it
// did not write and starts fresh; the key is then its own (its fields
// only, a TTL) and later calls without Force go on counting from it.
func TestForceReplacesForeignKey(t *testing.T) {
	ctx := context.Background()
	for _, tg := range redistest.All(t) {
		for _, tc := range foreignCases {
			t.Run(tg.Name+"/"+string(tc.algo)+"/"+tc.name, func(t *testing.T) {
				key := redistest.Key(t, "user")
				redistest.Cleanup(t, tg.Client, key)
				if err := tc.write(ctx, tg.Client, key); err != nil {
					t.Fatalf("write %s: %v", key, err)
				}
				p := safetyParams[tc.algo]
				p.Force = true
				res, err := Run(ctx, tg.Client, Options{Params: p, Key: key})
				if err != nil || res.Summary.Allowed != 1 {
					t.Fatalf("Run with Force = %+v, %v; want the call allowed", res.Summary, err)
				}
				after := takeSnapshot(t, tg.Client, key)
				if after.NoTTL || after.Type != tc.algo.StateType() {
					t.Errorf("key after Force = %+v, want a %s with a TTL", after, tc.algo.StateType())
				}
				if fields, ok := after.Content.(map[string]string); ok {
					if _, user := fields["user"]; user || len(fields) != 2 {
						t.Errorf("hash after Force = %v, want only the script's two fields", fields)
					}
				}
				res, err = Run(ctx, tg.Client, Options{Params: safetyParams[tc.algo], Key: key})
				if err != nil || *res.Calls[0].Remaining != 1 {
					t.Fatalf("Run without Force after = %+v, %v; want the script's own key accepted, 1 left", res.Calls, err)
				}
			})
		}
	}
}

// TestOwnKeyCallAfterCall: each script accepts the key it wrote, call
// after call on the server's clock, and after SCRIPT FLUSH (EVALSHA falls
// back to EVAL); the quota runs out exactly.
func TestOwnKeyCallAfterCall(t *testing.T) {
	ctx := context.Background()
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		for _, algo := range limiter.Scripted() {
			t.Run(tg.Name+"/"+string(algo), func(t *testing.T) {
				key := redistest.Key(t, "own")
				redistest.Cleanup(t, tg.Client, key)
				res, err := Run(ctx, tg.Client, Options{Params: safetyParams[algo], Key: key, Count: 2})
				if err != nil || res.Summary.Allowed != 2 {
					t.Fatalf("first run = %+v, %v; want 2 allowed", res.Summary, err)
				}
				flushScripts(t, tg.Client, key)
				res, err = Run(ctx, tg.Client, Options{Params: safetyParams[algo], Key: key, Count: 2})
				if err != nil || res.Summary.Allowed != 1 || res.Summary.Refused != 1 {
					t.Fatalf("run after SCRIPT FLUSH = %+v, %v; want 1 allowed 1 refused (quota 3)", res.Summary, err)
				}
			})
		}
	}
}
