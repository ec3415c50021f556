package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/cluster"
)

const (
	htmlSlotRanges  = 64                             // bars of the slot chart
	htmlRangeSlots  = cluster.Slots / htmlSlotRanges // 256 slots each
	htmlMaxKeyRows  = 200                            // rows of the keys table
	htmlMaxRecount  = 5_000_000                      // template keys recounted for the chart
	htmlMaxPrimColr = 6                              // classes p0..p5
)

// slotOwners maps every slot to the index of the shard serving it, or -1.
// It reads the shards' ranges, so it works on a decoded document too.
func slotOwners(top *cluster.Topology) []int {
	owners := make([]int, cluster.Slots)
	for i := range owners {
		owners[i] = -1
	}
	if top == nil {
		return owners
	}
	for si, sh := range top.Shards {
		for _, r := range sh.Ranges {
			for s := max(r[0], 0); s <= r[1] && s < cluster.Slots; s++ {
				owners[s] = si
			}
		}
	}
	return owners
}

func primaryClass(i int) string {
	if i < 0 {
		return "pnone"
	}
	return "p" + strconv.Itoa(i%htmlMaxPrimColr)
}

// slotRangeChart draws keys per range of 256 slots, each bar stacked by
// the primary that serves the slots.
func slotRangeChart(counts []int64, top *cluster.Topology, title string) string {
	owners := slotOwners(top)
	nShards := 0
	if top != nil {
		nShards = len(top.Shards)
	}
	g := barGroup{}
	for r := range htmlSlotRanges {
		per := make([]float64, nShards+1) // last: no owner
		var total int64
		for s := r * htmlRangeSlots; s < (r+1)*htmlRangeSlots; s++ {
			o := owners[s]
			if o < 0 {
				o = nShards
			}
			per[o] += float64(counts[s])
			total += counts[s]
		}
		br := bar{title: fmt.Sprintf("slots %d-%d: %s", r*htmlRangeSlots, (r+1)*htmlRangeSlots-1, countNoun(int(total), "key", "keys"))}
		if r%8 == 0 {
			br.label = strconv.Itoa(r * htmlRangeSlots)
		}
		for i, v := range per {
			cls := primaryClass(i)
			if i == nShards {
				cls = "keys"
				if nShards > 0 {
					cls = "pnone"
				}
			}
			br.segs = append(br.segs, seg{v, cls})
		}
		g.bars = append(g.bars, br)
	}
	var items []legendItem
	if top != nil {
		for i, sh := range top.Shards {
			items = append(items, legendItem{sh.Primary, primaryClass(i)})
		}
	} else {
		items = []legendItem{{"keys (offline: no cluster nodes)", "keys"}}
	}
	return barChart{title: title, yLabel: "keys per 256 slots (first slot of the range below)", groups: []barGroup{g}, legend: items, height: 280, ints: true}.svg()
}

// primaryChart draws keys per primary.
func primaryChart(ps []cluster.Primary) string {
	g := barGroup{}
	for i, p := range ps {
		g.bars = append(g.bars, bar{label: p.Node, segs: []seg{{float64(p.Keys), primaryClass(i)}}, value: strconv.FormatInt(p.Keys, 10),
			title: fmt.Sprintf("%s: %s (%s) on %s", p.Node, countNoun(int(p.Keys), "key", "keys"), pct(p.Share), countNoun(p.Slots, "slot", "slots"))})
	}
	return barChart{title: "keys per primary", yLabel: "keys", groups: []barGroup{g}, height: 240, width: 640, ints: true}.svg()
}

