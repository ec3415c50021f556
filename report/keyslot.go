package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/doc"
)

// ksKey prints a key so that every byte is visible: as is when it has no
// space, quote, backslash or control byte and is valid UTF-8, else
// double-quoted with escapes (the form --groups files and redis-cli read
// back). Unlike cluster.QuoteArg, valid UTF-8 such as ü is kept as is;
// only control bytes (C0, DEL, C1) and invalid bytes become \xNN.
func ksKey(k string) string {
	plain := k != ""
	for i := 0; i < len(k) && plain; {
		r, size := utf8.DecodeRuneInString(k[i:])
		if r <= ' ' || r == '"' || r == '\'' || r == '\\' || isControl(r) || (r == utf8.RuneError && size == 1) {
			plain = false
		}
		i += size
	}
	if plain {
		return k
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(k); {
		r, size := utf8.DecodeRuneInString(k[i:])
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case isControl(r) || (r == utf8.RuneError && size == 1):
			for _, c := range []byte(k[i : i+size]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			b.WriteString(k[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

func ksKeys(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = ksKey(k)
	}
	return strings.Join(out, " ")
}

func ksHashed(tag string, tagged bool) string {
	if tagged {
		return "tag " + ksKey(tag)
	}
	return "whole key"
}

// keyslotKeys is the table of the first n keys: slot, the node and
// replicas serving it (live) and CLUSTER KEYSLOT's answer (--verify).
func keyslotKeys(res cluster.Result, n int) table {
	t := table{headers: []string{"key", "hashed", "slot"}, right: []int{2}} // numbers right-aligned, text left-aligned
	live := res.Topology != nil
	if live {
		t.headers = append(t.headers, "node", "replicas")
	}
	if res.Verify != nil {
		t.right = append(t.right, len(t.headers))
		t.headers = append(t.headers, "CLUSTER KEYSLOT")
	}
	for _, k := range res.Keys[:min(n, len(res.Keys))] {
		hashed := textCell("whole key")
		if k.Tagged {
			hashed = cell{prefix: "tag ", text: k.Tag, kind: cellKey}
		}
		row := []cell{keyCell(k.Key), hashed, textCell(strconv.Itoa(k.Slot))}
		if live {
			node, reps := k.Node, strings.Join(k.Replicas, ", ")
			if node == "" {
				node = "(none)"
			}
			if reps == "" {
				reps = "-"
			}
			row = append(row, textCell(node), textCell(reps))
		}
		if res.Verify != nil {
			v := textCell("-")
			if k.ServerSlot != nil {
				v = textCell(strconv.Itoa(*k.ServerSlot))
				if *k.ServerSlot != k.Slot {
					v = flagCell(v.text + " MISMATCH")
				}
			}
			row = append(row, v)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// keyslotGroups is the table of the groups of keys used together: the
// result, the keys, their slots (for a CROSSSLOT group, which keys hash to
// each), where the group was given and the fix.
func keyslotGroups(res cluster.Result) table {
	t := table{headers: []string{"result", "keys", "slots", "where", "fix"}}
	for _, g := range res.Groups {
		result, slots, fix := verdictCell(true, ""), "no keys", ""
		if len(g.Slots) == 1 {
			slots = strconv.Itoa(g.Slots[0])
		}
		if g.Crossslot {
			result, fix = verdictCell(false, "CROSSSLOT"), g.Fix
			parts := make([]string, len(g.BySlot))
			for i, sk := range g.BySlot {
				parts[i] = fmt.Sprintf("%d (%s): %s", sk.Slot, ksHashed(sk.Tag, sk.Tag != ""), ksKeys(sk.Keys))
			}
			slots = strings.Join(parts, "; ")
			if len(parts) == 0 { // a document without by_slot
				nums := make([]string, len(g.Slots))
				for i, sl := range g.Slots {
					nums[i] = strconv.Itoa(sl)
				}
				slots = strings.Join(nums, ", ")
			}
		}
		where := ""
		if g.File != "" {
			where = fmt.Sprintf("%s:%d", g.File, g.Line)
		}
		t.rows = append(t.rows, []cell{result, keysCell(g.Keys), textCell(slots), textCell(where), textCell(fix)})
	}
	return t
}

// keyslotScripts is the table of the linted scripts.
func keyslotScripts(res cluster.Result) table {
	t := table{headers: []string{"result", "script", "calls", "findings"}}
	for _, sc := range res.Scripts {
		t.rows = append(t.rows, []cell{verdictCell(len(sc.Findings) == 0, ""), codeCell(sc.File),
			textCell(countNoun(sc.Calls, "redis call", "redis calls")), textCell(countNoun(len(sc.Findings), "finding", "findings"))})
	}
	return t
}

// keyslotFindings is the table of the lint's findings.
func keyslotFindings(res cluster.Result) table {
	t := table{headers: []string{"where", "expression", "finding"}}
	for _, f := range res.Findings {
		t.rows = append(t.rows, []cell{codeCell(fmt.Sprintf("%s:%d", f.File, f.Line)), codeCell(f.Expr), textCell(f.Message())})
	}
	return t
}

// keyslotSpreadLine is the spread's summary.
func keyslotSpreadLine(sp *cluster.Spread) string {
	return fmt.Sprintf("%s on %d of %d slots; busiest slot %d holds %s (%s)",
		countNoun(int(sp.Keys), "key", "keys"), sp.SlotsUsed, cluster.Slots, sp.BusiestSlot, countNoun(int(sp.BusiestSlotKeys), "key", "keys"), pct(sp.BusiestSlotShare))
}

// keyslotPrimaries is the table of keys per primary.
func keyslotPrimaries(ps []cluster.Primary) table {
	t := table{headers: []string{"primary", "slots", "keys", "share"}, right: []int{1, 2, 3}}
	for _, p := range ps {
		t.rows = append(t.rows, textCells(p.Node, strconv.Itoa(p.Slots), strconv.FormatInt(p.Keys, 10), pct(p.Share)))
	}
	return t
}

// keyslotSplitTitle heads the split of a hot key (key as the format shows it).
func keyslotSplitTitle(sp *cluster.Split, key string) string {
	title := fmt.Sprintf("Split of %s into %d sub-keys, each carrying %s of the rate", key, sp.Into, sp.Share)
	if sp.Rate != "" {
		title += " (" + sp.Rate + " in all)"
	}
	return title
}

// keyslotSplit is the table of a split's sub-keys: slot, the node serving
// it (live) or the default range it falls in (offline), the rate.
func keyslotSplit(sp *cluster.Split) table {
	t := table{headers: []string{"sub-key", "hashed", "slot"}, right: []int{2}}
	live := len(sp.SubKeys) > 0 && sp.SubKeys[0].Node != ""
	assumed := len(sp.SubKeys) > 0 && sp.SubKeys[0].Range != ""
	if live {
		t.headers = append(t.headers, "node")
	}
	if assumed {
		t.headers = append(t.headers, "default range")
	}
	if sp.Rate != "" {
		t.right = append(t.right, len(t.headers))
		t.headers = append(t.headers, "rate")
	}
	for _, sk := range sp.SubKeys {
		hashed := textCell("whole key")
		if _, tagged := cluster.Tag(sk.Key); tagged {
			hashed = cell{prefix: "tag ", text: sk.Tag, kind: cellKey}
		}
		row := []cell{keyCell(sk.Key), hashed, textCell(strconv.Itoa(sk.Slot))}
		if live {
			row = append(row, textCell(sk.Node))
		}
		if assumed {
			row = append(row, textCell(sk.Range))
		}
		if sp.Rate != "" {
			row = append(row, textCell(sk.Rate))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// keyslotSplitNotes are the notes under a split.
func keyslotSplitNotes(sp *cluster.Split) []string {
	if len(sp.Notes) == 0 && sp.Note != "" { // a document written before notes
		return []string{sp.Note}
	}
	return sp.Notes
}

// KeyslotText renders a keyslot result as text: the server (or that slots
// were computed offline), the keys with their slots and nodes, the groups,
// the linted scripts, the spread, the split and the verdict.
func KeyslotText(w io.Writer, res cluster.Result, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	if res.Server != nil {
		b.WriteString(ServerLine(*res.Server, st))
	} else {
		b.WriteString(st.Dim.Render("offline: slots computed with the Redis Cluster rules (CRC16 of the hash tag or key, mod 16384); pass --redis URL of a cluster node to see which node serves them") + "\n")
	}
	if res.Notice != "" {
		b.WriteString(st.Warn.Render("notice: "+Printable(res.Notice)) + "\n")
	}
	if t := res.Topology; t != nil {
		reps := 0
		for _, sh := range t.Shards {
			reps += len(sh.Replicas)
		}
		fmt.Fprintf(&b, "%s\n", st.Dim.Render(fmt.Sprintf("nodes from %s: %s, %s", Printable(t.Source), countNoun(len(t.Shards), "primary", "primaries"), countNoun(reps, "replica", "replicas"))))
		if u := t.Uncovered(); u > 0 {
			b.WriteString(st.Warn.Render(fmt.Sprintf("warning: %d slots are served by no node", u)) + "\n")
		}
	}
	if len(res.Keys) > 0 {
		b.WriteString("\n")
		b.WriteString(keyslotKeys(res, len(res.Keys)).text(st))
	}
	if v := res.Verify; v != nil {
		fmt.Fprintf(&b, "\n%s  %s checked with CLUSTER KEYSLOT, %s\n",
			st.Verdict(v.Mismatches == 0), countNoun(v.Checked, "key", "keys"), countNoun(v.Mismatches, "mismatch", "mismatches"))
	}
	if len(res.Groups) > 0 {
		b.WriteString("\n" + st.Title.Render("Groups (keys used together must share a slot)") + "\n")
		b.WriteString(keyslotGroups(res).text(st))
	}
	if len(res.Scripts) > 0 {
		b.WriteString("\n" + st.Title.Render("Scripts (key arguments must come from KEYS)") + "\n")
		b.WriteString(keyslotScripts(res).text(st))
		if len(res.Findings) > 0 {
			b.WriteString(keyslotFindings(res).text(st))
		}
	}
	if sp := res.Spread; sp != nil {
		b.WriteString("\n" + st.Title.Render(fmt.Sprintf("Spread of %s over %d-%d", Printable(sp.Template), sp.From, sp.To)) + "\n")
		b.WriteString(keyslotSpreadLine(sp) + "\n")
		if len(sp.Primaries) > 0 {
			b.WriteString(keyslotPrimaries(sp.Primaries).text(st))
			if sp.BusiestPrimary != "" {
				fmt.Fprintf(&b, "busiest primary: %s with %s of the keys\n", Printable(sp.BusiestPrimary), pct(sp.BusiestShare))
			}
		}
		for _, wmsg := range sp.Warnings {
			b.WriteString(st.Warn.Render("warning: "+Printable(wmsg)) + "\n")
		}
	}
	if sp := res.Split; sp != nil {
		b.WriteString("\n" + st.Title.Render(Printable(keyslotSplitTitle(sp, ksKey(sp.Key)))) + "\n")
		b.WriteString(keyslotSplit(sp).text(st))
		for _, n := range keyslotSplitNotes(sp) {
			b.WriteString(st.Dim.Render("note: "+Printable(n)) + "\n")
		}
	}
	b.WriteString("\nverdict: " + st.Verdict(res.Pass()))
	if reasons := res.Reasons(); len(reasons) > 0 {
		b.WriteString("  " + Printable(strings.Join(reasons, "; ")))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ksGHData escapes a workflow command's message.
// Control bytes are shown as printable shows them (a CI log renders ANSI
// escapes), so a newline in a key is \n, not a line break.
func ksGHData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(Printable(s))
}

// ksGHProp escapes a workflow command's property value.
func ksGHProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(Printable(s))
}

// KeyslotGitHub renders a keyslot result as GitHub Actions workflow
// commands: an ::error annotation (with file and line when known) per lint
// finding, CROSSSLOT group and verify mismatch, a ::warning per spread
// warning, and a last plain line with the verdict.
func KeyslotGitHub(w io.Writer, res cluster.Result) error {
	var b strings.Builder
	for _, f := range res.Findings {
		fmt.Fprintf(&b, "::error file=%s,line=%d,title=%s::%s\n", ksGHProp(f.File), max(f.Line, 1),
			ksGHProp("keyslot: key not from KEYS"), ksGHData(f.Message()))
	}
	for _, g := range res.Groups {
		if !g.Crossslot {
			continue
		}
		loc := ""
		if g.File != "" {
			loc = fmt.Sprintf("file=%s,line=%d,", ksGHProp(g.File), g.Line)
		}
		fmt.Fprintf(&b, "::error %stitle=%s::%s\n", loc, ksGHProp("keyslot: CROSSSLOT"),
			ksGHData(fmt.Sprintf("keys %s span slots %v; %s", ksKeys(g.Keys), g.Slots, g.Fix)))
	}
	for _, k := range res.Keys {
		if k.ServerSlot != nil && *k.ServerSlot != k.Slot {
			fmt.Fprintf(&b, "::error title=%s::%s\n", ksGHProp("keyslot: verify"),
				ksGHData(fmt.Sprintf("key %s: offline slot %d, CLUSTER KEYSLOT %d", ksKey(k.Key), k.Slot, *k.ServerSlot)))
		}
	}
	if res.Spread != nil {
		for _, wmsg := range res.Spread.Warnings {
			fmt.Fprintf(&b, "::warning title=%s::%s\n", ksGHProp("keyslot: hot spot"), ksGHData(wmsg))
		}
	}
	if res.Notice != "" {
		fmt.Fprintf(&b, "::notice title=keyslot::%s\n", ksGHData(res.Notice))
	}
	verdict := "keyslot: PASS"
	if !res.Pass() {
		verdict = "keyslot: FAIL: " + Printable(strings.Join(res.Reasons(), "; "))
	}
	b.WriteString(verdict + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

var keyslotKind = kind[cluster.Result]{
	name: cluster.Kind, version: cluster.Version,
	older:    map[int]func([]byte) (cluster.Result, error){1: keyslotFromV1},
	validate: validateKeyslot,
	checks:   cluster.Result.CheckList,
	text:     KeyslotText,
	markdown: keyslotMarkdown,
	junit:    keyslotSuite,
	html:     keyslotHTML,
	json:     KeyslotJSON,
	github:   KeyslotGitHub,
}

// keyslotFromV1: the reasons are replaced by the checks derived from the
// groups, scripts and verify; a spread's counts are key_count and
// slot_count.
func keyslotFromV1(data []byte) (cluster.Result, error) {
	res, err := upgradeTree[cluster.Result](data, func(t jsonTree) {
		t["version"] = cluster.Version
		delete(t, "reasons")
		if sp := object(t, "spread"); sp != nil {
			rename(sp, "keys", "key_count")
			for _, p := range objects(sp, "primaries") {
				rename(p, "keys", "key_count")
				rename(p, "slots", "slot_count")
			}
		}
	})
	if err != nil {
		return res, err
	}
	res.Checks = cluster.Checks(res)
	res.Verdict = doc.Verdict(res.Checks)
	return res, nil
}
