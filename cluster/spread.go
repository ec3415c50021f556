package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/rate"
)

// MaxRange bounds how many keys --template/--range expands to: ten million
// keys take about a second and show any spread to well under a per cent;
// more only takes longer.
const MaxRange = 10_000_000

// Template is a key scheme with one %d, such as "rl:{tenant:%d}:tb".
type Template struct {
	raw            string
	prefix, suffix string
}

// MaxTemplate bounds the length of a template in bytes: --range may
// expand it MaxRange times, so its length is the cost of each key.
const MaxTemplate = 1024

// ParseTemplate reads a template with exactly one %d; %% is a literal %.
// It may be at most MaxTemplate bytes long.
func ParseTemplate(s string) (Template, error) {
	if len(s) > MaxTemplate {
		return Template{}, fmt.Errorf("template of %d bytes is longer than the limit of %d; a key scheme is a short pattern such as 'rl:{tenant:%%d}:tb'", len(s), MaxTemplate)
	}
	t := Template{raw: s}
	var b strings.Builder
	found := false
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return Template{}, fmt.Errorf("template %q ends with a lone %%; write %%%% for a literal %%", s)
		}
		i++
		switch s[i] {
		case '%':
			b.WriteByte('%')
		case 'd':
			if found {
				return Template{}, fmt.Errorf("template %q has more than one %%d", s)
			}
			found = true
			t.prefix = b.String()
			b.Reset()
		default:
			return Template{}, fmt.Errorf("template %q uses %%%c; only %%d (the number) and %%%% are known", s, s[i])
		}
	}
	if !found {
		return Template{}, fmt.Errorf("template %q has no %%d for the number, e.g. 'rl:{tenant:%%d}:tb'", s)
	}
	t.suffix = b.String()
	return t, nil
}

// Key returns the template's key for n.
func (t Template) Key(n uint64) string {
	return t.prefix + strconv.FormatUint(n, 10) + t.suffix
}

// String returns the template as written.
func (t Template) String() string { return t.raw }

// ParseRange reads "FROM-TO" (inclusive, FROM <= TO, at most MaxRange
// numbers) or a single number, in decimal. Both may be any unsigned 64-bit
// integer, 0 to 18446744073709551615 (math.MaxUint64).
func ParseRange(s string) (from, to uint64, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		b = a
	}
	from, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
	to, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
	if err1 != nil || err2 != nil {
		if errors.Is(err1, strconv.ErrRange) || errors.Is(err2, strconv.ErrRange) {
			return 0, 0, fmt.Errorf("range %q: numbers may be at most %d", s, uint64(math.MaxUint64))
		}
		return 0, 0, fmt.Errorf("range %q is not FROM-TO with non-negative integers, e.g. 1-100000", s)
	}
	if from > to {
		return 0, 0, fmt.Errorf("range %q runs backwards; write the smaller number first", s)
	}
	if to-from >= MaxRange { // no overflow: to >= from
		// to-from+1 overflows only for the whole range 0-MaxUint64
		n := strconv.FormatUint(to-from+1, 10)
		if to-from == math.MaxUint64 {
			n = "18446744073709551616"
		}
		return 0, 0, fmt.Errorf("range %q has %s numbers, more than the limit of %d; use a sample of at most %d, e.g. %d-%d",
			s, n, MaxRange, MaxRange, from, from+MaxRange-1) // from+MaxRange-1 < to: no overflow
	}
	return from, to, nil
}

// Spread is how the keys of a template spread over slots and primaries.
type Spread struct {
	Template         string    `json:"template"`
	From             uint64    `json:"from"`
	To               uint64    `json:"to"`
	Keys             int64     `json:"key_count"` // keys in the range
	SlotsUsed        int       `json:"slots_used"`
	BusiestSlot      int       `json:"busiest_slot"`
	BusiestSlotKeys  int64     `json:"busiest_slot_keys"`
	BusiestSlotShare float64   `json:"busiest_slot_share"`
	Tags             string    `json:"tags"` // "none", "one" or "many"
	Primaries        []Primary `json:"primaries,omitempty"`
	BusiestPrimary   string    `json:"busiest_primary,omitempty"`
	BusiestShare     float64   `json:"busiest_primary_share,omitempty"`
	Warnings         []string  `json:"warnings"`
}

