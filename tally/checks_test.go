package tally

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/judge"
)

// TestHeaderFailureNamesTheWayOut (issue 32): a run whose count passes
// and whose header checks fail (nginx sends no Retry-After) ended with a
// failed header:retry-after and no hint; the failure names --headers warn
// and --headers off, and a missing field reads "missing", not "invalid
// rate limit header: ... is missing". A warning (--headers warn) carries
// no hint: it fails nothing.
func TestHeaderFailureNamesTheWayOut(t *testing.T) {
	_, err := header.CheckRetryAfter(http.Header{}, time.Now())
	if err == nil || err.Error() != "Retry-After is missing" {
		t.Errorf("CheckRetryAfter of no field: %v, want \"Retry-After is missing\"", err)
	}
	for _, mode := range []string{HeadersFail, HeadersWarn} {
		r := &Result{Responses: 40, Completed: 40, RateLimited: 25}
		r.Headers.Mode = mode
		r.Headers.Responses = 40
		r.Headers.RetryAfter = FieldStat{Checked: 25, Example: err.Error()}
		for _, c := range r.CheckList() {
			if c.ID != CheckRetryAfter {
				continue
			}
			hint := strings.Contains(c.Message, "--headers warn") && strings.Contains(c.Message, "--headers off")
			if c.Pass || hint != (mode == HeadersFail) || strings.Contains(c.Message, "invalid rate limit header") {
				t.Errorf("--headers %s: %s pass %v: %q", mode, c.ID, c.Pass, c.Message)
			}
		}
	}
}

// TestREADMERetryAfterZero (issue 32): the README said Retry-After must be
// "seconds >= 1 or a date" while the tool rightly takes 0 as valid syntax
// (RFC 9110) and judges its honesty by evidence.
func TestREADMERetryAfterZero(t *testing.T) {
	if _, err := header.CheckRetryAfter(http.Header{"Retry-After": {"0"}}, time.Now()); err != nil {
		t.Fatalf("Retry-After: 0: %v, want valid", err)
	}
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "seconds >= 1") {
		t.Error("README says Retry-After must be seconds >= 1; the tool takes 0 as valid")
	}
}

// TestAdmitsAllModelUndecided (issue 32): a model that admits every
// request sent (a token bucket of 10^9) passed any count within its
// tolerance, however many the target refused; the run is UNDECIDED, not
// a pass, and says why.
func TestAdmitsAllModelUndecided(t *testing.T) {
	r := &Result{Responses: 600, Completed: 600, Sent: 600, RateLimited: 441, Allowed: 159}
	r.Headers.Mode = HeadersOff
	r.Expect = &judge.Judged{Model: "token-bucket:burst=1000000000,rate=1000000000/s", Description: "token bucket 1000000000 + 1000000000/s",
		Expected: 600, Observed: 159, Of: 600, Tolerance: 601, Pass: true, Note: judge.AdmitsAllNote}
	cs := r.CheckList()
	if v := doc.VerdictOf(cs); v != doc.VerdictUndecided {
		t.Errorf("verdict %s, want %s: %+v", v, doc.VerdictUndecided, cs)
	}
	found := false
	for _, c := range cs {
		found = found || strings.Contains(c.Message, "cannot be told from no limiter")
	}
	if !found {
		t.Errorf("no check says the model cannot be told from no limiter: %+v", cs)
	}
}
