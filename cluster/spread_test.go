package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/rate"
)

func TestParseTemplate(t *testing.T) {
	tests := []struct {
		in      string
		key7    string
		wantErr string
	}{
		{"rl:{tenant:%d}:tb", "rl:{tenant:7}:tb", ""},
		{"%d", "7", ""},
		{"100%%:%d", "100%:7", ""},
		{"rl:{tenant}:tb", "", "no %d"},
		{"%d:%d", "", "more than one"},
		{"%s", "", "%s"},
		{"a%", "", "lone"},
	}
	for _, tt := range tests {
		tpl, err := ParseTemplate(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseTemplate(%q) error = %v, want one mentioning %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseTemplate(%q): %v", tt.in, err)
			continue
		}
		if got := tpl.Key(7); got != tt.key7 {
			t.Errorf("ParseTemplate(%q).Key(7) = %q, want %q", tt.in, got, tt.key7)
		}
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		in       string
		from, to uint64
		ok       bool
	}{
		{"1-100000", 1, 100000, true},
		{"0-0", 0, 0, true},
		{"5", 5, 5, true},
		{" 3 - 9 ", 3, 9, true},
		{"9-3", 0, 0, false},
		{"a-b", 0, 0, false},
		{"-5", 0, 0, false},
		{"1-", 0, 0, false},
		{"", 0, 0, false},
		{"1-2-3", 0, 0, false},
		{"0-10000000", 0, 0, false},
		{"0-9999999", 0, 9999999, true},
		{"9223372036854775806-9223372036854775807", 9223372036854775806, 9223372036854775807, true},
		{"9223372036854775807", 9223372036854775807, 9223372036854775807, true},
		{"0-9223372036854775807", 0, 0, false},
		{"9223372036854775808", 9223372036854775808, 9223372036854775808, true},
		{"18446744073709551610-18446744073709551615", 18446744073709551610, 18446744073709551615, true},
		{"18446744073709551615", math.MaxUint64, math.MaxUint64, true},
		{"18446744073709551615-18446744073709551615", math.MaxUint64, math.MaxUint64, true},
		{"18446744073699551616-18446744073709551615", 18446744073699551616, math.MaxUint64, true}, // MaxRange numbers
		{"18446744073699551615-18446744073709551615", 0, 0, false},                                // MaxRange+1 numbers
		{"0-18446744073709551615", 0, 0, false},
		{"18446744073709551616", 0, 0, false},
		{"1-18446744073709551616", 0, 0, false},
		{"+1-5", 0, 0, false},
		{"0x10", 0, 0, false},
		{"1_000", 0, 0, false},
		{"-1-5", 0, 0, false},
		{"5-1", 0, 0, false},
	}
	for _, tt := range tests {
		from, to, err := ParseRange(tt.in)
		if (err == nil) != tt.ok || from != tt.from || to != tt.to {
			t.Errorf("ParseRange(%q) = %d, %d, %v; want %d, %d, ok %v", tt.in, from, to, err, tt.from, tt.to, tt.ok)
		}
	}
	// The error says what the limit is, also for the whole uint64 range,
	// whose count does not fit in a uint64.
	for in, want := range map[string]string{
		"0-9223372036854775807":  "9223372036854775808 numbers, more than the limit of 10000000",
		"0-18446744073709551615": "18446744073709551616 numbers, more than the limit of 10000000; use a sample of at most 10000000, e.g. 0-9999999",
		"18446744073709551616":   "numbers may be at most 18446744073709551615",
	} {
		if _, _, err := ParseRange(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRange(%s) error = %v, want one containing %q", in, err, want)
		}
	}
}

// spreadWithin runs SpreadOfContext and fails the test when it does not
// return within d (a loop that never ends would hang the test otherwise).
func spreadWithin(t *testing.T, d time.Duration, ctx context.Context, tpl Template, from, to uint64) (Spread, error) {
	t.Helper()
	type result struct {
		sp  Spread
		err error
	}
	done := make(chan result, 1)
	go func() {
		sp, err := SpreadOfContext(ctx, tpl, from, to, nil)
		done <- result{sp, err}
	}()
	select {
	case r := <-done:
		return r.sp, r.err
	case <-time.After(d):
		t.Fatalf("SpreadOfContext(%s, %d, %d) did not return within %v", tpl, from, to, d)
		return Spread{}, nil
	}
}

