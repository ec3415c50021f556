package cmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/race"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// testScript is one of the scripts race's tests race (race/testdata).
func testScript(name string) string { return filepath.Join("..", "race", "testdata", name) }

// TestRaceExpectCommand: race --expect judges --script by its model; the
// broken buckets fail with exit 1 and the bounds named, the documents
// validate, and a script over the limit without --expect is told that a
// refilling script needs --expect.
func TestRaceExpectCommand(t *testing.T) {
	url := redistest.Standalone(t).URL
	for _, tc := range []struct {
		file, want string
		code       int
	}{
		{"bucket.lua", "", exitcode.OK},
		{"bucket_offbyone.lua", "over-admission: bucket_offbyone.lua admitted 11 of 200 in trial 1; token bucket 10 + 6/m admits 10 over the trial's", exitcode.Failed},
		{"bucket_under.lua", "under-admission: bucket_under.lua admitted 9 of 200 in trial 1; token bucket 10 + 6/m admits 10 over the trial's", exitcode.Failed},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tf := newTestFactory(t)
			code := tf.execute(t, "race", "--redis", url, "--strategies", "none", "--script", testScript(tc.file), "--args", "{limit} 0.1 1",
				"--expect", "token-bucket:burst=10,rate=6/m", "--trials", "2", "-o", "json")
			if code != tc.code || !strings.Contains(tf.ErrOut.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d with %q", code, tf.ErrOut.String(), tc.code, tc.want)
			}
			var res race.Result
			if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			if res.Expect != "token-bucket:burst=10,rate=6/m" || len(res.Strategies) != 1 || len(res.Strategies[0].Expected) != 2 {
				t.Errorf("document expect %q, strategies %+v", res.Expect, res.Strategies)
			}
		})
	}
	t.Run("text", func(t *testing.T) {
		tf := newTestFactory(t)
		code := tf.execute(t, "race", "--redis", url, "--strategies", "none", "--script", testScript("bucket.lua"), "--args", "{limit} 5 1",
			"--expect", "token-bucket:burst=10,rate=5/s", "--trials", "1")
		out := tf.Out.String()
		for _, want := range []string{"bucket.lua judged against token bucket 10 + 5/s (--expect token-bucket:burst=10,rate=5/s)", "model admits",
			"verdict: PASS  bucket.lua admitted what token bucket 10 + 5/s admits over each trial as it ran"} {
			if !strings.Contains(out, want) {
				t.Errorf("exit %d, text lacks %q:\n%s", code, want, out)
			}
		}
	})
	t.Run("over the limit without --expect", func(t *testing.T) {
		tf := newTestFactory(t)
		code := tf.execute(t, "race", "--redis", url, "--strategies", "none", "--script", testScript("bucket_offbyone.lua"), "--args", "{limit} 5 1", "--trials", "1")
		if code != exitcode.Failed || !strings.Contains(tf.ErrOut.String(), "a script that refills during a trial admits more than --limit: judge it by the model it implements with --expect MODEL") {
			t.Errorf("exit %d, stderr %q", code, tf.ErrOut.String())
		}
	})
}

// TestExpectBadInput: the models and replies race and eval cannot read
// are exit 2, before anything connects.
func TestExpectBadInput(t *testing.T) {
	script := testScript("bucket.lua")
	for _, args := range [][]string{
		{"race", "--expect", "token-bucket:burst=10,rate=5/s"},
		{"race", "--reply", "allowed"},
		{"race", "--script", script, "--expect", "auto"},
		{"race", "--script", script, "--expect", "none"},
		{"race", "--script", script, "--expect", "token-bucket:burst=10"},
		{"race", "--script", script, "--reply", "remaining,retry"},
		{"race", "--script", script, "--reply", "allowed,retry:h"},
		{"eval", "--script", script, "k", ",", "1", "--expect", "auto"},
		{"eval", "--script", script, "k", ",", "1", "--reply", "allowed,allowed"},
		{"eval", "k", "--capacity", "1", "--rate", "1/s", "--reply", "allowed"},
		{"eval", "--simulate", "--arrivals", "1/s", "--duration", "1s", "--capacity", "1", "--rate", "1/s", "--expect", "token-bucket:burst=1,rate=1/s"},
	} {
		tf := newTestFactory(t)
		code := tf.execute(t, append(args, "--redis", "redis://127.0.0.1:1")...)
		if code != exitcode.Usage || strings.Count(strings.TrimSpace(tf.ErrOut.String()), "\n") > 0 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line", args, code, tf.ErrOut.String())
		}
	}
}

// TestEvalExpectCommand: eval --expect fails the off-by-one bucket on call
// 11 (exit 1; it passed before issue 30), and --reply reads a GCRA that
// answers strings of seconds, with a retry in ms on every refused call.
func TestEvalExpectCommand(t *testing.T) {
	tf := newTestFactory(t)
	code := tf.execute(t, "eval", "--redis", "embedded", "--script", testScript("bucket_offbyone.lua"), "rl:{t}:b", ",", "10", "0.1", "1", "-n", "13",
		"--expect", "token-bucket:burst=10,rate=6/m")
	if code != exitcode.Failed || !strings.Contains(tf.ErrOut.String(), "call 11 allowed; the model refuses it: 10 admitted in") ||
		!strings.Contains(tf.Out.String(), "call 11 answered remaining -1") {
		t.Errorf("off-by-one: exit %d, stderr %q, out:\n%s", code, tf.ErrOut.String(), tf.Out.String())
	}

	tf = newTestFactory(t)
	code = tf.execute(t, "eval", "--redis", "embedded", "--script", testScript("gcra_strings.lua"), "rl:{t}:g", ",", "5", "5", "1", "1", "-n", "7",
		"--reply", "allowed,remaining,retry:s,reset:s", "--expect", "gcra:rate=5/s,burst=5", "-o", "json")
	if code != exitcode.OK {
		t.Fatalf("gcra: exit %d, stderr %q", code, tf.ErrOut.String())
	}
	var res eval.Result
	if err := json.Unmarshal(tf.Out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, c := range res.Calls {
		if c.Allowed != nil && !*c.Allowed {
			refused++
			if c.RetryMs == nil || *c.RetryMs <= 0 {
				t.Errorf("refused call %d: retry %v, want ms", c.N, c.RetryMs)
			}
		}
	}
	if refused != 2 || res.Expect == nil || !res.Expect.Pass {
		t.Errorf("%d refused, expect %+v; want 2 refused and a pass", refused, res.Expect)
	}
}
