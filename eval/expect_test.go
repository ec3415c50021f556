package eval

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// raceScript is one of the user scripts race's tests race (race/testdata,
// written here): the same files judged call after call.
func raceScript(name string) string { return filepath.Join("..", "race", "testdata", name) }

func mustExpect(t *testing.T, spec string) *judge.Expectation {
	t.Helper()
	x, err := judge.ParseModel(spec)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func mustReply(t *testing.T, s string) judge.Reply {
	t.Helper()
	r, err := judge.ParseReply(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestExpectBuckets: eval --expect compares each call of a classic token
// bucket with the model at its time. Before issue 30 the off-by-one bucket
// passed ("reply shape and TTL checked", exit 0); now it fails on call 11,
// the under-admitting one on call 10, and the correct one passes, on every
// target. The bucket refills a token in 10 s, so however slow the machine
// the 13 calls see no refill and the first disagreement is always the same
// call (at 5/s a token may come back between calls 10 and 11 on a busy
// machine, and an 11th admission is then right).
func TestExpectBuckets(t *testing.T) {
	for _, tg := range redistest.All(t) {
		for _, tc := range []struct {
			file  string
			pass  bool
			check string // the expect check's message
			shape bool   // the reply-shape check passes
		}{
			{"bucket.lua", true, "every call decided as token bucket 10 + 6/m decides it at its time (10 of 13 allowed)", true},
			{"bucket_offbyone.lua", false, "call 11 allowed; the model refuses it: 10 admitted in", false},
			{"bucket_under.lua", false, "call 10 refused; the model admits it: 9 admitted in", true},
		} {
			t.Run(tg.Name+"/"+tc.file, func(t *testing.T) {
				key := redistest.Key(t, "b")
				redistest.Cleanup(t, tg.Client, key)
				res, err := Run(context.Background(), tg.Client, Options{
					ScriptFile: raceScript(tc.file), ScriptWords: []string{key, ",", "10", "0.1", "1"}, Count: 13,
					Expect: mustExpect(t, "token-bucket:burst=10,rate=6/m"),
				})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				checks := res.CheckList()
				if len(checks) != 3 || checks[2].ID != CheckExpect {
					t.Fatalf("checks = %+v, want reply-shape, ttl, expect", checks)
				}
				if res.Pass() != tc.pass || checks[2].Pass != tc.pass || !strings.Contains(checks[2].Message, tc.check) || checks[0].Pass != tc.shape {
					t.Errorf("pass %v, checks %+v; want pass %v, expect %q, reply-shape pass %v", res.Pass(), checks, tc.pass, tc.check, tc.shape)
				}
			})
		}
	}
}

// TestReplyRedisRateGCRA: a GCRA replying {allowed, remaining, "retry s",
// "reset s"} as go-redis/redis_rate does is read with --reply: the retry
// in ms on every refused call, the reset on every call, and the calls
// judged by gcra. Without --reply the retry and reset were "-".
func TestReplyRedisRateGCRA(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			key := redistest.Key(t, "g")
			redistest.Cleanup(t, tg.Client, key)
			res, err := Run(context.Background(), tg.Client, Options{
				ScriptFile: raceScript("gcra_strings.lua"), ScriptWords: []string{key, ",", "5", "5", "1", "1"}, Count: 8,
				Reply: mustReply(t, "allowed,remaining,retry:s,reset:s"), Expect: mustExpect(t, "gcra:rate=5/s,burst=5"),
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !res.Pass() || res.ReplyShape != "limiter" || res.Reply != "allowed,remaining,retry:s,reset:s" {
				t.Fatalf("pass %v shape %q reply %q: %v", res.Pass(), res.ReplyShape, res.Reply, res.Failures())
			}
			refused := 0
			for _, c := range res.Calls {
				if c.ResetMs == nil || *c.ResetMs <= 0 || *c.ResetMs > 1200 {
					t.Errorf("call %d: reset %v, want ms within 1.2 s", c.N, c.ResetMs)
				}
				if *c.Allowed {
					continue
				}
				refused++
				// 200 ms between cells: the retry of a refused call is within it
				if c.RetryMs == nil || *c.RetryMs <= 0 || *c.RetryMs > 200 {
					t.Errorf("refused call %d: retry %v, want ms in (0, 200]", c.N, c.RetryMs)
				}
			}
			if refused < 2 || res.Summary.RetryMs == nil {
				t.Errorf("%d refused, summary retry %v: want at least 2 refused and a retry to report", refused, res.Summary.RetryMs)
			}
		})
	}
}

// TestReplyThreeElements: a 3-element reply {allowed, remaining, retry
// ms} is labelled allowed, remaining, retry by default.
func TestReplyThreeElements(t *testing.T) {
	tg := redistest.Embedded(t)
	key := redistest.Key(t, "b3")
	redistest.Cleanup(t, tg.Client, key)
	res, err := Run(context.Background(), tg.Client, Options{ScriptFile: raceScript("bucket.lua"), ScriptWords: []string{key, ",", "2", "1", "1"}, Count: 3})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	last := res.Calls[2]
	if *last.Allowed || last.RetryMs == nil || *last.RetryMs <= 0 || last.ResetMs != nil {
		t.Errorf("third call: allowed %v retry %v reset %v; want refused with a retry and no reset", *last.Allowed, last.RetryMs, last.ResetMs)
	}
	if !strings.Contains(res.Scope(), "the decisions were not judged (--expect MODEL") {
		t.Errorf("Scope() without --expect = %q", res.Scope())
	}
}

// TestExpectSlidingLog: a sliding-window log of the application's kind,
// judged by sliding-window, with calls every 100 ms against 2 per 500 ms,
// so calls are refused and entries leave the window during the run (a
// slow server only spaces the calls further).
func TestExpectSlidingLog(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			key := redistest.Key(t, "sw")
			redistest.Cleanup(t, tg.Client, key)
			res, err := Run(context.Background(), tg.Client, Options{
				ScriptFile: raceScript("sliding_log.lua"), ScriptWords: []string{key, ",", "500", "2", "{uuid}"}, Count: 12,
				Interval: 100e6, Expect: mustExpect(t, "sliding-window:limit=2,window=500ms"),
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !res.Pass() || res.Summary.Refused == 0 || res.Summary.Allowed <= 2 {
				t.Errorf("pass %v, %+v: %v; want a pass that both refused and admitted after the window slid", res.Pass(), res.Summary, res.Failures())
			}
			// the same calls judged by a window one too large fail
			wrong, err := Run(context.Background(), tg.Client, Options{
				ScriptFile: raceScript("sliding_log.lua"), ScriptWords: []string{redistest.Key(t, "sw2"), ",", "500", "2", "{uuid}"}, Count: 4,
				Expect: mustExpect(t, "sliding-window:limit=3,window=500ms"),
			})
			redistest.Cleanup(t, tg.Client, redistest.Key(t, "sw2"))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if wrong.Pass() {
				t.Errorf("judged by limit=3, a log of 2 passed")
			}
		})
	}
}
