package cluster

import (
	"fmt"
	"slices"
	"strings"
)

// Group is the result of checking keys that one script call or one MULTI
// uses together. Crossslot is true when they span more than one slot, which
// Redis Cluster refuses with CROSSSLOT.
type Group struct {
	Keys      []string   `json:"keys"`
	Slots     []int      `json:"slots"`
	Crossslot bool       `json:"crossslot"`
	BySlot    []SlotKeys `json:"by_slot,omitempty"`
	Fix       string     `json:"fix,omitempty"`
	File      string     `json:"file,omitempty"`
	Line      int        `json:"line,omitempty"`
}

// SlotKeys lists the keys of a group that hash to one slot.
type SlotKeys struct {
	Slot int      `json:"slot"`
	Tag  string   `json:"tag"`
	Keys []string `json:"keys"`
}

// CheckGroup computes the slots of keys and, when they differ, which keys
// land where and how to fix the scheme.
func CheckGroup(keys []string) Group {
	g := Group{Keys: keys, Slots: []int{}}
	by := map[int]*SlotKeys{}
	for _, k := range keys {
		s := Slot(k)
		sk, ok := by[s]
		if !ok {
			tag, _ := Tag(k)
			sk = &SlotKeys{Slot: s, Tag: tag}
			by[s] = sk
			g.Slots = append(g.Slots, s)
		}
		sk.Keys = append(sk.Keys, k)
	}
	slices.Sort(g.Slots)
	if len(g.Slots) <= 1 {
		return g
	}
	g.Crossslot = true
	for _, s := range g.Slots {
		g.BySlot = append(g.BySlot, *by[s])
	}
	g.Fix = suggestFix(keys)
	return g
}

// suggestFix proposes how to make keys share a slot: the same hash tag in
// each of them, taken from the part of the key scheme they share.
func suggestFix(keys []string) string {
	var tags []string
	seen := map[string]bool{}
	braces := false
	for _, k := range keys {
		if tag, ok := Tag(k); ok && !seen[tag] {
			seen[tag] = true
			tags = append(tags, tag)
		}
		if strings.ContainsAny(k, "{}") {
			braces = true
		}
	}
	if len(tags) > 1 {
		return fmt.Sprintf("the keys carry different hash tags (%s); use one tag in every key of the group",
			quoteSome(tags, ", "))
	}
	if !braces {
		if run := sharedRun(keys); run != nil {
			out := make([]string, 0, min(len(keys), maxShown))
			for i, k := range keys {
				if i == maxShown {
					break
				}
				s := strings.Split(k, ":")
				at := indexRun(s, run)
				parts := append(slices.Clone(s[:at]), "{"+strings.Join(run, ":")+"}")
				out = append(out, strings.Join(append(parts, s[at+len(run):]...), ":"))
			}
			return fmt.Sprintf("put the shared part in {} so the keys hash together: %s",
				quoteAll(out, " ")+more(len(keys)-len(out)))
		}
	}
	return "the keys share no identity to tag; put the same text in {} in each key " +
		"(e.g. the user or tenant id, rl:{user:42}:minute), or use them in separate calls"
}

// maxShown is how many keys or tags a fix names before "and N more".
const maxShown = 8

func quoteSome(ss []string, sep string) string {
	if len(ss) > maxShown {
		return quoteAll(ss[:maxShown], sep) + more(len(ss)-maxShown)
	}
	return quoteAll(ss, sep)
}

func more(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" and %d more", n)
}

// sharedRun finds the longest run of ':'-separated segments that every key
// contains, leaving out a leading namespace segment (rl:) and runs that are
// only a leading or trailing segment, which would put every key of the
// scheme into one slot.
func sharedRun(keys []string) []string {
	if len(keys) < 2 {
		return nil
	}
	segs := make([][]string, len(keys))
	for i, k := range keys {
		segs[i] = strings.Split(k, ":")
	}
	first := segs[0]
	var best []string
	bestLen := 0
	for start := range first {
		for end := len(first); end > start; end-- {
			if end-start <= bestLen {
				break
			}
			run := first[start:end]
			okAll := true
			onlyEdge := true
			for _, s := range segs {
				at := indexRun(s, run)
				if at < 0 {
					okAll = false
					break
				}
				if len(run) > 1 || (at != 0 && at+len(run) != len(s)) {
					onlyEdge = false
				}
			}
			if !okAll || onlyEdge {
				continue
			}
			if start == 0 && len(run) > 1 && allStartWith(segs, run) {
				run = run[1:]
			}
			if strings.Join(run, "") == "" {
				continue
			}
			best = run
			bestLen = end - start
			break
		}
	}
	return best
}

func indexRun(s, run []string) int {
	for i := 0; i+len(run) <= len(s); i++ {
		if slices.Equal(s[i:i+len(run)], run) {
			return i
		}
	}
	return -1
}

func allStartWith(segs [][]string, run []string) bool {
	for _, s := range segs {
		if len(s) < len(run) || !slices.Equal(s[:len(run)], run) {
			return false
		}
	}
	return true
}

func quoteAll(ss []string, sep string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = QuoteArg(s)
	}
	return strings.Join(q, sep)
}
