package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// LoadJUnit renders a load result as JUnit XML: one testcase per
// threshold, one for the generator keeping up, one per header check, one
// for the verdict on the admitted count (with --expect) and one for the
// run's verdict.
func LoadJUnit(w io.Writer, res *tally.Result) error {
	return writeJUnit(w, []junitSuite{loadSuite(res)})
}

// loadSuite draws the run's checks: the thresholds, the generator, the
// header rules and the expectation get a testcase each; whether a limiter
// was seen and whether the run completed decide the last one, the run's
// verdict (an interrupted run is an error: it has none).
func loadSuite(res *tally.Result) junitSuite {
	s := junitSuite{Name: "ratelimit load", timeS: res.ElapsedS}
	if res.Recorded() {
		s.Name += " (recorded by " + res.Source + ")"
	}
	if !res.StartedAt.IsZero() {
		s.Timestamp = res.StartedAt.UTC().Format(time.RFC3339)
	}
	checks := res.CheckList()
	byID := map[string]doc.Check{}
	for _, c := range checks {
		byID[c.ID] = c
	}
	for _, th := range res.Thresholds {
		detail := fmt.Sprintf("%s: %s (limit %s %s)\n", th.Name, th.Actual, cmpOr(th.Op, "<="), th.Limit)
		if loadHasLatencyCheck(&tally.Result{Thresholds: []judge.ThresholdCheck{th}}) {
			detail += "judged on the latency from the due time\n"
		}
		ch, ok := byID[tally.CheckThresholdPfx+th.Expr()]
		if !ok {
			ch = doc.Check{ID: tally.CheckThresholdPfx + th.Expr(), Pass: th.Pass, Message: loadCheckMessage(th)}
		}
		c := checkCase("load.thresholds", loadCheckName(th), ch, "threshold", detail)
		if ch.Pass {
			c.SystemOut = detail
		}
		s.Cases = append(s.Cases, c)
	}

	if ch, ok := byID[tally.CheckGenerator]; ok {
		detail := fmt.Sprintf("%d sent of %d planned, nothing dropped, lateness p99 %s ms\n", res.Sent, res.Planned, loadNum(res.Lateness.P99))
		if res.Recorded() {
			detail = ch.Message + "\n"
		}
		if !ch.Pass {
			detail = strings.Join(res.Generator.Reasons, "\n") + "\n"
		}
		c := checkCase("load.generator", "generator kept up", ch, "generator", detail)
		if ch.Pass {
			c.SystemOut = detail
		}
		s.Cases = append(s.Cases, c)
	}

	for _, ch := range checks {
		name, ok := loadHeaderNames[ch.ID]
		if !ok {
			continue
		}
		c := checkCase("load.headers", name, ch, "header", loadHeaderDetail(res, ch.ID)+"\n")
		if ch.Pass && res.Headers.NotRecorded == "" {
			c.SystemOut = loadHeaderDetail(res, ch.ID) + "\n"
		}
		s.Cases = append(s.Cases, c)
	}

	if ch, ok := byID[tally.CheckSegments]; ok {
		detail := ch.Message + "\n" + loadSegmentLine(res) + "\n"
		c := checkCase("load.segments", "segments", ch, "segments", detail)
		if ch.Pass {
			c.SystemOut = detail
		}
		s.Cases = append(s.Cases, c)
	}

	for _, ch := range checks {
		if !strings.HasPrefix(ch.ID, judge.CheckFaultPfx) && !strings.HasPrefix(ch.ID, judge.CheckRecoverPfx) {
			continue
		}
		detail := ch.Message + "\n"
		if fr := res.Faults; fr != nil && ch.ID == judge.CheckFaultBaseline {
			detail += loadFaultScope(fr) + "\n"
		}
		c := checkCase("load.faults", ch.ID, ch, "fault", detail)
		if ch.Pass {
			c.SystemOut = detail
		}
		s.Cases = append(s.Cases, c)
	}

	if j := res.Expect; j != nil {
		name := "admitted count"
		if j.Description != "" {
			name += ": " + j.Description
		}
		var d strings.Builder
		d.WriteString(j.Line() + "\n")
		for _, r := range j.Readings {
			fit := "does not fit"
			if r.Fits {
				fit = "fits"
			}
			fmt.Fprintf(&d, "reading %s expects %d ±%d: %s\n", r.Description, r.Expected, r.Tolerance, fit)
		}
		if j.Note != "" {
			d.WriteString(j.Note + "\n")
		}
		ch, ok := byID[tally.CheckExpect]
		if !ok {
			ch = doc.Check{ID: tally.CheckExpect, Pass: j.Pass, Message: j.Line()}
		}
		c := checkCase("load.verdict", name, ch, "verdict", d.String())
		if ch.Pass {
			c.SystemOut = d.String()
		}
		s.Cases = append(s.Cases, c)
	}

	s.Cases = append(s.Cases, loadVerdictCase(res, byID))
	return s
}

// loadVerdictCase is the run's verdict: an error when the run was
// interrupted, a failure when a check that has no testcase of its own
// failed (no limiter seen, with --expect), else passed with the counts (a
// failed verdict then points at the testcases that failed above).
func loadVerdictCase(res *tally.Result, byID map[string]doc.Check) junitCase {
	v := newCase("load.verdict", "verdict", res.ElapsedS)
	if done, ok := byID[tally.CheckCompleted]; ok && !done.Pass {
		v.check = &done
		v.Error = &junitFailure{Type: "interrupted", Message: done.Message}
		return v
	}
	counts, warn := loadSummary(res)
	summary := counts + "\n"
	if warn != "" {
		summary += warn + "\n"
	}
	if seen, ok := byID[tally.CheckLimiterSeen]; ok && seen.Counts() && !seen.Pass {
		v.check = &seen
		if res.Aborted {
			summary += "aborted: " + res.AbortReason + "\n"
		}
		v.fail("verdict", seen.Message, seen.Message+"\n"+summary)
		return v
	}
	if res.Verdict == "fail" || res.Verdict == doc.VerdictUndecided {
		if res.Aborted {
			summary += "aborted: " + res.AbortReason + "\n"
		}
		v.SystemOut = "fail, from the failed testcases above: " + strings.Join(res.VerdictMessages, "; ") + "\n" + summary
		return v
	}
	v.SystemOut = summary
	for _, n := range res.Notes {
		v.SystemOut += "note: " + n + "\n"
	}
	return v
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
