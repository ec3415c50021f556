package report

import (
	"fmt"
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
		keyslotGroups(res).markdown(b)
	}
	if len(res.Scripts) > 0 {
		b.WriteString("#### Scripts (key arguments must come from KEYS)\n\n")
		keyslotScripts(res).markdown(b)
		if len(res.Findings) > 0 {
			keyslotFindings(res).markdown(b)
		}
	}
	if sp := res.Spread; sp != nil {
		fmt.Fprintf(b, "#### Spread of %s over %d-%d\n\n", mdCode(sp.Template), sp.From, sp.To)
		b.WriteString(md(keyslotSpreadLine(sp)) + "\n\n")
		if len(sp.Primaries) > 0 {
			keyslotPrimaries(sp.Primaries).markdown(b)
			if sp.BusiestPrimary != "" {
				fmt.Fprintf(b, "busiest primary: %s with %s of the keys\n\n", md(sp.BusiestPrimary), md(pct(sp.BusiestShare)))
			}
		}
		for _, w := range sp.Warnings {
			b.WriteString("- warning: " + md(w) + "\n")
		}
		if len(sp.Warnings) > 0 {
			b.WriteString("\n")
		}
	}
	if sp := res.Split; sp != nil {
		title := keyslotSplitTitle(&cluster.Split{Into: sp.Into, Share: md(sp.Share), Rate: md(sp.Rate)}, mdCode(sp.Key))
		b.WriteString("#### " + title + "\n\n")
		keyslotSplit(sp).markdown(b)
		notes := keyslotSplitNotes(sp)
		for _, n := range notes {
			b.WriteString("- note: " + md(n) + "\n")
		}
		if len(notes) > 0 {
			b.WriteString("\n")
		}
	}
}
