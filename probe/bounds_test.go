package probe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/hostile"
)

// TestBoundsAgainstHostileTargets (issue 26 items 3 and 11): what a
// hostile target does to the first request is said in one line, exit 3,
// within one --timeout: no answer, headers trickled, a body dripped byte
// by byte (once read until the timeout and then counted as an admission),
// 10 MiB of headers, bytes that are not HTTP, an informational status (1xx)
// as the final answer (once "context deadline exceeded").
func TestBoundsAgainstHostileTargets(t *testing.T) {
	srv := hostile.Start(t)
	const timeout = time.Second
	for _, c := range []struct{ path, want string }{
		{"/hang", "no complete response within --timeout 1s"},
		{"/slowloris", "no complete response within --timeout 1s"},
		{"/drip", "the response (200) came, but its body did not end within --timeout 1s"},
		{"/big-header", "the response headers are larger than the 64 KiB the probe reads"},
		{"/garbage", "the answer is not HTTP/1.x"},
		{"/status-199", "the target answered 199, an informational (1xx) status, as its final response"},
		{"/1xx-flood", "the target answered 102, an informational (1xx) status"},
	} {
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := Run(context.Background(), Options{URL: srv.URL + c.path, RunID: "b", Timeout: timeout})
			if took := time.Since(start); took > timeout+2*time.Second {
				t.Errorf("took %s, want at most one --timeout (%s)", took, timeout)
			}
			if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Run(%s) = %v (exit %d), want one exit-3 line saying %q", c.path, err, exitcode.Code(err), c.want)
			}
		})
	}
}

// TestMaxTimeCutsTimedPhases (issue 26 item 3): a phase timed beyond
// --max-time (a refill one 60 s window after a refusal) was slept
// through, so --max-time 10s ran for 58 s. Now it is cut at --max-time:
// the probe ends within --max-time and one request's timeout, and says so.
func TestMaxTimeCutsTimedPhases(t *testing.T) {
	srv := hostile.Start(t)
	const maxTime = 3 * time.Second
	start := time.Now()
	res, err := Run(context.Background(), Options{URL: srv.URL + "/limit/bare?q=5&w=60", RunID: "m", MaxTime: maxTime, Timeout: time.Second})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > maxTime+time.Second+time.Second {
		t.Errorf("--max-time %s: the probe took %s", maxTime, took)
	}
	if !strings.Contains(strings.Join(res.Notes, "; "), "stopped at --max-time") {
		t.Errorf("notes %q do not say the probe was cut", res.Notes)
	}
}