// Primary is the load one primary gets.
type Primary struct {
	Node  string  `json:"node"`
	Keys  int64   `json:"key_count"`
	Slots int     `json:"slot_count"` // slots it serves
	Share float64 `json:"share"`
}

// SpreadOf computes the slot of every key of t over [from, to] and, with a
// topology, the keys each primary gets. It cannot be stopped; Run uses
// SpreadOfContext.
func SpreadOf(t Template, from, to uint64, top *Topology) Spread {
	sp, _ := SpreadOfContext(context.Background(), t, from, to, top)
	return sp
}

// spreadCheckEvery is how many keys SpreadOfContext computes between two
// looks at its context.
const spreadCheckEvery = 1 << 16

// SpreadOfContext is SpreadOf that stops with ctx's error when ctx ends.
// from and to must satisfy from <= to (ParseRange also bounds to-from by
// MaxRange); to may be the largest uint64.
func SpreadOfContext(ctx context.Context, t Template, from, to uint64, top *Topology) (Spread, error) {
	if from > to || to-from >= math.MaxInt64 { // Keys is an int64
		return Spread{}, fmt.Errorf("range %d-%d runs backwards or has more than %d numbers", from, to, int64(math.MaxInt64))
	}
	var counts [Slots]int64
	sp := Spread{Template: t.String(), From: from, To: to, Keys: int64(to-from) + 1, Warnings: []string{}}
	firstTag, tagged, sameTag := "", 0, true
	// Count with i, not n: n <= to is always true when to is the largest
	// uint64, and n++ would wrap.
	for i := int64(0); i < sp.Keys; i++ {
		if i%spreadCheckEvery == spreadCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return Spread{}, err
			}
		}
		n := from + uint64(i)
		k := t.Key(n)
		tag, ok := Tag(k)
		h := k
		if ok {
			h = tag
			tagged++
		}
		if n == from {
			firstTag = tag
		} else if sameTag && tag != firstTag {
			sameTag = false
		}
		counts[CRC16(h)&(Slots-1)]++
	}
	switch {
	case tagged == 0:
		sp.Tags = "none"
	case sameTag && tagged == int(sp.Keys):
		sp.Tags = "one"
	default:
		sp.Tags = "many"
	}
	for s, c := range counts {
		if c == 0 {
			continue
		}
		sp.SlotsUsed++
		if c > sp.BusiestSlotKeys {
			sp.BusiestSlot, sp.BusiestSlotKeys = s, c
		}
	}
	sp.BusiestSlotShare = float64(sp.BusiestSlotKeys) / float64(sp.Keys)
	if sp.Keys > 1 && sp.SlotsUsed == 1 {
		if sp.Tags == "one" {
			sp.Warnings = append(sp.Warnings, fmt.Sprintf(
				"every key has the hash tag {%s}: all %d keys are in slot %d, on one primary; put the part that varies (%%d) inside the {}",
				firstTag, sp.Keys, sp.BusiestSlot))
		} else {
			sp.Warnings = append(sp.Warnings, fmt.Sprintf("all %d keys are in slot %d, on one primary", sp.Keys, sp.BusiestSlot))
		}
	}
	if top == nil {
		return sp, nil
	}
	byNode := map[string]*Primary{}
	for i := range top.Shards {
		p := Primary{Node: top.Shards[i].Primary}
		for _, r := range top.Shards[i].Ranges {
			p.Slots += r[1] - r[0] + 1
		}
		sp.Primaries = append(sp.Primaries, p)
	}
	for i := range sp.Primaries {
		byNode[sp.Primaries[i].Node] = &sp.Primaries[i]
	}
	var unserved int64
	for s, c := range counts {
		if c == 0 {
			continue
		}
		if sh := top.Owner(s); sh != nil {
			byNode[sh.Primary].Keys += c
		} else {
			unserved += c
		}
	}
	for i := range sp.Primaries {
		p := &sp.Primaries[i]
		p.Share = float64(p.Keys) / float64(sp.Keys)
		if p.Keys > 0 && p.Share > sp.BusiestShare {
			sp.BusiestPrimary, sp.BusiestShare = p.Node, p.Share
		}
	}
	if unserved > 0 {
		sp.Warnings = append(sp.Warnings, fmt.Sprintf("%d keys are in slots no node serves (cluster not fully covered)", unserved))
	}
	if len(sp.Primaries) > 1 && sp.BusiestShare == 1 && sp.SlotsUsed > 1 {
		sp.Warnings = append(sp.Warnings, fmt.Sprintf("all %d keys are on one primary (%s)", sp.Keys, sp.BusiestPrimary))
	}
	return sp, nil
}

