package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/eval/evaldoc"
)

func evalHTML(b *strings.Builder, res evaldoc.Result) {
	fmt.Fprintf(b, "<p><strong>%s</strong></p>\n", esc(evalTitle(res)))
	htmlServer(b, serverOf(res.Header).String())
	via := "EVALSHA (EVAL on NOSCRIPT)"
	if res.Script.Via == "fcall" {
		via = "FCALL " + res.Script.Function + " (FUNCTION LOAD)"
	}
	fmt.Fprintf(b, "<p class=\"muted\">script %s sha1 %s via %s</p>\n", htmlCode(res.Script.Name), htmlCode(short(res.Script.SHA1)), esc(via))
	fmt.Fprintf(b, "<p class=\"verdict\">%s</p>\n", esc(evalSummary(res)))

	if res.ReplyShape == "limiter" && len(res.Calls) > 0 {
		var rem []float64
		var dots, labels []string
		for _, c := range res.Calls {
			v := 0.0
			if c.Remaining != nil {
				v = float64(*c.Remaining)
			}
			rem = append(rem, v)
			labels = append(labels, "call "+strconv.Itoa(c.N))
			if c.Allowed != nil && *c.Allowed {
				dots = append(dots, "dot-allowed")
			} else {
				dots = append(dots, "dot-refused")
			}
		}
		b.WriteString("<h3>Remaining over calls</h3>\n")
		b.WriteString(linePlot{
			title: "remaining after each call", yLabel: "remaining", xLabels: labels, height: 240,
			series: []lineSeries{{name: "remaining (dots: green allowed, red refused)", class: "line-remaining", values: rem, dots: dots}},
		}.svg())
	}

	b.WriteString("<h3>Calls</h3>\n")
	evalCalls(res).html(b)
	if c := res.NoTTL; c != nil && len(c.Keys) > 0 {
		line, pass := noTTLHeadline(c)
		htmlVerdict(b, pass, line+"; "+noTTLFix)
		noTTLKeys(c).html(b)
		fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(noTTLChecked(c)))
	}
	b.WriteString("<h3>Checks</h3>\n")
	checkTable(res.CheckList()).html(b)
	htmlVerdict(b, res.Pass(), evalVerdictText(res))
}

// evalVerdictText says why a run passed or failed, in one line.
func evalVerdictText(res evaldoc.Result) string {
	if f := res.Failures(); len(f) > 0 {
		return strings.Join(f, "; ") + " (" + res.Scope() + ")"
	}
	return "every check passed: " + res.Scope()
}

func simulateHTML(b *strings.Builder, res evaldoc.SimResult) {
	fmt.Fprintf(b, "<p><strong>%s</strong></p>\n", esc(fmt.Sprintf("simulate %s (%s, cost %d) under %s arrivals for %s",
		res.Algo, simulateDesc(res), res.Params.Cost, res.Rate, evalSpan(time.Duration(res.ForMs)*time.Millisecond))))
	htmlServer(b, serverOf(res.Header).String())
	share := 0.0
	if res.Arrivals > 0 {
		share = float64(res.Admitted) / float64(res.Arrivals)
	}
	fmt.Fprintf(b, "<p>%s</p>\n", esc(fmt.Sprintf("%d arrivals: %d admitted (%s), %d refused", res.Arrivals, res.Admitted, pct(share), res.Refused)))
	if res.Agrees {
		htmlVerdict(b, true, fmt.Sprintf("the Go model admits %d with the same decisions as the script", res.Model))
	} else {
		htmlVerdict(b, false, fmt.Sprintf("the Go model admits %d with different decisions from the script", res.Model))
	}
	// long simulations are grouped into at most htmlMaxBars bars
	g := barGroup{}
	step := max(1, (len(res.PerSecond)+htmlMaxBars-1)/htmlMaxBars)
	for i := 0; i < len(res.PerSecond); i += step {
		end := min(i+step, len(res.PerSecond))
		var n int64
		for _, v := range res.PerSecond[i:end] {
			n += int64(v)
		}
		title := fmt.Sprintf("second %d: %d admitted", i, n)
		if end-i > 1 {
			title = fmt.Sprintf("seconds %d-%d (per second): %d admitted in all", i, end-1, n)
		}
		g.bars = append(g.bars, bar{label: strconv.Itoa(i), title: title, segs: []seg{{float64(n) / float64(end-i), "admitted"}}})
	}
	b.WriteString("<h3>Admitted per virtual second</h3>\n")
	b.WriteString(barChart{title: "admitted per virtual second", yLabel: "admitted", groups: []barGroup{g}, height: 240, ints: true}.svg())
}

func scriptsHTML(b *strings.Builder, c evaldoc.Catalog) {
	scriptsTable(c).html(b)
}
