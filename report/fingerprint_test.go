package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/probe"
)

// fingerprintFixture is testdata/fingerprint.json (a real run of probe
// --fingerprint against serve's token bucket, copied in by hand).
func fingerprintFixture(t *testing.T) probe.Fingerprint {
	t.Helper()
	d := readFixture(t, "fingerprint.json")
	f, ok := d.Value.(probe.Fingerprint)
	if !ok {
		t.Fatalf("fingerprint.json decodes as %T", d.Value)
	}
	return f
}

// fingerprintNoFit is the fixture as a target no model fits would make it.
func fingerprintNoFit(t *testing.T) probe.Fingerprint {
	f := fingerprintFixture(t)
	f.NearMisses = []probe.Candidate{{Model: "fixed-window:limit=10,window=2s", Description: "fixed window 10 per 2s", Mismatches: 3,
		RuledOutBy: "phase after-refill (identity A), 12 requests at once at +0.46s: the target admitted 0; the model would admit 3"}}
	f.Fits, f.Equivalent, f.Verdict = []probe.Candidate{}, "", "fail"
	f.Checks = []doc.Check{{ID: probe.CheckFingerprint, Message: "none of 41 models fits every request"}}
	return f
}

// TestFingerprintFormatsAgree: text, JSON, Markdown, JUnit, GitHub and
// HTML say the same pass or fail, the one the check makes.
func TestFingerprintFormatsAgree(t *testing.T) {
	for _, tt := range []struct {
		name string
		doc  probe.Fingerprint
		pass bool
	}{{"fits", fingerprintFixture(t), true}, {"no fit", fingerprintNoFit(t), false}} {
		t.Run(tt.name, func(t *testing.T) {
			render := func(f string) string {
				t.Helper()
				var b bytes.Buffer
				if err := Render(&b, f, tt.doc, Options{}); err != nil {
					t.Fatal(err)
				}
				return b.String()
			}
			for _, f := range []string{"text", "markdown", "github"} {
				if strings.Contains(render(f), "FAIL") == tt.pass {
					t.Errorf("%s says FAIL: %v, want %v", f, !tt.pass, !tt.pass)
				}
			}
			var j struct {
				Checks  []doc.Check `json:"checks"`
				Verdict string      `json:"verdict"`
			}
			if err := json.Unmarshal([]byte(render("json")), &j); err != nil {
				t.Fatal(err)
			}
			if doc.Pass(j.Checks) != tt.pass || (j.Verdict == "pass") != tt.pass {
				t.Errorf("json: checks %+v verdict %q, want pass %v", j.Checks, j.Verdict, tt.pass)
			}
			var x xTestsuites
			if err := xml.Unmarshal([]byte(render("junit")), &x); err != nil {
				t.Fatal(err)
			}
			if (x.Failures+x.Errors == 0) != tt.pass {
				t.Errorf("junit: %d failures, want pass %v", x.Failures, tt.pass)
			}
			var page bytes.Buffer
			if err := HTML(&page, []Document{{Value: tt.doc}}, HTMLOptions{}); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(page.String(), ">FAIL<") == tt.pass {
				t.Errorf("html shows FAIL: %v, want %v", !tt.pass, !tt.pass)
			}
		})
	}
}

// TestFingerprintValidate: a document whose fits miss requests, or whose
// verdict disagrees with its fits, is refused.
func TestFingerprintValidate(t *testing.T) {
	miss := fingerprintFixture(t)
	miss.Fits = append([]probe.Candidate(nil), miss.Fits...)
	miss.Fits[0].Mismatches = 2
	liar := fingerprintNoFit(t)
	liar.Verdict = "pass"
	over := fingerprintFixture(t)
	over.Phases = append([]probe.Phase(nil), over.Phases...)
	over.Phases[0].Admitted = over.Phases[0].Sent + 1
	for name, f := range map[string]probe.Fingerprint{"a fit that misses": miss, "pass without a fit": liar, "more admitted than sent": over} {
		data, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(data); err == nil {
			t.Errorf("%s: Decode accepted it", name)
		}
	}
	if err := validateFingerprint(fingerprintFixture(t)); err != nil {
		t.Errorf("the fixture: %v", err)
	}
}
