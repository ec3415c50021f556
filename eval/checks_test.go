package eval

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/limiter"

	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func checkByID(t *testing.T, res Result, id string) Check {
	t.Helper()
	for _, c := range res.CheckList() {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", id, res.CheckList())
	return Check{}
}

func writeScript(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.lua")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChecksOnServers: every run carries the reply-shape and ttl checks;
// a script that leaves keys without a TTL fails ttl, --allow-no-ttl turns
// it into a pass that says so, a script whose replies change shape fails
// reply-shape, and the embedded scripts and a well-behaved script pass
// both (the negative controls).
func TestChecksOnServers(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			run := func(t *testing.T, o Options) Result {
				t.Helper()
				res, err := Run(ctx, tg.Client, o)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if ids := []string{res.Checks[0].ID, res.Checks[1].ID}; !slices.Equal(ids, []string{CheckReplyShape, CheckTTL}) {
					t.Fatalf("checks %v, want reply-shape and ttl", ids)
				}
				return res
			}
			key := redistest.Key(t, "chk")
			redistest.Cleanup(t, tg.Client, key, key+":total")

			res := run(t, Options{ScriptFile: filepath.Join("testdata", "leaky_counter.lua"), ScriptWords: []string{key, ",", "2"}, Count: 2})
			if c := checkByID(t, res, CheckTTL); c.Pass || !strings.Contains(c.Message, "2 keys without a TTL") || res.Pass() {
				t.Errorf("leaky script: ttl check %+v, run pass %v; want a failure naming 2 keys", c, res.Pass())
			}
			if c := checkByID(t, res, CheckReplyShape); !c.Pass {
				t.Errorf("leaky script: reply-shape %+v, want pass", c)
			}

			res = run(t, Options{ScriptFile: filepath.Join("testdata", "leaky_counter.lua"), ScriptWords: []string{key, ",", "2"}, Count: 1, AllowNoTTL: true})
			if c := checkByID(t, res, CheckTTL); !c.Pass || !strings.Contains(c.Message, "accepted with --allow-no-ttl") || !res.Pass() {
				t.Errorf("--allow-no-ttl: ttl check %+v, want a pass that says it was accepted", c)
			}

			// {1, n} on odd calls, a string on even ones
			mixed := writeScript(t, "redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)\n"+
				"if tonumber(ARGV[1]) % 2 == 0 then return 'even' end\nreturn {1, 5}\n")
			k2 := redistest.Key(t, "mixed")
			redistest.Cleanup(t, tg.Client, k2)
			res = run(t, Options{ScriptFile: mixed, ScriptWords: []string{k2, ",", "{n}"}, Count: 4})
			if c := checkByID(t, res, CheckReplyShape); c.Pass || !strings.Contains(c.Message, "calls 2, 4") || res.Pass() {
				t.Errorf("mixed replies: reply-shape %+v, want a failure naming calls 2, 4", c)
			}
			if !slices.Equal(res.OtherShape, []int{2, 4}) || res.ReplyShape != "raw" {
				t.Errorf("mixed replies: shape %q other %v", res.ReplyShape, res.OtherShape)
			}

			res = run(t, Options{ScriptFile: filepath.Join("testdata", "raw_reply.lua"), ScriptWords: []string{k2, ",", "x"}, Count: 2})
			if !res.Pass() {
				t.Errorf("raw replies that set a TTL: failures %v, want a pass", res.Failures())
			}

			k3 := redistest.Key(t, "tb")
			redistest.Cleanup(t, tg.Client, k3)
			res = run(t, Options{Key: k3, Params: limiter.Params{Algo: limiter.TokenBucket, Capacity: 2, Rate: rate.MustParse("1/s"), Cost: 1}, Count: 3})
			if !res.Pass() {
				t.Errorf("embedded token bucket: failures %v, want a pass", res.Failures())
			}
		})
	}
}

// TestDerivedChecks: a document without checks (written before they
// existed) gets the same checks from its data, and a limiter key left
// without a TTL fails the ttl check.
func TestDerivedChecks(t *testing.T) {
	tr, fa := true, false
	zero := int64(0)
	res := Result{Algo: "token-bucket", Key: "k", ReplyShape: "limiter", Calls: []Call{
		{N: 1, Allowed: &tr, Remaining: &zero, TTLMs: 1000},
		{N: 2, Allowed: &fa, Remaining: &zero, TTLMs: -1},
	}}
	if c := checkByID(t, res, CheckTTL); c.Pass || !strings.Contains(c.Message, "call 2") {
		t.Errorf("limiter key without TTL: %+v, want a failure at call 2", c)
	}
	res.Calls[1].TTLMs = 999
	if !res.Pass() {
		t.Errorf("every call with a TTL: failures %v", res.Failures())
	}
	res = Result{Algo: "script", ReplyShape: "limiter", NoTTL: &TTLCheck{Keys: []NoTTLKey{{Key: "a"}}}}
	if res.Pass() || len(res.Failures()) != 1 || !strings.Contains(res.Failures()[0], "1 key without a TTL: it never expires") {
		t.Errorf("one key without TTL: failures %q", res.Failures())
	}
	res.Checks = []Check{{ID: CheckTTL, Pass: true, Message: "as written"}}
	if !res.Pass() {
		t.Error("stored checks are not used as they are")
	}
}
