package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// TestFormatsAgree: for a passing and a failing run of every kind, text,
// JSON (its checks and verdict), Markdown, JUnit, GitHub annotations and
// the HTML page say the same pass or fail, the one the checks make.
func TestFormatsAgree(t *testing.T) {
	passingKeyslot, err := cluster.Run(context.Background(), cluster.Options{Keys: []string{"rl:{u}:a", "rl:{u}:b"}, SameSlot: true})
	if err != nil {
		t.Fatal(err)
	}
	disagreeing := simulateResult()
	disagreeing.Agrees = false
	interrupted := loadPass()
	interrupted.Interrupted, interrupted.Verdict, interrupted.Expect = true, "interrupted", nil
	probePass := fixtureProbe()
	probePass.Checks[6] = probePass.Checks[4] // the cacheable-429 failure replaced by a passing check
	probePass.Verdict = "pass"
	warned := loadPass() // the generator fell behind: a warning, the run still passes
	warned.Generator.FellBehind, warned.Generator.Reasons = true, []string{"scheduling lateness p99 12.0 ms is above 10ms"}
	failoverJudged := failoverWith(new(int64(10))) // --max-extra 10: every trial within
	waitDropped := fixtureFailover()               // WAIT timed out and most decisions were dropped: still a pass
	for i := range waitDropped.Variants[1].Trials {
		tr := &waitDropped.Variants[1].Trials[i]
		tr.Dropped, tr.NotDurable = 2*tr.Decisions, 5
	}
	faultCountFits := loadFault("open") // the windows held and the whole run's count fits
	faultCountFits.Expect.Pass = true
	tests := []struct {
		name string
		doc  any
		pass bool
	}{
		{"eval pass", tokenBucketResult(), true},
		{"eval fail", leakyScriptResult(), false},
		{"simulate pass", simulateResult(), true},
		{"simulate fail", disagreeing, false},
		{"scripts", eval.NewCatalog(limiter.Scripts(), false), true},
		{"race pass", racePassResult(), true},
		{"race fail", raceFailResult(), false},
		{"load pass", loadPass(), true},
		{"load pass with a warning", warned, true},
		{"load fail", fixtureLoad(t), false},
		{"load interrupted", interrupted, false},
		{"load with a fault, as allowed", loadFault("open"), true},
		{"load with a fault, as allowed, the count fits", faultCountFits, true},
		{"load against a slow target", loadTargetOnlySlow(), false},
		{"load against a slow target, the generator late too", loadSlow(), false},
		{"load merged from all segments", loadMerged(nil), true},
		{"load merged, a segment missing", loadMerged([]int{3}), false},
		{"load with a fault, not allowed", loadFault("closed"), false},
		{"load recorded by k6, pass", fixtureLoadK6(t, "token-bucket:burst=10,rate=5/s"), true},
		{"load recorded by k6, judged against another model", fixtureLoadK6(t, "token-bucket:burst=4,rate=1/s"), false},
		{"keyslot pass", passingKeyslot, true},
		{"keyslot fail", ksOfflineResult(t), false},
		{"probe pass with a warning", probePass, true},
		{"probe fail", fixtureProbe(), false},
		{"failover pass, report only", fixtureFailover(), true},
		{"failover pass, judged", failoverJudged, true},
		{"failover fail", fixtureFailoverFail(), false},
		{"failover, WAIT timed out and dropped most decisions", waitDropped, true},
		{"suite pass", suitePassing(t), true},
		{"suite fail", suiteFixture(t), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			render := func(f string) string {
				t.Helper()
				var b bytes.Buffer
				if err := Render(&b, f, tt.doc, Options{}); err != nil {
					t.Fatal(err)
				}
				return b.String()
			}
			checks, err := Checks(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Pass(checks) != tt.pass {
				t.Fatalf("checks %+v pass = %v, want %v", checks, doc.Pass(checks), tt.pass)
			}
			// a run that did not pass says FAIL, or INTERRUPTED when it has no verdict
			failed := func(out, fail, interrupted string) bool {
				return strings.Contains(out, fail) || strings.Contains(out, interrupted)
			}
			for _, f := range []string{"text", "markdown"} {
				if out := render(f); failed(out, "FAIL", "INTERRUPTED") == tt.pass {
					t.Errorf("%s says FAIL or INTERRUPTED: %v, want %v:\n%s", f, tt.pass, !tt.pass, out)
				}
			}
			var j struct {
				Checks  []doc.Check `json:"checks"`
				Verdict *string     `json:"verdict"`
			}
			if err := json.Unmarshal([]byte(render("json")), &j); err != nil {
				t.Fatal(err)
			}
			if j.Checks == nil || doc.Pass(j.Checks) != tt.pass {
				t.Errorf("json checks %+v, want pass %v", j.Checks, tt.pass)
			}
			if j.Verdict != nil && (*j.Verdict == "pass") != tt.pass {
				t.Errorf("json verdict %q, want pass %v", *j.Verdict, tt.pass)
			}
			var x xTestsuites
			if err := xml.Unmarshal([]byte(render("junit")), &x); err != nil {
				t.Fatal(err)
			}
			if (x.Failures+x.Errors == 0) != tt.pass {
				t.Errorf("junit: %d failures, %d errors; want pass %v", x.Failures, x.Errors, tt.pass)
			}
			gh := render("github")
			last := gh[strings.LastIndex(strings.TrimSuffix(gh, "\n"), "\n")+1:]
			if strings.Contains(gh, "::error") == tt.pass || strings.Contains(last, "FAIL") == tt.pass {
				t.Errorf("github annotations disagree with pass %v:\n%s", tt.pass, gh)
			}
			var page bytes.Buffer
			if err := HTML(&page, []Document{{Value: tt.doc}}, HTMLOptions{}); err != nil {
				t.Fatal(err)
			}
			if failed(page.String(), ">FAIL<", ">INTERRUPTED<") == tt.pass {
				t.Errorf("html shows FAIL or INTERRUPTED: %v, want %v", tt.pass, !tt.pass)
			}
		})
	}
}
