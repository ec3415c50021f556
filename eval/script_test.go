package eval

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestUserScriptArticleStyle: a blog-style token bucket runs via --script
// unchanged, its replies are labelled as limiter replies, and its key has
// a TTL so nothing is reported.
func TestUserScriptArticleStyle(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			key := redistest.Key(t, "bucket")
			redistest.Cleanup(t, tg.Client, key)
			res, err := Run(context.Background(), tg.Client, Options{
				ScriptFile:  filepath.Join("testdata", "article_token_bucket.lua"),
				ScriptWords: []string{key, ",", "5", "1", "1"},
				Count:       7,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ReplyShape != "limiter" || res.Algo != "script" || res.Key != key {
				t.Fatalf("shape %q algo %q key %q", res.ReplyShape, res.Algo, res.Key)
			}
			allowed, remaining, _ := decisions(t, res)
			if !slices.Equal(allowed, []bool{true, true, true, true, true, false, false}) ||
				!slices.Equal(remaining, []int64{4, 3, 2, 1, 0, 0, 0}) {
				t.Errorf("allowed %v remaining %v", allowed, remaining)
			}
			if res.Summary.Allowed != 5 || res.Summary.Refused != 2 {
				t.Errorf("summary = %+v", res.Summary)
			}
			if res.NoTTL == nil || len(res.NoTTL.Keys) != 0 {
				t.Errorf("no-ttl report = %+v, want no keys", res.NoTTL)
			}
			if got := fmt.Sprint(res.Calls[0].Reply); got != "[1 4]" {
				t.Errorf("raw reply of call 1 = %s, want [1 4]", got)
			}
		})
	}
}

func noTTLNames(c *TTLCheck) []string {
	var out []string
	for _, k := range c.Keys {
		out = append(out, k.Key+"/"+k.Found+"/"+k.Type)
	}
	return out
}

// TestUserScriptReportsKeysWithoutTTL: INCR without EXPIRE on KEYS[1] and
// on a key the script derives from it are both reported.
func TestUserScriptReportsKeysWithoutTTL(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			key := redistest.Key(t, "counter")
			redistest.Cleanup(t, tg.Client, key, key+":total")
			res, err := Run(context.Background(), tg.Client, Options{
				ScriptFile:  filepath.Join("testdata", "leaky_counter.lua"),
				ScriptWords: []string{key, ",", "2"},
				Count:       3,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			want := []string{key + "/keys/string", key + ":total/scan/string"}
			if got := noTTLNames(res.NoTTL); !slices.Equal(got, want) {
				t.Errorf("keys without ttl = %q, want %q (patterns %q)", got, want, res.NoTTL.Patterns)
			}
			for _, c := range res.Calls {
				if c.TTLMs != -1 {
					t.Errorf("call %d ttl = %d, want -1", c.N, c.TTLMs)
				}
			}
			if res.Summary.Allowed != 2 || res.Summary.Refused != 1 {
				t.Errorf("summary = %+v, want 2 allowed 1 refused", res.Summary)
			}
			// A second run finds the same keys although they existed before.
			res, err = Run(context.Background(), tg.Client, Options{
				ScriptFile:  filepath.Join("testdata", "leaky_counter.lua"),
				ScriptWords: []string{key, ",", "2"},
			})
			if err != nil {
				t.Fatalf("second Run: %v", err)
			}
			if got := noTTLNames(res.NoTTL); !slices.Equal(got, want) {
				t.Errorf("second run: keys without ttl = %q, want %q", got, want)
			}
			if len(res.NoTTL.Keys) == 0 || !res.NoTTL.Keys[0].ExistedBefore {
				t.Errorf("second run: %+v, want KEYS[1] reported as existing before", res.NoTTL.Keys)
			}
		})
	}
}

// TestUserScriptLiteralKey: a key built from a literal and an argument is
// found through the script's literal (standalone; Cluster refuses such
// scripts, which is the error the user gets there).
func TestUserScriptLiteralKey(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Embedded(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			key := redistest.Key(t, "k")
			id := "caller-" + strings.TrimPrefix(strings.Split(key, "}")[0], "test:{")
			redistest.Cleanup(t, tg.Client, key, "hits:"+id)
			res, err := Run(context.Background(), tg.Client, Options{
				ScriptFile:  filepath.Join("testdata", "literal_key.lua"),
				ScriptWords: []string{key, ",", id},
				Count:       2,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got, want := noTTLNames(res.NoTTL), []string{"hits:" + id + "/scan/string"}; !slices.Equal(got, want) {
				t.Errorf("keys without ttl = %q, want %q (patterns %q)", got, want, res.NoTTL.Patterns)
			}
			if res.ReplyShape != "raw" || res.Calls[1].Reply != "2" || res.Calls[1].Allowed != nil {
				t.Errorf("shape %q reply %v allowed %v, want raw \"2\" and no decision", res.ReplyShape, res.Calls[1].Reply, res.Calls[1].Allowed)
			}
		})
	}
}

func TestDerivePatterns(t *testing.T) {
	src := `redis.call('INCR', 'hits:' .. ARGV[1]); redis.call("SET", "cfg", 1); redis.call('GET', 'ro:x'); redis.call('TIME')`
	got := DerivePatterns([]string{"rl:{u1}:a", "plain*key"}, []string{"10", "ab", "caller-7"}, src)
	want := []string{"*{u1}*", `plain\*key*`, "hits:*", "cfg*", "*caller-7*"}
	if !slices.Equal(got, want) {
		t.Errorf("DerivePatterns = %q, want %q", got, want)
	}
}

