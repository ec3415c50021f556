package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// The fault windows of a load run (load --fault): one table of windows and
// one line per fault, the same in text, Markdown and HTML, and the fault
// windows marked on the timeline.

// loadFaultTable has one row per window: its span, the counts, the model
// and the latency from the due time.
func loadFaultTable(fr *judge.FaultReport) table {
	t := table{headers: []string{"window", "from", "to", "requests", "admitted", "model", "extra", "refused", "5xx", "errors", "p50", "p99", "max"},
		right: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	for _, w := range fr.Windows {
		model, extra := "-", "-"
		if fr.Model != "" {
			model = strconv.FormatInt(w.ModelAllowed, 10)
			extra = fmt.Sprintf("%+d ±%d", w.Extra, w.Tolerance)
		}
		t.rows = append(t.rows, []cell{
			{text: w.Name, kind: cellCode}, {text: msText(w.StartMs)}, {text: msText(w.EndMs)},
			{text: strconv.FormatInt(w.Requests, 10)}, {text: strconv.FormatInt(w.Admitted, 10)},
			{text: model}, {text: extra}, {text: strconv.FormatInt(w.Limited, 10)},
			{text: strconv.FormatInt(w.ServerErrors, 10)}, {text: strconv.FormatInt(w.Errors+w.OtherFailed, 10)},
			{text: Latency(w.P50Ms)}, {text: Latency(w.P99Ms)}, {text: Latency(w.MaxMs)},
		})
	}
	return t
}

// loadFaultScope says where the faults went and against what they are
// judged.
func loadFaultScope(fr *judge.FaultReport) string {
	model := "no model (--expect auto found no RateLimit-Policy): fail-open cannot be told apart"
	if fr.Model != "" {
		model = "judged against " + fr.Model
	}
	s := fmt.Sprintf("faults on %s; %s; --during-fault %s", fr.Server, model, fr.During)
	if fr.RecoverWithinMs > 0 {
		s += "; --recover-within " + msText(fr.RecoverWithinMs)
	}
	return s + fmt.Sprintf("; baseline p99 %s from due", Latency(fr.BaselineP99Ms))
}

// loadFaultResults is one row per fault: its result (the fault and its
// recovery held, or not), what happened and the detail.
func loadFaultResults(fr *judge.FaultReport) table {
	t := table{headers: []string{"result", "fault"}}
	for _, f := range fr.Faults {
		what := f.Line
		if f.Detail != "" {
			what += "; " + f.Detail
		}
		t.rows = append(t.rows, []cell{verdictCell(f.Pass && f.RecoverPass, ""), textCell(what)})
	}
	return t
}

func loadFaultText(b *strings.Builder, fr *judge.FaultReport, st Styles) {
	b.WriteString("\n" + st.Header.Render("faults") + "\n")
	b.WriteString(st.Dim.Render(Printable(loadFaultScope(fr))) + "\n")
	b.WriteString(loadFaultTable(fr).text(st))
	b.WriteString(loadFaultResults(fr).text(st))
}

func loadFaultMarkdown(b *strings.Builder, fr *judge.FaultReport) {
	b.WriteString("#### Faults\n\n" + md(loadFaultScope(fr)) + "\n\n")
	loadFaultTable(fr).markdown(b)
	loadFaultResults(fr).markdown(b)
}

func loadFaultHTML(b *strings.Builder, fr *judge.FaultReport) {
	b.WriteString("<h3>Faults</h3>\n")
	fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(loadFaultScope(fr)))
	loadFaultTable(fr).html(b)
	loadFaultResults(fr).html(b)
}

// loadFaultShades are the fault windows on the timeline's bars (secs, as
// loadSeconds grouped them).
func loadFaultShades(fr *judge.FaultReport, secs []loadSecond) []shade {
	if fr == nil || len(secs) == 0 {
		return nil
	}
	// pos maps seconds of the run to bar slots
	pos := func(s float64) float64 {
		for i, sc := range secs {
			from, to := float64(sc.from), float64(sc.to+1)
			if s < to {
				return float64(i) + max(s-from, 0)/(to-from)
			}
		}
		return float64(len(secs))
	}
	var out []shade
	for _, w := range fr.Windows {
		if w.Phase != "during" || w.Fault < 0 || w.Fault >= len(fr.Faults) {
			continue
		}
		f := fr.Faults[w.Fault]
		out = append(out, shade{from: pos(w.StartMs / 1000), to: pos(w.EndMs / 1000), label: f.Spec,
			title: fmt.Sprintf("%s: %s", w.Name, f.Line)})
	}
	return out
}

// loadFaultMarks returns, for a run with faults, what marks the timeline's
// seconds [from, to): the specs of the faults in force in them; nil
// without faults.
func loadFaultMarks(res *tally.Result) func(from, to float64) string {
	fr := res.Faults
	if fr == nil || len(fr.Faults) == 0 {
		return nil
	}
	return func(from, to float64) string {
		var in []string
		for _, f := range fr.Faults {
			if f.Behaviour == judge.NotInjected {
				continue
			}
			// a fault of one moment marks the second it happened in
			if f.StartMs/1000 < to && (f.EndMs/1000 > from || f.EndMs == f.StartMs && f.StartMs/1000 >= from) {
				in = append(in, f.Spec)
			}
		}
		return strings.Join(in, ", ")
	}
}
