package cluster

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
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
	for _, k := range keys {
		if tag, ok := Tag(k); ok && !seen[tag] {
			seen[tag] = true
			tags = append(tags, tag)
		}
	}
	if len(tags) > 1 {
		// Different tags mean different identities (two users): a tag
		// from a part they share (the word user) would put every user in
		// one slot.
		return fmt.Sprintf("the keys carry different hash tags (%s); use one tag in every key of the group",
			quoteSome(tags, ", "))
	}
	if _, fixed, ok := SharedTag(keys); ok {
		out := fixed[:min(len(fixed), maxShown)]
		return fmt.Sprintf("put the shared part in {} so the keys hash together: %s",
			quoteAll(out, " ")+more(len(keys)-len(out)))
	}
	return "the keys share no identity to tag; put the same text in {} in each key " +
		"(e.g. the user or tenant id, rl:{user:42}:minute), or use them in separate calls"
}

// keySeparators split a key into segments when looking for the part keys
// share; braces count as separators too.
const keySeparators = ":/._-|#@,;= {}"

func isKeySep(c byte) bool { return strings.IndexByte(keySeparators, c) >= 0 }

// Bounds of the search for a shared part: runs of at most maxRunSegments
// segments, starting in the first maxSegments segments of the shortest key.
const (
	maxSegments    = 256
	maxRunSegments = 8
)

// SharedTag finds the text keys share that, put in {} in each of them,
// makes them hash together, and returns it with the keys so tagged. The
// text is the longest run of whole segments (split on ':', '/', '.', '_',
// '-' and other separators) that every key contains, at least two
// characters (not bytes) long, without braces, and neither a leading
// namespace (rl:) nor one segment that is only the first or last of every
// key (which would put every key of the scheme in one slot). A key whose tag already is the
// text is kept; a key with another tag loses it. Each proposal is checked
// with Slot: ok is false when no such text makes them share a slot.
func SharedTag(keys []string) (tag string, fixed []string, ok bool) {
	if len(keys) < 2 {
		return "", nil, false
	}
	for _, c := range sharedCandidates(keys) {
		if fixed, ok := tagAll(keys, c); ok {
			return c, fixed, true
		}
	}
	return "", nil, false
}

// sharedCandidates lists the runs of whole segments of the shortest key,
// longest first (then in the order they appear), that could be a tag.
func sharedCandidates(keys []string) []string {
	ref := keys[0]
	for _, k := range keys[1:] {
		if len(k) < len(ref) {
			ref = k
		}
	}
	var segs [][2]int
	for i := 0; i < len(ref) && len(segs) < maxSegments; {
		if isKeySep(ref[i]) {
			i++
			continue
		}
		j := i
		for j < len(ref) && !isKeySep(ref[j]) {
			j++
		}
		segs = append(segs, [2]int{i, j})
		i = j
	}
	seen := map[string]bool{}
	var out []string
	for a := range segs {
		for b := a; b < len(segs) && b < a+maxRunSegments; b++ {
			c := ref[segs[a][0]:segs[b][1]]
			if strings.ContainsAny(c, "{}") {
				break
			}
			if utf8.RuneCountInString(c) < 2 || seen[c] { // one letter (ü too) is no identity
				continue
			}
			seen[c] = true
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(x, y string) int { return len(y) - len(x) })
	return out
}

// indexSegments returns where c first occurs in k as whole segments (a
// separator or the end of k on each side), or -1.
func indexSegments(k, c string) int {
	for from := 0; from+len(c) <= len(k); {
		i := strings.Index(k[from:], c)
		if i < 0 {
			return -1
		}
		at := from + i
		end := at + len(c)
		if (at == 0 || isKeySep(k[at-1])) && (end == len(k) || isKeySep(k[end])) {
			return at
		}
		from = at + 1
	}
	return -1
}

// onlySeps reports whether s holds nothing but separators.
func onlySeps(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isKeySep(s[i]) {
			return false
		}
	}
	return true
}

// tagAll puts c in {} in every key, or reports that it cannot: c is not in
// every key, is only an edge of them, or a key so tagged would not hash c.
func tagAll(keys []string, c string) ([]string, bool) {
	multi := strings.ContainsAny(c, keySeparators)
	allStart, allEdge := true, true
	at := make([]int, len(keys))
	for i, k := range keys {
		p := indexSegments(k, c)
		if p < 0 {
			return nil, false
		}
		at[i] = p
		start, end := onlySeps(k[:p]), onlySeps(k[p+len(c):])
		allStart = allStart && start
		allEdge = allEdge && (start || end)
	}
	if (multi && allStart) || (!multi && allEdge) {
		return nil, false
	}
	fixed := make([]string, len(keys))
	slot := Slot(c)
	for i, k := range keys {
		f := withTag(k, c, at[i])
		if tag, ok := Tag(f); !ok || tag != c || Slot(f) != slot {
			return nil, false
		}
		fixed[i] = f
	}
	return fixed, true
}

// withTag returns k with the bytes c at p put in {}, and the braces of its
// current hash tag, if any, dropped; a key whose tag is c is returned as is.
func withTag(k, c string, p int) string {
	open, closing := -1, -1
	if tag, ok := Tag(k); ok {
		if tag == c {
			return k
		}
		open = strings.IndexByte(k, '{')
		closing = open + 1 + len(tag)
	}
	var b strings.Builder
	b.Grow(len(k) + 2)
	for i := 0; i <= len(k); i++ {
		if i == p {
			b.WriteByte('{')
		}
		if i == p+len(c) {
			b.WriteByte('}')
		}
		if i == len(k) {
			break
		}
		if i != open && i != closing {
			b.WriteByte(k[i])
		}
	}
	return b.String()
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

func quoteAll(ss []string, sep string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = QuoteArg(s)
	}
	return strings.Join(q, sep)
}
