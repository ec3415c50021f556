package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// allKinds is one document of every kind report reads.
func allKinds(t *testing.T) []Document {
	t.Helper()
	docs := []Document{}
	for _, name := range []string{"eval.json", "simulate.json", "race.json", "load.json", "keyslot.json", "probe.json", "failover.json", "fingerprint.json", "suite.json"} {
		docs = append(docs, readFixture(t, name))
	}
	docs = append(docs, Document{Kind: "scripts", Version: 1, Source: "scripts", Value: eval.NewCatalog(limiter.Scripts(), false)})
	return docs
}

// TestEveryKindEveryFormat renders a document of each kind in every -o
// format and as a page, and the whole mixed set as one JUnit report and
// one page: nothing is refused.
func TestEveryKindEveryFormat(t *testing.T) {
	docs := allKinds(t)
	seen := map[string]bool{}
	for _, d := range docs {
		seen[d.Kind] = true
		for _, f := range []string{"text", "json", "markdown", "junit", "github"} {
			var b bytes.Buffer
			if err := Render(&b, f, d, Options{}); err != nil {
				t.Errorf("Render(%s, %s): %v", f, d.Kind, err)
			} else if b.Len() == 0 {
				t.Errorf("Render(%s, %s) wrote nothing", f, d.Kind)
			}
		}
	}
	for _, k := range Kinds() {
		if !seen[k] {
			t.Errorf("kind %s is not covered by allKinds", k)
		}
	}
	vals := make([]any, len(docs))
	for i, d := range docs {
		vals[i] = d
	}
	var b bytes.Buffer
	if err := JUnit(&b, vals...); err != nil {
		t.Fatalf("JUnit of a mixed set: %v", err)
	}
	var x xTestsuites
	if err := xml.Unmarshal(b.Bytes(), &x); err != nil {
		t.Fatalf("mixed JUnit does not parse: %v", err)
	}
	// one suite per document, one per entry of a suite document
	want := len(docs) - 1 + len(suiteFixture(t).Entries)
	if len(x.Suites) != want {
		t.Errorf("mixed JUnit has %d suites, want %d", len(x.Suites), want)
	}
	b.Reset()
	if err := HTML(&b, docs, HTMLOptions{}); err != nil {
		t.Fatalf("HTML of a mixed set: %v", err)
	}
}

// TestEvalFormatsAgree: one eval run says the same pass/fail in text,
// JSON, Markdown, JUnit and GitHub annotations, failing (a key left
// without a TTL) and passing (--allow-no-ttl, the negative control).
func TestEvalFormatsAgree(t *testing.T) {
	failing := leakyScriptResult()
	allowed := leakyScriptResult()
	allowed.NoTTL.Allowed = true
	for _, tt := range []struct {
		name string
		res  eval.Result
		pass bool
	}{{"no ttl", failing, false}, {"allowed", allowed, true}} {
		t.Run(tt.name, func(t *testing.T) {
			render := func(f string) string {
				var b bytes.Buffer
				if err := Render(&b, f, tt.res, Options{}); err != nil {
					t.Fatal(err)
				}
				return b.String()
			}
			verdict := map[bool]string{true: "PASS", false: "FAIL"}[tt.pass]
			if txt := render("text"); !strings.Contains(txt, "verdict: "+verdict) {
				t.Errorf("text verdict is not %s:\n%s", verdict, txt)
			}
			if m := render("markdown"); !strings.HasPrefix(m, "### ratelimit eval: **"+verdict+"**") {
				t.Errorf("markdown heading is not %s:\n%s", verdict, m)
			}
			var doc struct {
				Checks []eval.Check `json:"checks"`
			}
			r := tt.res
			r.Checks = r.CheckList()
			var jb bytes.Buffer
			if err := JSON(&jb, r); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(jb.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			jsonPass := true
			for _, c := range doc.Checks {
				jsonPass = jsonPass && c.Pass
			}
			if len(doc.Checks) != 2 || jsonPass != tt.pass {
				t.Errorf("json checks %+v, want pass %v", doc.Checks, tt.pass)
			}
			var x xTestsuites
			if err := xml.Unmarshal([]byte(render("junit")), &x); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 0, false: 1}[tt.pass]; x.Failures != want || x.Tests != 2 {
				t.Errorf("junit: %d tests, %d failures; want 2 tests, %d failures", x.Tests, x.Failures, want)
			}
			gh := render("github")
			if strings.Contains(gh, "::error") == tt.pass || !strings.Contains(gh, "eval: "+verdict) {
				t.Errorf("github annotations disagree with %s:\n%s", verdict, gh)
			}
		})
	}
}

// TestScriptsJUnitGitHub pins the outputs of the kind without checks.
func TestScriptsJUnitGitHub(t *testing.T) {
	c := eval.NewCatalog(limiter.Scripts(), false)
	for _, f := range []string{"junit", "github"} {
		var b bytes.Buffer
		if err := Render(&b, f, c, Options{}); err != nil {
			t.Fatal(err)
		}
		golden(t, "report_scripts."+f+".golden", b.Bytes())
	}
}
