package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/eval/evaldoc"
)

func evalMarkdown(b *strings.Builder, res evaldoc.Result) {
	fmt.Fprintf(b, "### ratelimit eval: %s\n\n%s\n\n", mdVerdict(res.Pass()), md(evalTitle(res)))
	mdServer(b, serverOf(res.Header).String())
	via := "EVALSHA (EVAL on NOSCRIPT)"
	if res.Script.Via == "fcall" {
		via = "FCALL " + res.Script.Function + " (FUNCTION LOAD)"
	}
	fmt.Fprintf(b, "script %s, sha1 %s, via %s", mdCode(res.Script.Name), mdCode(short(res.Script.SHA1)), md(via))
	if res.Algo == "script" {
		fmt.Fprintf(b, "; KEYS %s, ARGV %s", mdCodes(res.Script.Keys), mdCodes(res.Script.Args))
	}
	b.WriteString("\n\n")
	evalCalls(res).markdown(b)
	b.WriteString("**" + md(evalSummary(res)) + "**\n")
	if c := res.NoTTL; c != nil && len(c.Keys) > 0 {
		line, pass := noTTLHeadline(c)
		fmt.Fprintf(b, "\n%s: %s; %s.\n\n", mdVerdict(pass), md(line), md(noTTLFix))
		noTTLKeys(c).markdown(b)
		b.WriteString(md(noTTLChecked(c)) + "\n\n")
	} else {
		b.WriteString("\n")
	}
	b.WriteString("Checks:\n\n")
	checkTable(res.CheckList()).markdown(b)
	fmt.Fprintf(b, "Verdict: %s: %s\n", mdVerdict(res.Pass()), md(res.Scope()))
}

func mdHeaders(hs []string) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = md(h)
	}
	return out
}

func mdCodes(xs []string) string {
	if len(xs) == 0 {
		return "(none)"
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = mdCode(x)
	}
	return strings.Join(out, " ")
}

func simulateDesc(res evaldoc.SimResult) string {
	return limiterSettings(res.Algo, res.Params.ParamsDoc)
}

func simulateMarkdown(b *strings.Builder, res evaldoc.SimResult) {
	fmt.Fprintf(b, "### ratelimit eval --simulate: %s\n\n", md(fmt.Sprintf("%s (%s, cost %d) under %s arrivals for %s",
		res.Algo, simulateDesc(res), res.Params.Cost, res.Rate, evalSpan(time.Duration(res.ForMs)*time.Millisecond))))
	mdServer(b, serverOf(res.Header).String())
	share := 0.0
	if res.Arrivals > 0 {
		share = float64(res.Admitted) / float64(res.Arrivals)
	}
	fmt.Fprintf(b, "%d arrivals: **%d admitted** (%s), %d refused", res.Arrivals, res.Admitted, md(pct(share)), res.Refused)
	if res.FirstRefMs >= 0 {
		fmt.Fprintf(b, "; first refusal at %s", evalSpan(time.Duration(res.FirstRefMs)*time.Millisecond))
	}
	b.WriteString("\n\n")
	if len(res.PerSecond) > 0 {
		b.WriteString("Admitted per virtual second:\n\n")
		simulatePerSecond(res).markdown(b)
	}
	if res.Agrees {
		fmt.Fprintf(b, "Go model: %d admitted, same decisions as the script. **PASS**\n", res.Model)
	} else {
		fmt.Fprintf(b, "Go model: %d admitted, different decisions from the script. **FAIL**\n", res.Model)
	}
}

func scriptsMarkdown(b *strings.Builder, c evaldoc.Catalog) {
	b.WriteString("### ratelimit scripts\n\n")
	scriptsTable(c).markdown(b)
}