func keyslotHTML(b *strings.Builder, res cluster.Result) {
	if res.Server != nil {
		htmlServer(b, res.Server.String())
	} else {
		b.WriteString("<p class=\"muted\">offline: slots computed with the Redis Cluster rules (CRC16 of the hash tag or key, mod 16384)</p>\n")
	}
	if res.Notice != "" {
		fmt.Fprintf(b, "<p class=\"warn\">notice: %s</p>\n", esc(res.Notice))
	}
	if t := res.Topology; t != nil {
		reps := 0
		for _, sh := range t.Shards {
			reps += len(sh.Replicas)
		}
		fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(fmt.Sprintf("nodes from %s: %s, %s", t.Source,
			countNoun(len(t.Shards), "primary", "primaries"), countNoun(reps, "replica", "replicas"))))
	}
	if res.Pass() {
		htmlVerdict(b, true, "no CROSSSLOT risk, no lint finding, no slot mismatch")
	} else {
		htmlVerdict(b, false, strings.Join(res.Reasons(), "; "))
	}

	if len(res.Keys) > 0 {
		counts := make([]int64, cluster.Slots)
		for _, k := range res.Keys {
			if k.Slot >= 0 && k.Slot < cluster.Slots {
				counts[k.Slot]++
			}
		}
		fmt.Fprintf(b, "<h3>Keys per slot range (%s)</h3>\n", esc(countNoun(len(res.Keys), "key", "keys")))
		b.WriteString(slotRangeChart(counts, res.Topology, "keys given, per range of 256 slots"))
		if res.Topology != nil && res.Spread == nil {
			owners := slotOwners(res.Topology)
			ps := make([]cluster.Primary, len(res.Topology.Shards))
			for i, sh := range res.Topology.Shards {
				ps[i].Node = sh.Primary
				for _, r := range sh.Ranges {
					ps[i].Slots += r[1] - r[0] + 1
				}
			}
			for s, c := range counts {
				if o := owners[s]; o >= 0 {
					ps[o].Keys += c
				}
			}
			for i := range ps {
				ps[i].Share = float64(ps[i].Keys) / float64(len(res.Keys))
			}
			b.WriteString("<h3>Keys per primary</h3>\n")
			b.WriteString(primaryChart(ps))
		}
		keyslotKeys(res, htmlMaxKeyRows).html(b)
		if n := len(res.Keys) - htmlMaxKeyRows; n > 0 {
			fmt.Fprintf(b, "<p class=\"muted\">... and %s more in the document.</p>\n", esc(countNoun(n, "key", "keys")))
		}
	}

	if sp := res.Spread; sp != nil {
		fmt.Fprintf(b, "<h3>Spread of %s over %d-%d</h3>\n", htmlCode(sp.Template), sp.From, sp.To)
		fmt.Fprintf(b, "<p>%s</p>\n", esc(keyslotSpreadLine(sp)))
		if tpl, err := cluster.ParseTemplate(sp.Template); err == nil && sp.To >= sp.From && uint64(sp.To-sp.From) < htmlMaxRecount {
			counts := make([]int64, cluster.Slots)
			// count by offset: n++ would wrap to 0 at the largest uint64
			for i := uint64(0); i <= sp.To-sp.From; i++ {
				counts[cluster.Slot(tpl.Key(sp.From+i))]++
			}
			b.WriteString(slotRangeChart(counts, res.Topology, "template keys per range of 256 slots"))
		} else {
			b.WriteString("<p class=\"muted\">Too many keys to redraw their slots here; the counts above are from the run.</p>\n")
		}
		if len(sp.Primaries) > 0 {
			b.WriteString("<h3>Keys per primary</h3>\n")
			b.WriteString(primaryChart(sp.Primaries))
			keyslotPrimaries(sp.Primaries).html(b)
			if sp.BusiestPrimary != "" {
				fmt.Fprintf(b, "<p>%s</p>\n", esc(fmt.Sprintf("busiest primary: %s with %s of the keys", sp.BusiestPrimary, pct(sp.BusiestShare))))
			}
		}
		htmlNotes(b, "warn", sp.Warnings)
	}

	if len(res.Groups) > 0 {
		b.WriteString("<h3>CROSSSLOT groups (keys used together must share a slot)</h3>\n")
		keyslotGroups(res).html(b)
	}

	if len(res.Scripts) > 0 {
		b.WriteString("<h3>Lua lint (key arguments must come from KEYS)</h3>\n")
		keyslotScripts(res).html(b)
		if len(res.Findings) > 0 {
			keyslotFindings(res).html(b)
		}
	}

	if sp := res.Split; sp != nil {
		title := keyslotSplitTitle(&cluster.Split{Into: sp.Into, Share: esc(sp.Share), Rate: esc(sp.Rate)}, htmlCode(ksKey(sp.Key)))
		fmt.Fprintf(b, "<h3>%s</h3>\n", title)
		keyslotSplit(sp).html(b)
		htmlNotes(b, "muted", keyslotSplitNotes(sp))
	}
}