// TestSpreadAtInt64Max: ranges ending at the largest int64 and uint64 end
// (a loop counting n++ up to it would wrap and never stop).
func TestSpreadAtInt64Max(t *testing.T) {
	tpl, _ := ParseTemplate("rl:{tenant:%d}:tb")
	tests := []struct {
		from, to uint64
		keys     int64
	}{
		{math.MaxInt64, math.MaxInt64, 1},
		{math.MaxInt64 - 1, math.MaxInt64, 2},
		{math.MaxInt64 - 999, math.MaxInt64, 1000},
		{math.MaxInt64, math.MaxInt64 + 1, 2},
		{math.MaxUint64, math.MaxUint64, 1},
		{math.MaxUint64 - 5, math.MaxUint64, 6},
		{math.MaxUint64 - 999, math.MaxUint64, 1000},
	}
	for _, tt := range tests {
		sp, err := spreadWithin(t, 10*time.Second, context.Background(), tpl, tt.from, tt.to)
		if err != nil || sp.Keys != tt.keys || sp.SlotsUsed < 1 {
			t.Errorf("SpreadOfContext(%d-%d) = keys %d slots %d, %v; want %d keys", tt.from, tt.to, sp.Keys, sp.SlotsUsed, err, tt.keys)
		}
		var n int64
		for i := tt.from; ; i++ {
			if Slot(tpl.Key(i)) == sp.BusiestSlot {
				n++
			}
			if i == tt.to {
				break
			}
		}
		if n != sp.BusiestSlotKeys {
			t.Errorf("%d-%d: busiest slot %d holds %d keys by recount, Spread says %d", tt.from, tt.to, sp.BusiestSlot, n, sp.BusiestSlotKeys)
		}
	}
}

