package report

import (
	"fmt"
	"strconv"
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
		verdict := "**FAIL**"
		if c.Allowed {
			verdict = "**PASS** (accepted with --allow-no-ttl)"
		}
		fmt.Fprintf(b, "\n%s: %s without a TTL: %s; set a TTL on every write (PEXPIRE in the same script).\n\n",
			verdict, countNoun(len(c.Keys), "key", "keys"), neverExpires(len(c.Keys)))
		rows := make([][]string, 0, len(c.Keys))
		for _, k := range c.Keys {
			found := "passed in KEYS"
			if k.Found == "scan" {
				found = "found by SCAN"
			}
			if k.ExistedBefore {
				found += ", existed before the run"
			}
			rows = append(rows, []string{mdCode(k.Key), md(k.Type), md(found)})
		}
		mdTable(b, []string{"key", "type", "how it was found"}, rows)
	} else {
		b.WriteString("\n")
	}
	b.WriteString("Checks:\n\n")
	var crows [][]string
	for _, c := range res.CheckList() {
		crows = append(crows, []string{mdCode(c.ID), mdVerdict(c.Pass), md(c.Message)})
	}
	mdTable(b, []string{"check", "result", "message"}, crows)
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
		headers := []string{"seconds"}
		right := []int{}
		for i := range min(10, len(res.PerSecond)) {
			headers = append(headers, "+"+strconv.Itoa(i))
			right = append(right, i+1)
		}
		var rows [][]string
		for i := 0; i < len(res.PerSecond); i += 10 {
			end := min(i+10, len(res.PerSecond))
			row := []string{fmt.Sprintf("%d-%d", i, end-1)}
			for _, n := range res.PerSecond[i:end] {
				row = append(row, strconv.Itoa(n))
			}
			rows = append(rows, row)
		}
		b.WriteString("Admitted per virtual second:\n\n")
		mdTable(b, headers, rows, right...)
	}
	if res.Agrees {
		fmt.Fprintf(b, "Go model: %d admitted, same decisions as the script. **PASS**\n", res.Model)
	} else {
		fmt.Fprintf(b, "Go model: %d admitted, different decisions from the script. **FAIL**\n", res.Model)
	}
}

func scriptsMarkdown(b *strings.Builder, c evaldoc.Catalog) {
	b.WriteString("### ratelimit scripts\n\n")
	headers := []string{"name", "file", "sha1", "what it does"}
	exported := false
	for _, s := range c.Scripts {
		exported = exported || s.Path != ""
	}
	if exported {
		headers = append(headers, "written to")
	}
	rows := make([][]string, 0, len(c.Scripts))
	for _, s := range c.Scripts {
		row := []string{mdCode(s.Name), mdCode(s.File), mdCode(short(s.SHA1)), md(s.Summary)}
		if exported {
			row = append(row, mdCode(s.Path))
		}
		rows = append(rows, row)
	}
	mdTable(b, headers, rows)
}
