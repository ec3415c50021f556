package cluster

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestEvenRanges(t *testing.T) {
	if got, want := EvenRanges(3), [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}; !reflect.DeepEqual(got, want) {
		t.Errorf("EvenRanges(3) = %v, want %v (redis-cli --cluster create)", got, want)
	}
	if got, want := EvenRanges(1), [][2]int{{0, 16383}}; !reflect.DeepEqual(got, want) {
		t.Errorf("EvenRanges(1) = %v, want %v", got, want)
	}
	for p := 1; p <= 64; p++ {
		r := EvenRanges(p)
		if len(r) != p || r[0][0] != 0 || r[p-1][1] != Slots-1 {
			t.Fatalf("EvenRanges(%d) = %v: want %d ranges covering 0-16383", p, r, p)
		}
		for i := range r {
			size := r[i][1] - r[i][0] + 1
			if size < Slots/p || size > Slots/p+1 || (i > 0 && r[i][0] != r[i-1][1]+1) {
				t.Fatalf("EvenRanges(%d)[%d] = %v: not an even, contiguous share", p, i, r[i])
			}
		}
	}
}

// rangeOf is the default-layout range of slot, as text.
func rangeOf(slot int) string {
	for _, r := range EvenRanges(DefaultPrimaries) {
		if slot >= r[0] && slot <= r[1] {
			return fmt.Sprintf("%d-%d", r[0], r[1])
		}
	}
	return ""
}

// TestProposeSplitOffline: one proposal per input, spread over distinct
// ranges of the default 3-primary layout, saying placement is unknown,
// with a note that names the numbers proposed.
func TestProposeSplitOffline(t *testing.T) {
	for _, key := range []string{"rl:{tenant:7}:tb", "rl:user:42", "{}x", "", "rl:{acme}:sw"} {
		for n := 2; n <= 9; n++ {
			sp, err := ProposeSplit(key, n, nil)
			if err != nil {
				t.Fatalf("ProposeSplit(%q, %d, nil): %v", key, n, err)
			}
			again, _ := ProposeSplit(key, n, nil)
			if !reflect.DeepEqual(sp, again) {
				t.Fatalf("ProposeSplit(%q, %d, nil) differs between two calls:\n%+v\n%+v", key, n, sp, again)
			}
			if sp.Placement != "assumed" || sp.Primaries != 3 || !strings.Contains(sp.Note, "placement unknown") {
				t.Errorf("ProposeSplit(%q, %d, nil): placement %q over %d, note %q; want assumed over 3, placement unknown",
					key, n, sp.Placement, sp.Primaries, sp.Note)
			}
			perRange := map[string]int{}
			for _, s := range sp.SubKeys {
				if s.Node != "" || s.Range != rangeOf(s.Slot) || Slot(s.Key) != s.Slot {
					t.Errorf("sub-key %+v: want no node, range %s, slot %d", s, rangeOf(s.Slot), Slot(s.Key))
				}
				perRange[s.Range]++
			}
			want := (n + 2) / 3 // each range gets n/3 rounded down or up
			for r, c := range perRange {
				if c > want || c < n/3 {
					t.Errorf("ProposeSplit(%q, %d, nil): range %s holds %d sub-keys, want %d or %d", key, n, r, c, n/3, want)
				}
			}
			if n <= 3 && len(perRange) != n {
				t.Errorf("ProposeSplit(%q, %d, nil) uses ranges %v, want %d distinct", key, n, perRange, n)
			}
			if got := strings.Contains(sp.Note, "holds "+strconv.Itoa(want)); got != (n > 3) || sp.MostPerPrimary != want {
				t.Errorf("ProposeSplit(%q, %d, nil) note %q, most per range %d: want it to say a range holds %d: %v",
					key, n, sp.Note, sp.MostPerPrimary, want, n > 3)
			}
			checkSplitNote(t, sp)
			// Offline is the live proposal on the default layout.
			live, err := ProposeSplit(key, n, threeShards())
			if err != nil {
				t.Fatal(err)
			}
			for i := range live.SubKeys {
				if live.SubKeys[i].Key != sp.SubKeys[i].Key {
					t.Errorf("ProposeSplit(%q, %d): offline sub-key %d = %q, on the default layout %q",
						key, n, i, sp.SubKeys[i].Key, live.SubKeys[i].Key)
				}
			}
		}
	}
}