// SubKey is one part of a split key.
type SubKey struct {
	Key  string `json:"key"`
	Tag  string `json:"tag"`
	Slot int    `json:"slot"`
	// Node is the primary serving Slot on the live cluster.
	Node string `json:"node,omitempty"`
	// Range is, offline, the slot range of the default layout that Slot
	// falls in ("0-5460"): which primary serves it is unknown.
	Range string `json:"range,omitempty"`
	Rate  string `json:"rate,omitempty"`
}

// Split proposes sub-keys that spread one hot key over slots.
type Split struct {
	Key   string `json:"key"`
	Into  int    `json:"into"`
	Share string `json:"share"`
	Rate  string `json:"rate,omitempty"`
	// Placement is "cluster" when the sub-keys were placed on the primaries
	// of a live cluster, "assumed" when, offline, they were spread over the
	// slot ranges of the default layout (DefaultPrimaries primaries) and
	// which node serves them is unknown.
	Placement string `json:"placement"`
	// Primaries is how many primaries (or default ranges) the sub-keys were
	// spread over; MostPerPrimary is the most sub-keys any of them holds.
	Primaries      int `json:"primaries"`
	MostPerPrimary int `json:"most_per_primary"`
	// Consecutive is true when the sub-keys are numbered First..First+Into-1.
	Consecutive bool     `json:"consecutive"`
	First       int      `json:"first"`
	SubKeys     []SubKey `json:"sub_keys"`
	// Notes say how a client picks a sub-key and where the sub-keys are;
	// Note is the same, joined with "; ".
	Notes []string `json:"notes"`
	Note  string   `json:"note"`
}

// MaxSplit bounds --into.
const MaxSplit = 1024

// ErrSplitRange is returned for --into outside 2..MaxSplit.
var ErrSplitRange = fmt.Errorf("--into must be from 2 to %d", MaxSplit)

// DefaultPrimaries is how many primaries an offline split assumes: the
// smallest cluster redis-cli --cluster create makes.
const DefaultPrimaries = 3

// EvenRanges returns the slot ranges redis-cli --cluster create gives p
// primaries (p >= 1): 16384/p slots each, rounded the way redis-cli
// rounds, the last range ending at 16383. For 3 primaries they are
// 0-5460, 5461-10922 and 10923-16383.
func EvenRanges(p int) [][2]int {
	p = max(p, 1)
	per := float64(Slots) / float64(p)
	out := make([][2]int, 0, p)
	first, cursor := 0, 0.0
	for j := range p {
		last := int(math.Round(cursor + per - 1))
		if last > Slots-1 || j == p-1 {
			last = Slots - 1
		}
		last = max(last, first)
		out = append(out, [2]int{first, last})
		first, cursor = last+1, cursor+per
	}
	return out
}

// SubKeyName returns the i-th candidate sub-key of key: with a hash tag T
// the tag becomes T:i (rl:{tenant:7}:tb -> rl:{tenant:7:3}:tb), without one
// ":i" is appended (rl:user:42 -> rl:user:42:3).
func SubKeyName(key string, i int) string {
	if _, ok := Tag(key); ok {
		open := strings.IndexByte(key, '{')
		closing := open + 1 + strings.IndexByte(key[open+1:], '}')
		return key[:closing] + ":" + strconv.Itoa(i) + key[closing:]
	}
	return key + ":" + strconv.Itoa(i)
}

// splitBins are the places sub-keys are spread over: the primaries of a
// live cluster, or offline the ranges of the default layout.
type splitBins struct {
	names []string           // a primary's address, or a range "0-5460"
	of    func(slot int) int // index into names, -1 when no bin serves slot
	live  bool
}