// TestSpreadCancelled: Ctrl-C (a cancelled context) stops a long spread.
func TestSpreadCancelled(t *testing.T) {
	tpl, _ := ParseTemplate("rl:{tenant:%d}:tb")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := spreadWithin(t, 5*time.Second, ctx, tpl, 0, MaxRange-1); !errors.Is(err, context.Canceled) {
		t.Errorf("SpreadOfContext with a cancelled context = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := spreadWithin(t, 5*time.Second, ctx, tpl, 0, math.MaxInt64-1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SpreadOfContext over a huge range with a 50ms deadline = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("SpreadOfContext took %v to notice its deadline", d)
	}
	// Run passes its context on.
	_, err := Run(ctx, Options{Template: &tpl, From: 0, To: MaxRange - 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run with an ended context = %v, want its error", err)
	}
}

// threeShards splits the slots like redis-cli --cluster create does for 3.
func threeShards() *Topology {
	top := newTopology("test")
	top.add(Shard{Primary: "127.0.0.1:7001", Ranges: [][2]int{{0, 5460}}})
	top.add(Shard{Primary: "127.0.0.1:7002", Ranges: [][2]int{{5461, 10922}}})
	top.add(Shard{Primary: "127.0.0.1:7003", Replicas: []string{"127.0.0.1:7004"}, Ranges: [][2]int{{10923, 16383}}})
	return top
}

func TestSpreadOf(t *testing.T) {
	tpl, _ := ParseTemplate("rl:{tenant:%d}:tb")
	sp := SpreadOf(tpl, 1, 100000, threeShards())
	if sp.Keys != 100000 || sp.Tags != "many" || len(sp.Warnings) != 0 {
		t.Errorf("spread of %s: keys %d tags %s warnings %q", tpl, sp.Keys, sp.Tags, sp.Warnings)
	}
	if sp.SlotsUsed < 16000 {
		t.Errorf("100000 tenants use %d slots, want nearly all 16384", sp.SlotsUsed)
	}
	var sum int64
	for _, p := range sp.Primaries {
		sum += p.Keys
		if p.Share < 0.30 || p.Share > 0.37 {
			t.Errorf("primary %s gets %.3f of the keys, want about 1/3", p.Node, p.Share)
		}
	}
	if sum != sp.Keys {
		t.Errorf("primaries hold %d keys, want %d", sum, sp.Keys)
	}
	// Recount one slot by brute force.
	var n int64
	for i := uint64(1); i <= 100000; i++ {
		if Slot(tpl.Key(i)) == sp.BusiestSlot {
			n++
		}
	}
	if n != sp.BusiestSlotKeys {
		t.Errorf("busiest slot %d holds %d keys by recount, Spread says %d", sp.BusiestSlot, n, sp.BusiestSlotKeys)
	}

	hot, _ := ParseTemplate("rl:{tenant}:tb:%d")
	sp = SpreadOf(hot, 1, 1000, threeShards())
	if sp.SlotsUsed != 1 || sp.Tags != "one" || sp.BusiestShare != 1 || len(sp.Warnings) != 1 ||
		!strings.Contains(sp.Warnings[0], "hash tag {tenant}") {
		t.Errorf("hot template: slots %d tags %s busiest share %v warnings %q", sp.SlotsUsed, sp.Tags, sp.BusiestShare, sp.Warnings)
	}

	plain, _ := ParseTemplate("rl:user:%d:tb")
	sp = SpreadOf(plain, 1, 1000, nil)
	if sp.Tags != "none" || sp.Primaries != nil || sp.SlotsUsed < 900 {
		t.Errorf("untagged template: tags %s primaries %v slots %d", sp.Tags, sp.Primaries, sp.SlotsUsed)
	}
}

func TestProposeSplit(t *testing.T) {
	top := threeShards()
	for _, key := range []string{"rl:{tenant:7}:tb", "rl:user:42", "{}x", ""} {
		for _, n := range []int{2, 3, 4, 8} {
			sp, err := ProposeSplit(key, n, top)
			if err != nil {
				t.Fatalf("ProposeSplit(%q, %d): %v", key, n, err)
			}
			if len(sp.SubKeys) != n || sp.Share != "1/"+strconv.Itoa(n) {
				t.Fatalf("ProposeSplit(%q, %d) gave %d sub-keys, share %s", key, n, len(sp.SubKeys), sp.Share)
			}
			slots := map[int]bool{}
			nodes := map[string]int{}
			for _, s := range sp.SubKeys {
				if Slot(s.Key) != s.Slot || slots[s.Slot] {
					t.Errorf("sub-key %q: slot %d (computed %d), repeated %v", s.Key, s.Slot, Slot(s.Key), slots[s.Slot])
				}
				slots[s.Slot] = true
				if top.Owner(s.Slot).Primary != s.Node {
					t.Errorf("sub-key %q shown on %s, slot %d is on %s", s.Key, s.Node, s.Slot, top.Owner(s.Slot).Primary)
				}
				nodes[s.Node]++
			}
			if !sp.Consecutive {
				t.Errorf("ProposeSplit(%q, %d) found no run of consecutive numbers", key, n)
			}
			for j, s := range sp.SubKeys {
				if want := SubKeyName(key, sp.First+j); s.Key != want {
					t.Errorf("sub-key %d = %q, want %q (numbers from %d)", j, s.Key, want, sp.First)
				}
			}
			lo, hi := n, 0
			for _, sh := range top.Shards {
				lo, hi = min(lo, nodes[sh.Primary]), max(hi, nodes[sh.Primary])
			}
			if hi-lo > 1 {
				t.Errorf("ProposeSplit(%q, %d) spreads %v over primaries", key, n, nodes)
			}
		}
	}
	sp, _ := ProposeSplit("rl:{tenant:7}:tb", 3, nil)
	if sp.SubKeys[0].Key != "rl:{tenant:7:2}:tb" || sp.SubKeys[0].Node != "" || sp.SubKeys[0].Range != "5461-10922" {
		t.Errorf("first sub-key = %+v, want rl:{tenant:7:2}:tb in range 5461-10922 without a node", sp.SubKeys[0])
	}
	sp.SetRate(rate.Rate{Count: 1000, Per: time.Second})
	if sp.Rate != "1000/s" || sp.SubKeys[2].Rate != "333.333/s" {
		t.Errorf("SetRate: rate %s, sub-key rate %s", sp.Rate, sp.SubKeys[2].Rate)
	}
	big, err := ProposeSplit("rl:{tenant:7}:tb", 1000, top)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	perNode := map[string]int{}
	for _, s := range big.SubKeys {
		if seen[s.Slot] {
			t.Fatalf("1000-way split repeats slot %d", s.Slot)
		}
		seen[s.Slot] = true
		perNode[s.Node]++
	}
	if big.Consecutive || len(big.SubKeys) != 1000 || len(perNode) != 3 {
		t.Errorf("1000-way split: consecutive %v, %d sub-keys, per primary %v", big.Consecutive, len(big.SubKeys), perNode)
	}
	for _, c := range perNode {
		if c < 333 || c > 334 {
			t.Errorf("1000-way split per primary = %v, want 333 or 334 each", perNode)
		}
	}
	for _, n := range []int{0, 1, MaxSplit + 1} {
		if _, err := ProposeSplit("k", n, nil); err == nil {
			t.Errorf("ProposeSplit(k, %d) accepted", n)
		}
	}
}

// FuzzRange: ParseRange never panics, accepts only FROM <= TO with at most
// MaxRange numbers, reads back what it prints, and errors fit on one line.
func FuzzRange(f *testing.F) {
	for _, s := range []string{"1-100000", "5", " 3 - 9 ", "18446744073709551610-18446744073709551615",
		"0-18446744073709551615", "18446744073709551616", "9-3", "-", "1--2", "+1-2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		from, to, err := ParseRange(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(s, "\n") {
				t.Fatalf("ParseRange(%q) error has several lines: %q", s, err)
			}
			return
		}
		if from > to || to-from >= MaxRange {
			t.Fatalf("ParseRange(%q) = %d-%d", s, from, to)
		}
		f2, t2, err := ParseRange(fmt.Sprintf("%d-%d", from, to))
		if err != nil || f2 != from || t2 != to {
			t.Fatalf("ParseRange(%d-%d) = %d-%d, %v", from, to, f2, t2, err)
		}
	})
}

// FuzzTemplate: ParseTemplate never panics, and a template it accepts
// puts the number where %d was.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"rl:{tenant:%d}:tb", "%d", "a%%b%d", "%", "%d%d", "%x"} {
		f.Add(s, uint64(7))
	}
	f.Fuzz(func(t *testing.T, s string, n uint64) {
		tpl, err := ParseTemplate(s)
		if err != nil || strings.Contains(s, "\x00") {
			return
		}
		if len(s) > MaxTemplate {
			t.Fatalf("ParseTemplate accepted %d bytes", len(s))
		}
		want := strings.Replace(strings.ReplaceAll(strings.ReplaceAll(s, "%%", "\x00"), "%d", strconv.FormatUint(n, 10)), "\x00", "%", -1)
		if got := tpl.Key(n); got != want {
			t.Fatalf("ParseTemplate(%q).Key(%d) = %q, want %q", s, n, got, want)
		}
	})
}
