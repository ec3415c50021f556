package report

import (
	"fmt"
	"github.com/ratelimit-dev/ratelimit/doc"
	"sort"
	"strings"

	"github.com/ratelimit-dev/ratelimit/tally"
)

// loadClass sorts a status key of the timeline into admitted (2xx, 3xx),
// limited (429) or other (any other status, and transport errors).
func loadClass(status string) int {
	switch {
	case status == "429":
		return 1
	case len(status) == 3 && (status[0] == '2' || status[0] == '3'):
		return 0
	}
	return 2
}

// loadSecond is one timeline entry split into the three classes.
type loadSecond struct {
	from, to                 int // seconds, inclusive
	admitted, limited, other int64
}

// loadSeconds sums the timeline by class, grouping consecutive seconds so
// that at most maxRows entries remain.
func loadSeconds(res *tally.Result, maxRows int) []loadSecond {
	n := len(res.Timeline)
	if n == 0 {
		return nil
	}
	step := (n + maxRows - 1) / maxRows
	var out []loadSecond
	for i := 0; i < n; i += step {
		end := min(i+step, n)
		s := loadSecond{from: res.Timeline[i].Second, to: res.Timeline[end-1].Second}
		for _, sec := range res.Timeline[i:end] {
			for k, v := range sec.Status {
				switch loadClass(k) {
				case 0:
					s.admitted += v
				case 1:
					s.limited += v
				default:
					s.other += v
				}
			}
		}
		out = append(out, s)
	}
	return out
}

func loadMDSorted(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func loadMarkdown(b *strings.Builder, res *tally.Result) {
	verdict := mdVerdict(res.Verdict == "pass")
	switch res.Verdict {
	case "pass", "fail":
	case doc.VerdictUndecided:
		verdict = "**UNDECIDED**"
	default:
		verdict = "**INTERRUPTED** (no verdict)"
	}
	title := "ratelimit load"
	if res.Recorded() {
		title += " (recorded by " + md(res.Source) + ")"
	}
	fmt.Fprintf(b, "### %s: %s\n\n", title, verdict)
	// the verdict first (what failed), then the counts
	if res.Verdict == "fail" {
		b.WriteString("Failed: " + md(loadFailure(res)) + "\n\n")
	}
	if res.Verdict == doc.VerdictUndecided {
		b.WriteString("Undecided: " + md(undecidedWhy(res)) + "\n\n")
	}
	counts, warn := loadSummary(res)
	b.WriteString(md(counts))
	if warn != "" {
		b.WriteString("; **" + md(warn) + "**")
	}
	for _, n := range res.Notes {
		b.WriteString("; note: " + md(n))
	}
	b.WriteString("\n\n")
	fmt.Fprintf(b, "target: %s %s; %s for %s, %d planned, %s\n\n",
		md(res.Method), mdCode(res.Target), md(res.Rate), secs(res.DurationS), res.Planned, md(loadRunLabel(res)))
	if line := loadSegmentLine(res); line != "" {
		b.WriteString(md(line) + "\n\n")
	}
	if res.Interrupted {
		fmt.Fprintf(b, "Interrupted after %s: the counts cover what ran; %d iterations never fell due.\n\n", secs(res.ElapsedS), res.NotStarted)
	}
	if res.Aborted {
		fmt.Fprintf(b, "**Aborted** (`--abort-on-fail`): %s; %d iterations never fell due.\n\n", md(res.AbortReason), res.NotStarted)
	}
	table{headers: []string{"metric", "value"}, rows: loadMetrics(res)}.markdown(b)
	loadLatencies(res).markdown(b)

	if tl := loadTimeline(res); len(tl.rows) > 0 {
		b.WriteString("<details><summary>Timeline (by the second of the send)</summary>\n\n")
		tl.markdown(b)
		b.WriteString("</details>\n\n")
	}

	if why := res.Headers.NotRecorded; why != "" {
		b.WriteString(md(loadHeadersSkipped(why)) + "\n\n")
	} else {
		loadHeaderFields(res).markdown(b)
		for _, n := range loadHeaderNotes(res) {
			b.WriteString("- " + n.forMarkdown() + "\n")
		}
		if len(loadHeaderNotes(res)) > 0 {
			b.WriteString("\n")
		}
		loadHeaderChecks(res).markdown(b)
	}

	if len(res.Thresholds) > 0 {
		loadThresholds(res).markdown(b)
		if loadHasLatencyCheck(res) {
			b.WriteString("Latency thresholds are judged on the latency from the due time.\n\n")
		}
	}

	if j := res.Expect; j != nil {
		under := ""
		if res.Faults != nil {
			under = " (over the whole run: a warning under `--fault`)"
		}
		word := mdVerdict(j.Pass)
		if res.Faults != nil && !j.Pass {
			word = "**WARN**"
		}
		fmt.Fprintf(b, "Verdict on the admitted count%s: %s %s\n\n", under, word, md(j.Line()))
		if j.Description != "" {
			b.WriteString(md(j.Tol.Explain(j.Tolerance)) + "\n\n")
		}
		if len(j.Readings) > 0 {
			loadReadings(j).markdown(b)
		}
		if j.Note != "" {
			b.WriteString("note: " + md(j.Note) + "\n\n")
		}
	}
	if res.Faults != nil {
		loadFaultMarkdown(b, res.Faults)
	}
	head, reasons := loadGenerator(res)
	if len(reasons) > 0 {
		b.WriteString("**" + md(head) + "**:\n\n")
		for _, r := range reasons {
			b.WriteString("- " + md(r) + "\n")
		}
	} else {
		b.WriteString(md(head) + "\n")
	}
}