func binsOf(top *Topology) splitBins {
	if top == nil {
		ranges := EvenRanges(DefaultPrimaries)
		b := splitBins{}
		for _, r := range ranges {
			b.names = append(b.names, fmt.Sprintf("%d-%d", r[0], r[1]))
		}
		b.of = func(slot int) int {
			for i, r := range ranges {
				if slot >= r[0] && slot <= r[1] {
					return i
				}
			}
			return -1
		}
		return b
	}
	b := splitBins{live: true}
	index := map[string]int{}
	for _, sh := range top.Shards {
		if len(sh.Ranges) > 0 {
			index[sh.Primary] = len(b.names)
			b.names = append(b.names, sh.Primary)
		}
	}
	b.of = func(slot int) int {
		if sh := top.Owner(slot); sh != nil {
			if i, ok := index[sh.Primary]; ok {
				return i
			}
		}
		return -1
	}
	return b
}

// ProposeSplit picks n sub-keys of key on n different slots, spread evenly
// over the primaries of top (every primary gets one before any gets two),
// or, with no topology, over the slot ranges of the default layout
// (EvenRanges(DefaultPrimaries)), since which node serves a slot is then
// unknown. It is a pure function of its arguments: the same input always
// gives the same proposal. It prefers n consecutive numbers
// (SubKeyName(key, off) ... SubKeyName(key, off+n-1), the smallest such
// off), so an application can pick a sub-key with off+rand(n); when no run
// of numbers works it picks numbers one by one.
func ProposeSplit(key string, n int, top *Topology) (Split, error) {
	if n < 2 || n > MaxSplit {
		return Split{}, ErrSplitRange
	}
	bins := binsOf(top)
	if len(bins.names) == 0 {
		return Split{}, errors.New("the cluster has no primary serving slots; split offline without --redis or fix the cluster")
	}
	sp := Split{Key: key, Into: n, Share: fmt.Sprintf("1/%d", n), Placement: "assumed", Primaries: len(bins.names)}
	if bins.live {
		sp.Placement = "cluster"
	}
	if n <= 256 {
		for off := 0; off < 10000 && !sp.Consecutive; off++ {
			sp.SubKeys, sp.Consecutive = balancedRun(key, n, bins, off)
			sp.First = off
		}
	}
	if !sp.Consecutive {
		sp.First = 0
		var ok bool
		if sp.SubKeys, ok = pickSubKeys(key, n, bins, true); !ok {
			// A primary with too few slots for its share: give up the
			// balance, keep the slots distinct.
			if sp.SubKeys, ok = pickSubKeys(key, n, bins, false); !ok {
				return Split{}, errors.New("could not find enough sub-keys on different slots")
			}
		}
	}
	perBin := make([]int, len(bins.names))
	for _, s := range sp.SubKeys {
		perBin[bins.of(s.Slot)]++
	}
	sp.MostPerPrimary = slices.Max(perBin)
	sp.Notes = splitNotes(sp, bins, perBin)
	sp.Note = strings.Join(sp.Notes, "; ")
	return sp, nil
}

// splitNotes say how a client picks a sub-key, for the numbers proposed,
// and where the sub-keys are.
func splitNotes(sp Split, bins splitBins, perBin []int) []string {
	n := len(sp.SubKeys)
	var notes []string
	if sp.Consecutive {
		pick := fmt.Sprintf("rand(%d)", n)
		if sp.First > 0 {
			pick = fmt.Sprintf("%d+rand(%d)", sp.First, n)
		}
		notes = append(notes, fmt.Sprintf("each request picks one sub-key, number %d to %d (%s, or round robin), and is checked against 1/%d of the limit",
			sp.First, sp.First+n-1, pick, n))
	} else {
		notes = append(notes, fmt.Sprintf("each request picks one of these %d sub-keys (their numbers are not consecutive: keep the list; at random or round robin) and is checked against 1/%d of the limit", n, n))
	}
	if _, ok := Tag(sp.Key); ok {
		notes = append(notes, "keys a script uses together with this one must carry the same new tag")
	}
	var crowded []string
	for i, c := range perBin {
		if c > 1 {
			crowded = append(crowded, fmt.Sprintf("%s holds %d", bins.names[i], c))
		}
	}
	p := len(bins.names)
	if bins.live {
		switch {
		case len(crowded) == 0:
			notes = append(notes, fmt.Sprintf("each sub-key is on its own primary (%d of %d primaries)", n, p))
		case n > p:
			notes = append(notes, fmt.Sprintf("%d sub-keys over %d primaries cannot each have their own: %s (split into at most %d, or add primaries, for one sub-key per primary)",
				n, p, strings.Join(crowded, ", "), p))
		default:
			notes = append(notes, fmt.Sprintf("a primary serves too few slots for one sub-key each: %s", strings.Join(crowded, ", ")))
		}
		return notes
	}
	notes = append(notes, fmt.Sprintf("placement unknown (offline): spread over the slot ranges of a default %d-primary cluster as redis-cli --cluster create makes it (%s); pass --redis URL of a cluster node to place them on its primaries",
		p, strings.Join(bins.names, ", ")))
	if len(crowded) > 0 {
		notes = append(notes, fmt.Sprintf("%d sub-keys over %d ranges: %s", n, p, strings.Join(crowded, ", ")))
	}
	return notes
}

