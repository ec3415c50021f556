package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/suite"
)

// suiteFixture is testdata/suite.json: a real `ratelimit check --out` of
// two entries against serve (a token bucket of 10 at 5/s): hello passes,
// over-admit (serve --break over-admit) fails its probe's policy check
// and its load's count. Copied in by hand.
func suiteFixture(t *testing.T) suite.Result {
	t.Helper()
	d := readFixture(t, "suite.json")
	r, ok := d.Value.(suite.Result)
	if !ok {
		t.Fatalf("suite.json decodes as %T", d.Value)
	}
	return r
}

// suitePassing is the fixture cut to its passing entry.
func suitePassing(t *testing.T) suite.Result {
	r := suiteFixture(t)
	r.Entries, r.Checks, r.Verdict = r.Entries[:1], r.Checks[:1], doc.VerdictPass
	return r
}

// TestSuiteJUnit: one testsuite per entry, a testcase per check of its
// probe and load; only the broken entry's suite has failures, and they
// are the checks that failed in its step documents.
func TestSuiteJUnit(t *testing.T) {
	r := suiteFixture(t)
	var b bytes.Buffer
	if err := Render(&b, "junit", r, Options{}); err != nil {
		t.Fatal(err)
	}
	var x xTestsuites
	if err := xml.Unmarshal(b.Bytes(), &x); err != nil {
		t.Fatal(err)
	}
	if len(x.Suites) != len(r.Entries) {
		t.Fatalf("%d testsuites for %d entries", len(x.Suites), len(r.Entries))
	}
	var raw struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for i, e := range r.Entries {
		s := raw.Suites[i]
		want := 0
		for _, c := range e.Checks {
			if c.Counts() && !c.Pass {
				want++
			}
		}
		if s.Name != "ratelimit check: "+e.Name || s.Tests != len(e.Checks) || s.Failures != want {
			t.Errorf("suite %d: %s, %d tests, %d failures; want %s, %d, %d", i, s.Name, s.Tests, s.Failures, e.Name, len(e.Checks), want)
		}
	}
	if raw.Suites[0].Failures != 0 || raw.Suites[1].Failures != 2 {
		t.Errorf("failures per suite %d, %d; want 0 for hello and 2 (probe/policy, load/expect) for over-admit", raw.Suites[0].Failures, raw.Suites[1].Failures)
	}
	gh := bytes.Buffer{}
	if err := Render(&gh, "github", r, Options{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(gh.String(), "::error "); n != 2 || !strings.Contains(gh.String(), "title=check%3A over-admit%3A load/expect") {
		t.Errorf("github: %d errors, want 2 titled with the entry:\n%s", n, gh.String())
	}
}

// TestSuiteValidate: a suite document whose verdicts disagree, or whose
// step holds another kind's document, is refused on read.
func TestSuiteValidate(t *testing.T) {
	r := suiteFixture(t)
	tamper := []struct {
		name string
		edit func(*suite.Result)
		want string
	}{
		{"run passes with a failed entry", func(r *suite.Result) { r.Verdict = doc.VerdictPass }, "disagrees with the entries"},
		{"entry passed but failed", func(r *suite.Result) { r.Entries[1].Passed = true }, "disagrees with verdict"},
		{"check disagrees", func(r *suite.Result) { r.Checks[0].Pass = false }, "disagrees with entries[0]"},
		{"load document in the probe step", func(r *suite.Result) {
			r.Entries[0].Steps[0].Document = r.Entries[0].Steps[1].Document
		}, "the probe step writes probe"},
		{"a step that passed without its document", func(r *suite.Result) { r.Entries[0].Steps[0].Document = nil }, "without the step's document"},
	}
	for _, tt := range tamper {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var c suite.Result
			if err := json.Unmarshal(data, &c); err != nil {
				t.Fatal(err)
			}
			tt.edit(&c)
			data, _ = json.Marshal(c)
			if _, err := Decode(data); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode = %v, want an error with %q", err, tt.want)
			}
		})
	}
}
