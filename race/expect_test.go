package race

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// soakRuns and burnCPU: the shared harness's (limtest).
func soakRuns() int { return limtest.SoakRuns() }

func burnCPU(t *testing.T, cores int) { limtest.BurnCPU(t, cores) }

// testScript reads one of the scripts in testdata (written here: a classic
// token bucket, its broken variants, a GCRA replying strings in seconds, a
// sliding-window log) with its ARGV, its reply and the model it is judged
// against.
func testScript(t *testing.T, file, args, reply, expect string) *UserScript {
	t.Helper()
	path := filepath.Join("testdata", file)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	argv, err := ParseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	u := &UserScript{Path: path, Source: string(src), Args: argv}
	if reply != "" {
		if u.Reply, err = judge.ParseReply(reply); err != nil {
			t.Fatal(err)
		}
	}
	if u.Expect, err = judge.ParseModel(expect); err != nil {
		t.Fatal(err)
	}
	return u
}

// userOnly races only u, as --strategies none --script does.
func userOnly(t *testing.T, url string, n int, trials int, u *UserScript) Result {
	t.Helper()
	return userOnlyOn(t, raceClient(t, url, n), n, trials, u)
}

// userOnlyOn is userOnly on a client of the caller's, whose pool fits n.
func userOnlyOn(t *testing.T, c redis.UniversalClient, n int, trials int, u *UserScript) Result {
	t.Helper()
	res, err := Run(context.Background(), c, Options{Concurrency: n, Limit: 10, Trials: trials, Strategies: []string{}, User: u})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// TestExpectCorrectBucketUnderBurner is the acceptance of race --expect: a
// correct classic token bucket (HMGET/HSET, server TIME, PEXPIRE) that
// refills 5 tokens a second while 1,000 goroutines race it, with both
// cores kept busy, so a trial takes hundreds of ms and the bucket refills
// during it. Judged against --limit it fails at random (before issue 30:
// "admitted 12 of 1000 with limit 10"); judged against its model over the
// trial as it ran it passes every time: once by default, 20 times on each
// server with RATELIMIT_SOAK=1.
func TestExpectCorrectBucketUnderBurner(t *testing.T) {
	targets := []redistest.Target{redistest.Embedded(t), redistest.Standalone(t)}
	burnCPU(t, 2)
	for _, tg := range targets {
		// 5/s as the issue found it; 50/s refills several tokens in even
		// the shortest trial, so the refill is certainly judged.
		for _, perSec := range []string{"5", "50"} {
			t.Run(tg.Name+"/"+perSec+"_per_s", func(t *testing.T) {
				u := testScript(t, "bucket.lua", "{limit} "+perSec+" 1", "", "token-bucket:burst=10,rate="+perSec+"/s")
				passed, runs, refilled := 0, soakRuns(), 0
				c := raceClient(t, tg.URL, 1000) // one pool for every run
				for i := range runs {
					res := userOnlyOn(t, c, 1000, 1, u)
					s := res.Strategies[0]
					b := s.Expected[0]
					t.Logf("run %d: admitted %d; the model admits %s over %.1f ms", i+1, s.Allowed[0], b.Range(), b.SpanMs)
					if s.Allowed[0] > 10 {
						refilled++
					}
					if res.Pass() {
						passed++
					} else {
						t.Errorf("run %d: %v", i+1, res.Failures())
					}
				}
				t.Logf("passed %d of %d; %d admitted more than the capacity (refilled during the trial)", passed, runs, refilled)
				if perSec == "50" && refilled == 0 {
					t.Errorf("no run admitted more than the capacity at 50/s: the bucket did not refill during a trial, so the run proves nothing")
				}
			})
		}
	}
}

// TestExpectBrokenBuckets: an off-by-one bucket (admits with cost - 1
// tokens) and an under-admitting one (keeps a token in reserve) fail race
// --expect, on a bucket whose refill in a trial is far below one token so
// the model admits exactly the capacity; the correct bucket passes there.
func TestExpectBrokenBuckets(t *testing.T) {
	url := redistest.Standalone(t).URL
	for _, tc := range []struct {
		file, want string
		pass       bool
	}{
		{"bucket.lua", "", true},
		{"bucket_offbyone.lua", "over-admission: bucket_offbyone.lua admitted 11 of 200 in trial 1; token bucket 10 + 6/m admits 10 over", false},
		{"bucket_under.lua", "under-admission: bucket_under.lua admitted 9 of 200 in trial 1; token bucket 10 + 6/m admits 10 over", false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			res := userOnly(t, url, 200, 2, testScript(t, tc.file, "{limit} 0.1 1", "", "token-bucket:burst=10,rate=6/m"))
			if res.Pass() != tc.pass || !strings.Contains(strings.Join(res.Failures(), "; "), tc.want) {
				t.Errorf("pass %v, failures %q; want pass %v with %q", res.Pass(), res.Failures(), tc.pass, tc.want)
			}
		})
	}
}

// TestExpectGCRAStrings: a GCRA replying its retry and reset as strings of
// seconds (go-redis/redis_rate's shape, allowed being the cost admitted)
// is read with --reply and judged by gcra; its allowed element is the
// count, so the default reading (1 or 0) would fail every call.
func TestExpectGCRAStrings(t *testing.T) {
	url := redistest.Standalone(t).URL
	res := userOnly(t, url, 200, 2, testScript(t, "gcra_strings.lua", "{limit} 5 1 1", "allowed,remaining,retry:s,reset:s", "gcra:rate=5/s,burst=10"))
	if !res.Pass() {
		t.Errorf("gcra_strings.lua with --reply: %v", res.Failures())
	}
	s := res.Strategies[0]
	if sum(s.Errors) != 0 || s.AllowedMin < 10 {
		t.Errorf("admitted %v with %v errors (%s), want at least 10 and none", s.Allowed, s.Errors, s.ErrorSample)
	}
}

// TestExpectSlidingLog: a sliding-window log of the application's kind
// (ZREMRANGEBYSCORE, ZCARD, ZADD, PEXPIRE) judged by sliding-window, with
// a window of a minute, so each trial of 1,000 goroutines lies in one
// window. (A 30 ms window sliding during a trial failed under load: the
// replay at the sends is not the fewest a sliding window admits when a
// busy Redis decides the calls later, bunched together; judge.Trial's
// lower bound holds for refilling buckets, not for windows.)
func TestExpectSlidingLog(t *testing.T) {
	url := redistest.Standalone(t).URL
	res := userOnly(t, url, 1000, 3, testScript(t, "sliding_log.lua", "60000 {limit} {uuid}", "", "sliding-window:limit=10,window=1m"))
	s := res.Strategies[0]
	for i, b := range s.Expected {
		t.Logf("trial %d: admitted %d; the model admits %s over %.1f ms", i+1, s.Allowed[i], b.Range(), b.SpanMs)
	}
	if !res.Pass() {
		t.Errorf("sliding_log.lua: %v", res.Failures())
	}
}
