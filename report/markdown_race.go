package report

import (
	"fmt"
	"strings"

	"github.com/ratelimit-dev/ratelimit/race/racedoc"
)

func raceMarkdown(b *strings.Builder, res racedoc.Result) {
	fmt.Fprintf(b, "### ratelimit race: %s\n\n", mdVerdict(res.Pass()))
	b.WriteString(md(RaceSentence(res)) + "\n\n")
	mdServer(b, serverOf(res.Header).String())
	where := ""
	if res.Node != "" {
		where = ", all on node " + res.Node
	}
	fmt.Fprintf(b, "%s at one barrier, limit %d, %s, keys %s%s (deleted)\n\n",
		countNoun(res.Concurrency, "goroutine", "goroutines"), res.Limit, countNoun(res.Trials, "trial", "trials"), mdCode(res.KeyPattern), md(where))
	if line := raceModelLine(res); line != "" {
		b.WriteString(md(line) + "\n\n")
	}
	raceTrials(res).markdown(b)
	raceAcross(res).markdown(b)
	if res.Pass() {
		fmt.Fprintf(b, "Verdict: **PASS**: %s.\n", md(racedoc.PassLine(res)))
	} else {
		fmt.Fprintf(b, "Verdict: **FAIL**: %s\n", md(strings.Join(res.Failures(), "; ")))
	}
	if len(res.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range res.Notes {
			b.WriteString("- note: " + md(n) + "\n")
		}
	}
}
