package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/tally"
)

// renderEach draws a document as text, Markdown and its HTML page.
func renderEach(t *testing.T, v any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := Render(&b, f, v, Options{}); err != nil {
			t.Fatal(err)
		}
		out[f] = b.String()
	}
	var page bytes.Buffer
	if err := HTML(&page, []Document{{Value: v}}, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	out["html"] = strings.ReplaceAll(page.String(), "&#39;", "'")
	return out
}

// loadTargetOnlySlow is loadSlow without the generator's own lateness:
// every drop is a VU busy waiting on a target whose p99 (560 ms) at 20/s
// needs 11 VUs where --max-vus gave 2.
func loadTargetOnlySlow() *tally.Result {
	res := loadSlow()
	res.Lateness = tally.Latency{Count: 8, Min: 0.02, Mean: 0.1, P50: 0.1, P90: 0.2, P95: 0.3, P99: 0.3, Max: 0.4}
	res.Generator.Reasons = res.Generator.Reasons[:1]
	res.Generator.Causes = res.Generator.Causes[:1]
	return res
}

// TestLoadAttributionAgrees (issue 25 item 12): text, Markdown and HTML
// name the same cause of dropped iterations: the target when every VU was
// busy waiting on a slow target, the generator when it fell behind on its
// own (k6's drops with a 1.7 ms p99), both when both happened; and a
// failed run's headline names the failed checks before any count.
func TestLoadAttributionAgrees(t *testing.T) {
	tests := []struct {
		name      string
		res       *tally.Result
		want, not []string
	}{
		{"target slow", loadTargetOnlySlow(),
			[]string{"the target is slow: every VU was busy waiting on it"},
			[]string{"the generator fell behind", "this is the load generator's limit"}},
		{"target slow and generator late", loadSlow(),
			[]string{"the target is slow (every VU was busy waiting on it) and the generator fell behind"},
			[]string{"this is the load generator's limit"}},
		{"generator", fixtureLoadK6(t, "token-bucket:burst=10,rate=5/s"),
			[]string{"the generator fell behind (the load generator's limit, not the target's)"},
			[]string{"the target is slow"}},
	}
	for _, tt := range tests {
		for f, out := range renderEach(t, tt.res) {
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s, %s lacks %q:\n%s", tt.name, f, w, out)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out, w) {
					t.Errorf("%s, %s says %q:\n%s", tt.name, f, w, out)
				}
			}
		}
	}

	// the verdict first: the failed checks before the dropped iterations
	out := renderEach(t, loadSlow())
	first := "threshold failed<=1%: 25.00% (2 of 8 completed)"
	if !strings.Contains(out["text"], "\nFAIL: "+first) {
		t.Errorf("text's verdict line does not start with the failed checks:\n%s", out["text"])
	}
	escaped := map[string]string{"text": first, "markdown": strings.Replace(first, "<", `\<`, 1)}
	for f, w := range escaped {
		o := out[f]
		fi, di := strings.Index(o, w), strings.Index(o, "iterations DROPPED")
		if fi < 0 || di < 0 || fi > di {
			t.Errorf("%s names the dropped iterations (at %d) before the failed check (at %d)", f, di, fi)
		}
	}
	if h := htmlHeadline(t, out["html"]); !strings.HasPrefix(h, strings.Replace(first, "<", "&lt;", 1)) {
		t.Errorf("html headline %q does not start with the failed check", h)
	}
}

// htmlHeadline is the text of a page's first verdict paragraph.
func htmlHeadline(t *testing.T, page string) string {
	t.Helper()
	const open = `<p class="verdict`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("page has no verdict")
	}
	p := page[i:]
	p = p[strings.Index(p, "</span> ")+len("</span> "):]
	return p[:strings.Index(p, "</p>")]
}

// TestLoadFaultHeadlineAgrees (issue 25 item 13): a fault run whose
// windows held passes, and its HTML headline never claims the admitted
// count fits when the body says it does not (a warning under --fault).
func TestLoadFaultHeadlineAgrees(t *testing.T) {
	for _, fits := range []bool{false, true} {
		res := loadFault("open")
		res.Expect.Pass = fits
		res.Checks = nil
		out := renderEach(t, res)
		h := htmlHeadline(t, out["html"])
		claims := strings.Contains(h, "fits the expectation")
		if claims != fits {
			t.Errorf("count fits %v: html headline %q claims it fits: %v", fits, h, claims)
		}
		if !fits && !strings.Contains(h, "only a warning under --fault") {
			t.Errorf("html headline %q does not say the count is only a warning", h)
		}
		body := ": fail"
		if fits {
			body = ": pass"
		}
		for f, o := range out {
			if !strings.Contains(o, "allowed 194 of 600; expected 159 (RateLimit-Policy q=10;w=2 read as token bucket 10 + 5/s over 29.95 s) ±2"+body) {
				t.Errorf("count fits %v: %s lacks the count's verdict%s", fits, f, body)
			}
		}
	}
}

// TestRaceExpectedAtomicAgrees (issue 25 item 11): every format heads the
// column "expected atomic", never a bare "atomic".
func TestRaceExpectedAtomicAgrees(t *testing.T) {
	for f, out := range renderEach(t, racePassResult()) {
		if !strings.Contains(out, "expected atomic") {
			t.Errorf("%s lacks the column expected atomic", f)
		}
		for _, bare := range []string{"strategy  atomic", "| atomic |", "<th>atomic</th>"} {
			if strings.Contains(out, bare) {
				t.Errorf("%s heads a column %q", f, bare)
			}
		}
	}
}