// checkSplitNote: the note tells the numbers that were proposed.
func checkSplitNote(t *testing.T, sp Split) {
	t.Helper()
	n := len(sp.SubKeys)
	if !sp.Consecutive {
		if !strings.Contains(sp.Note, "not consecutive") || strings.Contains(sp.Note, "rand(") {
			t.Errorf("note for numbers that are not consecutive: %q", sp.Note)
		}
		return
	}
	for i, s := range sp.SubKeys {
		if want := SubKeyName(sp.Key, sp.First+i); s.Key != want {
			t.Errorf("sub-key %d = %q, want %q (numbers from %d)", i, s.Key, want, sp.First)
		}
	}
	pick := "rand(" + strconv.Itoa(n) + ")"
	if sp.First > 0 {
		pick = strconv.Itoa(sp.First) + "+" + pick
	}
	want := fmt.Sprintf("number %d to %d (%s,", sp.First, sp.First+n-1, pick)
	if !strings.Contains(sp.Note, want) || strings.Contains(sp.Note, "0+rand") {
		t.Errorf("note %q, want it to contain %q", sp.Note, want)
	}
}

// TestProposeSplitLive: on a topology, sub-keys go to distinct primaries
// when there are enough, and the note says when there are not and why.
func TestProposeSplitLive(t *testing.T) {
	six := newTopology("test")
	for i, r := range EvenRanges(6) {
		six.add(Shard{Primary: "127.0.0.1:" + strconv.Itoa(7001+i), Ranges: [][2]int{r}})
	}
	for _, tc := range []struct {
		top     *Topology
		n       int
		crowded bool
	}{
		{threeShards(), 2, false}, {threeShards(), 3, false}, {threeShards(), 4, true}, {threeShards(), 7, true},
		{six, 3, false}, {six, 6, false}, {six, 7, true},
	} {
		sp, err := ProposeSplit("rl:{tenant:7}:tb", tc.n, tc.top)
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string]int{}
		for _, s := range sp.SubKeys {
			if s.Range != "" || tc.top.Owner(s.Slot).Primary != s.Node {
				t.Errorf("sub-key %+v: want node %s, no range", s, tc.top.Owner(s.Slot).Primary)
			}
			nodes[s.Node]++
		}
		p := len(tc.top.Shards)
		if !tc.crowded && len(nodes) != tc.n {
			t.Errorf("%d-way split over %d primaries uses %v, want %d distinct", tc.n, p, nodes, tc.n)
		}
		if sp.Placement != "cluster" || sp.Primaries != p || strings.Contains(sp.Note, "placement unknown") {
			t.Errorf("%d-way split over %d primaries: placement %q over %d, note %q", tc.n, p, sp.Placement, sp.Primaries, sp.Note)
		}
		why := fmt.Sprintf("%d sub-keys over %d primaries cannot each have their own", tc.n, p)
		if strings.Contains(sp.Note, why) != tc.crowded || strings.Contains(sp.Note, "its own primary") == tc.crowded {
			t.Errorf("%d-way split over %d primaries: note %q", tc.n, p, sp.Note)
		}
		if tc.crowded && sp.MostPerPrimary != (tc.n+p-1)/p {
			t.Errorf("%d-way split over %d primaries: most per primary %d, want %d", tc.n, p, sp.MostPerPrimary, (tc.n+p-1)/p)
		}
		checkSplitNote(t, sp)
	}
}
