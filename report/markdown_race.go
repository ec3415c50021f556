package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/race"
)

func raceMarkdown(b *strings.Builder, res race.Result) {
	fmt.Fprintf(b, "### ratelimit race: %s\n\n", mdVerdict(res.Pass()))
	b.WriteString(md(RaceSentence(res)) + "\n\n")
	mdServer(b, res.Server.String())
	where := ""
	if res.Node != "" {
		where = ", all on node " + res.Node
	}
	fmt.Fprintf(b, "%s at one barrier, limit %d, %s, keys %s%s (deleted)\n\n",
		countNoun(res.Concurrency, "goroutine", "goroutines"), res.Limit, countNoun(res.Trials, "trial", "trials"), mdCode(res.Keys), md(where))

	var rows [][]string
	for _, s := range res.Strategies {
		for t := range s.Admitted {
			name, atomic := "", ""
			if t == 0 {
				name, atomic = md(s.Label), raceYesNo(s.AtomicExpected)
			}
			over := strconv.Itoa(raceAt(s.OverAdmitted, t))
			if s.AtomicExpected && raceAt(s.OverAdmitted, t) > 0 {
				over = "**" + over + " FAIL**"
			}
			rows = append(rows, []string{
				name, atomic, strconv.Itoa(t + 1), fmt.Sprintf("%d/%d", s.Admitted[t], res.Concurrency), over,
				raceOptInt(s.FinalValue, t), raceOptInt(s.LostUpdates, t),
				strconv.Itoa(raceAt(s.Retries, t)), strconv.Itoa(raceAt(s.GiveUps, t)), strconv.Itoa(raceAt(s.Errors, t)),
				raceMicros(raceAt(s.TrialP50Us, t)), raceMicros(raceAt(s.TrialP99Us, t)), raceMicros(raceAt(s.WallUs, t)),
			})
		}
	}
	mdTable(b, []string{"strategy", "atomic", "trial", "admitted", "over", "in redis", "lost", "retries", "give-ups", "errors", "p50", "p99", "wall"},
		rows, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)

	rows = rows[:0]
	for _, s := range res.Strategies {
		rows = append(rows, []string{
			md(s.Label), strconv.Itoa(s.AdmittedMin), raceMedian(s.AdmittedMedian), strconv.Itoa(s.AdmittedMax),
			raceMicros(s.P50Us), raceMicros(s.P99Us), raceMDOutcome(s, res.Limit),
		})
	}
	mdTable(b, []string{"across trials", "min", "median", "max", "p50", "p99", "result"}, rows, 1, 2, 3, 4, 5)

	if res.Pass() {
		fmt.Fprintf(b, "Verdict: **PASS**: no strategy that must be atomic admitted more than the limit of %d.\n", res.Limit)
	} else {
		fmt.Fprintf(b, "Verdict: **FAIL**: %s\n", md(strings.Join(res.Failures, "; ")))
	}
	if len(res.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range res.Notes {
			b.WriteString("- note: " + md(n) + "\n")
		}
	}
}

func raceMDOutcome(s race.Strategy, limit int64) string {
	over := s.AdmittedMax > int(limit)
	switch {
	case s.AtomicExpected && over:
		return "**FAIL** over the limit"
	case s.AtomicExpected:
		return "**PASS**"
	case over:
		return "race reproduced (expected)"
	}
	return "race not reproduced"
}
