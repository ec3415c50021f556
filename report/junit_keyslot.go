package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratelimit-dev/ratelimit/cluster"
)

// KeyslotJUnit renders a keyslot result as JUnit XML: one testcase per
// group of keys used together, per linted script, and for --verify when it
// ran.
func KeyslotJUnit(w io.Writer, res cluster.Result) error {
	return writeJUnit(w, []junitSuite{keyslotSuite(res)})
}

func keyslotSuite(res cluster.Result) junitSuite {
	s := junitSuite{Name: "ratelimit keyslot"}
	for _, g := range res.Groups {
		name := ksKeys(g.Keys)
		if g.File != "" {
			name = fmt.Sprintf("%s:%d: %s", g.File, g.Line, name)
		}
		c := newCase("keyslot.groups", name, 0)
		if g.Crossslot {
			var d strings.Builder
			for _, sk := range g.BySlot {
				fmt.Fprintf(&d, "slot %d: %s\n", sk.Slot, ksKeys(sk.Keys))
			}
			fmt.Fprintf(&d, "fix: %s\n", g.Fix)
			c.fail("CROSSSLOT", fmt.Sprintf("CROSSSLOT: keys used together span %d slots %v", len(g.Slots), g.Slots), d.String())
		} else if len(g.Slots) == 1 {
			c.SystemOut = fmt.Sprintf("all keys in slot %d\n", g.Slots[0])
		}
		s.Cases = append(s.Cases, c)
	}
	for _, sc := range res.Scripts {
		c := newCase("keyslot.scripts", sc.File, 0)
		if len(sc.Findings) > 0 {
			var d strings.Builder
			for _, f := range sc.Findings {
				fmt.Fprintf(&d, "%s:%d: %s\n", f.File, f.Line, f.Message())
			}
			c.fail("lint", fmt.Sprintf("%s not from KEYS (first at line %d)",
				countNoun(len(sc.Findings), "key argument", "key arguments"), sc.Findings[0].Line), d.String())
		} else {
			c.SystemOut = countNoun(sc.Calls, "redis call", "redis calls") + ", every key from KEYS\n"
		}
		s.Cases = append(s.Cases, c)
	}
	if v := res.Verify; v != nil {
		c := newCase("keyslot.verify", fmt.Sprintf("CLUSTER KEYSLOT agrees for %d keys", v.Checked), 0)
		if v.Mismatches > 0 {
			var d strings.Builder
			for _, k := range res.Keys {
				if k.ServerSlot != nil && *k.ServerSlot != k.Slot {
					fmt.Fprintf(&d, "%s: offline %d, server %d\n", ksKey(k.Key), k.Slot, *k.ServerSlot)
				}
			}
			c.fail("mismatch", fmt.Sprintf("%d of %d keys differ", v.Mismatches, v.Checked), d.String())
		}
		s.Cases = append(s.Cases, c)
	}
	return s
}