// balancedRun reports whether the numbers off..off+n-1 give n sub-keys on
// distinct slots, spread evenly over the bins: each gets n/len(bins)
// rounded down or up.
func balancedRun(key string, n int, bins splitBins, off int) ([]SubKey, bool) {
	used := map[int]bool{}
	perBin := make([]int, len(bins.names))
	ceil := (n + len(bins.names) - 1) / len(bins.names)
	floor := n / len(bins.names)
	subs := make([]SubKey, 0, n)
	for i := off; i < off+n; i++ {
		k := SubKeyName(key, i)
		s := Slot(k)
		bin := bins.of(s)
		if used[s] || bin < 0 || perBin[bin] == ceil {
			return nil, false
		}
		used[s] = true
		perBin[bin]++
		subs = append(subs, subKey(k, s, bins, bin))
	}
	for _, c := range perBin {
		if c < floor {
			return nil, false
		}
	}
	return subs, true
}

func subKey(k string, s int, bins splitBins, bin int) SubKey {
	sk := SubKey{Key: k, Tag: Hashed(k), Slot: s}
	if bins.live {
		sk.Node = bins.names[bin]
	} else {
		sk.Range = bins.names[bin]
	}
	return sk
}

// pickSubKeys tries numbers from 0, skipping those that do not fit: a
// number fits when its slot is new, some bin serves it and, with balance,
// that bin holds no more sub-keys than any other.
func pickSubKeys(key string, n int, bins splitBins, balance bool) ([]SubKey, bool) {
	perBin := make([]int, len(bins.names))
	used := map[int]bool{}
	subs := make([]SubKey, 0, n)
	for i := 0; len(subs) < n && i < 1000*MaxSplit; i++ {
		k := SubKeyName(key, i)
		s := Slot(k)
		bin := bins.of(s)
		if used[s] || bin < 0 || (balance && perBin[bin] != slices.Min(perBin)) {
			continue
		}
		used[s] = true
		perBin[bin]++
		subs = append(subs, subKey(k, s, bins, bin))
	}
	return subs, len(subs) == n
}

// Bounds of the total rate of a split key (--rate), in requests per
// second: beyond them the shares printed per sub-key are meaningless (an
// overflow to Inf, or hundreds of digits).
const (
	MinRatePerSecond = 1e-9 // about one request in 32 years
	MaxRatePerSecond = 1e9  // the token bucket script's ceiling, far beyond any cluster
)

// CheckRate refuses a --rate outside MinRatePerSecond..MaxRatePerSecond.
func CheckRate(r rate.Rate) error {
	ps := r.PerSecond()
	if math.IsNaN(ps) || math.IsInf(ps, 0) || ps > MaxRatePerSecond || ps < MinRatePerSecond {
		return fmt.Errorf("--rate of %s requests per second is out of bounds; give a rate from %g/s to %g/s",
			strconv.FormatFloat(ps, 'g', 4, 64), MinRatePerSecond, MaxRatePerSecond)
	}
	return nil
}

// SetRate records the total rate and gives each sub-key its 1/N share.
func (s *Split) SetRate(r rate.Rate) {
	if r.IsZero() || len(s.SubKeys) == 0 {
		return
	}
	s.Rate = r.String()
	unit := strings.TrimPrefix(rate.Rate{Count: 1, Per: r.Per}.String(), "1")
	part := strconv.FormatFloat(r.Count/float64(len(s.SubKeys)), 'g', 6, 64) + unit
	for i := range s.SubKeys {
		s.SubKeys[i].Rate = part
	}
}