// TestScriptFlushBetweenCalls: after SCRIPT FLUSH the next call falls back
// from EVALSHA to EVAL and sees the state the first call left.
func TestScriptFlushBetweenCalls(t *testing.T) {
	ctx := context.Background()
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			l := mustLimiter(t, limiter.Params{Algo: limiter.TokenBucket, Capacity: 3, Rate: rate.Rate{Count: 1, Per: time.Minute}})
			key := redistest.Key(t, "flush")
			redistest.Cleanup(t, tg.Client, key)
			d1, err := redislimit.Allow(ctx, tg.Client, l, key, 0)
			if err != nil || !d1.Allowed || d1.Remaining != 2 {
				t.Fatalf("first call = %+v, %v; want allowed with 2 left", d1, err)
			}
			node := flushScripts(t, tg.Client, key)
			if ok, err := node.ScriptExists(ctx, redislimit.Script(l).Hash()).Result(); err != nil || ok[0] {
				t.Fatalf("SCRIPT EXISTS after flush = %v, %v; want false", ok, err)
			}
			d2, err := redislimit.Allow(ctx, tg.Client, l, key, 0)
			if err != nil || !d2.Allowed || d2.Remaining != 1 {
				t.Fatalf("second call after SCRIPT FLUSH = %+v, %v; want allowed with 1 left", d2, err)
			}
			// Run (the command's path) survives a flush too.
			flushScripts(t, tg.Client, key)
			res, err := Run(ctx, tg.Client, Options{Params: l.Params(), Key: key})
			if err != nil || *res.Calls[0].Remaining != 0 {
				t.Fatalf("Run after SCRIPT FLUSH = %+v, %v; want 0 left", res.Calls, err)
			}
		})
	}
}

// flushScripts flushes the script cache of the node that owns key and
// returns that node.
func flushScripts(t *testing.T, c redis.UniversalClient, key string) redis.Cmdable {
	t.Helper()
	ctx := context.Background()
	var node redis.Cmdable = c
	if cc, ok := c.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatalf("MasterForKey(%q): %v", key, err)
		}
		node = n
	}
	if err := node.ScriptFlush(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	return node
}

// TestFunction: --function loads the script as a library, calls it with
// FCALL (same decisions as EVALSHA), survives FUNCTION FLUSH... and deletes
// the library it created.
func TestFunction(t *testing.T) {
	ctx := context.Background()
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			key := redistest.Key(t, "fn")
			redistest.Cleanup(t, tg.Client, key)
			res, err := Run(ctx, tg.Client, Options{
				Params: limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.MustParse("1/s")},
				Key:    key, Count: 7, Function: true,
			})
			if err != nil {
				t.Fatalf("Run --function: %v", err)
			}
			if res.Script.Via != "fcall" || !strings.HasPrefix(res.Script.Function, "ratelimit_eval_") {
				t.Errorf("script = %+v, want fcall of ratelimit_eval_*", res.Script)
			}
			if res.Summary.Allowed != 5 || res.Summary.Refused != 2 {
				t.Errorf("summary = %+v, want 5 allowed 2 refused", res.Summary)
			}
			err = primaries(ctx, tg.Client, func(ctx context.Context, n redis.Cmdable) error {
				libs, err := n.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: res.Script.Function}).Result()
				if err != nil {
					return err
				}
				if len(libs) != 0 {
					return fmt.Errorf("library %s left behind", res.Script.Function)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			// A user script as a function, with an article-style signature.
			ukey := redistest.Key(t, "fnuser")
			redistest.Cleanup(t, tg.Client, ukey)
			res, err = Run(ctx, tg.Client, Options{
				ScriptFile:  filepath.Join("testdata", "article_token_bucket.lua"),
				ScriptWords: []string{ukey, ",", "2", "1", "1"},
				Count:       3, Function: true,
			})
			if err != nil {
				t.Fatalf("Run --script --function: %v", err)
			}
			if res.Summary.Allowed != 2 || res.Summary.Refused != 1 {
				t.Errorf("user function summary = %+v, want 2 allowed 1 refused", res.Summary)
			}
		})
	}
}

func TestFunctionLibrary(t *testing.T) {
	code, lib, fn, err := FunctionLibrary("return 1")
	if err != nil || lib != fn || !strings.HasPrefix(code, "#!lua name="+lib+"\n") {
		t.Errorf("FunctionLibrary(eval script) = %q, %q, %q, %v", code, lib, fn, err)
	}
	src := "#!lua name=mylib\nredis.register_function{function_name='hit', callback=function(k, a) return 1 end}\n"
	if code, lib, fn, err := FunctionLibrary(src); err != nil || code != src || lib != "mylib" || fn != "hit" {
		t.Errorf("FunctionLibrary(library) = %q, %q, %q, %v", code, lib, fn, err)
	}
	if _, _, _, err := FunctionLibrary("#!lua\nreturn 1"); err == nil {
		t.Error("FunctionLibrary(#!lua without name) succeeded")
	}
}
