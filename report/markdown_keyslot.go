package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/cluster"
)

// mdMaxKeys bounds the keys table: a step summary holds at most 1 MiB.
const mdMaxKeys = 500

func mdKeys(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = mdCode(k)
	}
	return strings.Join(out, " ")
}

func keyslotMarkdown(b *strings.Builder, res cluster.Result) {
	fmt.Fprintf(b, "### ratelimit keyslot: %s\n\n", mdVerdict(res.Pass()))
	if reasons := res.Reasons(); len(reasons) > 0 {
		for _, r := range reasons {
			b.WriteString("- " + md(r) + "\n")
		}
		b.WriteString("\n")
	}
	if res.Server != nil {
		mdServer(b, res.Server.String())
	} else {
		b.WriteString("offline: slots computed with the Redis Cluster rules (CRC16 of the hash tag or key, mod 16384)\n\n")
	}
	if res.Notice != "" {
		b.WriteString("notice: " + md(res.Notice) + "\n\n")
	}
	if len(res.Keys) > 0 {
		keyslotKeys(res, mdMaxKeys).markdown(b)
		if n := len(res.Keys) - mdMaxKeys; n > 0 {
			fmt.Fprintf(b, "... and %s more (use -o json for all of them)\n\n", countNoun(n, "key", "keys"))
		}
	}
	if v := res.Verify; v != nil {
		fmt.Fprintf(b, "%s %s checked with CLUSTER KEYSLOT, %s\n\n", mdVerdict(v.Mismatches == 0),
			countNoun(v.Checked, "key", "keys"), countNoun(v.Mismatches, "mismatch", "mismatches"))
	}
	if len(res.Groups) > 0 {
		b.WriteString("#### Groups (keys used together must share a slot)\n\n")
		var rows [][]string
		for _, g := range res.Groups {
			where := ""
			if g.File != "" {
				where = md(fmt.Sprintf("%s:%d", g.File, g.Line))
			}
			slots := make([]string, len(g.Slots))
			for i, s := range g.Slots {
				slots[i] = strconv.Itoa(s)
			}
			fix := ""
			if g.Crossslot {
				fix = md(g.Fix)
			}
			result := mdVerdict(!g.Crossslot)
			if g.Crossslot {
				result += " CROSSSLOT"
			}
			rows = append(rows, []string{result, mdKeys(g.Keys), strings.Join(slots, ", "), where, fix})
		}
		mdTable(b, []string{"result", "keys", "slots", "where", "fix"}, rows)
	}
	if len(res.Scripts) > 0 {
		b.WriteString("#### Scripts (key arguments must come from KEYS)\n\n")
		var rows [][]string
		for _, s := range res.Scripts {
			rows = append(rows, []string{mdVerdict(len(s.Findings) == 0), mdCode(s.File),
				countNoun(s.Calls, "redis call", "redis calls"), countNoun(len(s.Findings), "finding", "findings")})
		}
		mdTable(b, []string{"result", "script", "calls", "findings"}, rows)
		if len(res.Findings) > 0 {
			rows = rows[:0]
			for _, f := range res.Findings {
				rows = append(rows, []string{mdCode(fmt.Sprintf("%s:%d", f.File, f.Line)), mdCode(f.Expr), md(f.Message())})
			}
			mdTable(b, []string{"where", "expression", "finding"}, rows)
		}
	}
	if sp := res.Spread; sp != nil {
		fmt.Fprintf(b, "#### Spread of %s over %d-%d\n\n", mdCode(sp.Template), sp.From, sp.To)
		fmt.Fprintf(b, "%d keys on %d of %d slots; busiest slot %d holds %d keys (%s)\n\n",
			sp.Keys, sp.SlotsUsed, cluster.Slots, sp.BusiestSlot, sp.BusiestSlotKeys, md(pct(sp.BusiestSlotShare)))
		if len(sp.Primaries) > 0 {
			rows := make([][]string, len(sp.Primaries))
			for i, p := range sp.Primaries {
				rows[i] = []string{md(p.Node), strconv.Itoa(p.Slots), strconv.FormatInt(p.Keys, 10), md(pct(p.Share))}
			}
			mdTable(b, []string{"primary", "slots", "keys", "share"}, rows, 1, 2, 3)
		}
		for _, w := range sp.Warnings {
			b.WriteString("- warning: " + md(w) + "\n")
		}
		if len(sp.Warnings) > 0 {
			b.WriteString("\n")
		}
	}
	if sp := res.Split; sp != nil {
		title := fmt.Sprintf("Split of %s into %d sub-keys, each carrying %s of the rate", mdCode(sp.Key), sp.Into, md(sp.Share))
		if sp.Rate != "" {
			title += " (" + md(sp.Rate) + " in all)"
		}
		b.WriteString("#### " + title + "\n\n")
		where := "node"
		if len(sp.SubKeys) > 0 && sp.SubKeys[0].Node == "" {
			where = "default range"
		}
		var rows [][]string
		for _, s := range sp.SubKeys {
			place := s.Node
			if place == "" {
				place = s.Range
			}
			row := []string{mdCode(s.Key), strconv.Itoa(s.Slot), md(place)}
			if sp.Rate != "" {
				row = append(row, md(s.Rate))
			}
			rows = append(rows, row)
		}
		headers := []string{"sub-key", "slot", where}
		if sp.Rate != "" {
			headers = append(headers, "rate")
		}
		mdTable(b, headers, rows, 1, 3)
		notes := sp.Notes
		if len(notes) == 0 && sp.Note != "" { // a document written before notes
			notes = []string{sp.Note}
		}
		for _, n := range notes {
			b.WriteString("- note: " + md(n) + "\n")
		}
		b.WriteString("\n")
	}
}
