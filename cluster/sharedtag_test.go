package cluster

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestSharedTag(t *testing.T) {
	tests := []struct {
		name  string
		keys  []string
		tag   string // "" when no tag should be proposed
		fixed []string
	}{
		{"one key tagged", []string{"rl:{acme}:a", "rl:acme:b"}, "acme", []string{"rl:{acme}:a", "rl:{acme}:b"}},
		{"tag from the untagged key", []string{"rl:acme:b", "rl:{acme}:a"}, "acme", []string{"rl:{acme}:b", "rl:{acme}:a"}},
		{"run of segments", []string{"rl:user:42:minute", "rl:user:42:day"}, "user:42", []string{"rl:{user:42}:minute", "rl:{user:42}:day"}},
		{"run in a tag", []string{"rl:{user:42}:minute", "rl:user:42:day"}, "user:42", []string{"rl:{user:42}:minute", "rl:{user:42}:day"}},
		{"other separators", []string{"rl/tenant-7/tb", "rl.tenant-7.sw"}, "tenant-7", []string{"rl/{tenant-7}/tb", "rl.{tenant-7}.sw"}},
		{"narrower tag", []string{"rl:{acme:eu}:a", "rl:acme:b"}, "acme", []string{"rl:{acme}:eu:a", "rl:{acme}:b"}},
		{"longest, not first", []string{"rl:ab:tenant7:x", "rl:ab:q:tenant7"}, "tenant7", []string{"rl:ab:{tenant7}:x", "rl:ab:q:{tenant7}"}},
		{"middle identity", []string{"tb:tenant:7", "sw:tenant:7:x"}, "tenant:7", []string{"tb:{tenant:7}", "sw:{tenant:7}:x"}},
		{"one letter is not an identity", []string{"rl:a:x:1", "rl:b:x:2"}, "", nil},
		{"one letter of two bytes is not either", []string{"rl:{ü}:a", "rl:ü:b"}, "", nil},
		{"two letters of UTF-8", []string{"rl:{üb}:a", "rl:üb:b"}, "üb", []string{"rl:{üb}:a", "rl:{üb}:b"}},
		{"namespace only", []string{"rl:user:42", "rl:global"}, "", nil},
		{"edge segment only", []string{"rl:user:42:minute", "rl:global:minute"}, "", nil},
		{"nothing shared", []string{"foo", "bar"}, "", nil},
		{"substring is not a segment", []string{"rl:acmex:a", "rl:acme:b"}, "", nil},
		{"one key", []string{"rl:acme:a"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag, fixed, ok := SharedTag(tt.keys)
			if ok != (tt.tag != "") || tag != tt.tag || !slices.Equal(fixed, tt.fixed) {
				t.Fatalf("SharedTag(%q) = %q, %q, %v; want %q, %q", tt.keys, tag, fixed, ok, tt.tag, tt.fixed)
			}
			if ok {
				checkSharedTag(t, tt.keys, tag, fixed)
			}
		})
	}
}

// TestSameSlotFixAcme is the case of the issue: one key tagged, the other
// holding the same word untagged.
func TestSameSlotFixAcme(t *testing.T) {
	g := CheckGroup([]string{"rl:{acme}:a", "rl:acme:b"})
	if !g.Crossslot || !strings.Contains(g.Fix, "rl:{acme}:a rl:{acme}:b") || strings.Contains(g.Fix, "no identity") {
		t.Errorf("CheckGroup(rl:{acme}:a rl:acme:b).Fix = %q, want the proposal rl:{acme}:b", g.Fix)
	}
}

// checkSharedTag: the proposals hash to one slot, carry tag, and differ
// from the keys only in braces.
func checkSharedTag(t *testing.T, keys []string, tag string, fixed []string) {
	t.Helper()
	if len(fixed) != len(keys) {
		t.Fatalf("SharedTag(%q) proposes %d keys", keys, len(fixed))
	}
	noBraces := strings.NewReplacer("{", "", "}", "")
	for i, f := range fixed {
		if Slot(f) != Slot(fixed[0]) || Hashed(f) != tag {
			t.Errorf("SharedTag(%q): %q in slot %d hashes %q, %q in slot %d", keys, f, Slot(f), Hashed(f), fixed[0], Slot(fixed[0]))
		}
		if noBraces.Replace(f) != noBraces.Replace(keys[i]) {
			t.Errorf("SharedTag(%q): %q changes more than braces of %q", keys, f, keys[i])
		}
	}
	if g := CheckGroup(fixed); g.Crossslot {
		t.Errorf("SharedTag(%q) proposes %q, which still span slots %v", keys, fixed, g.Slots)
	}
}

// TestSharedTagProperty: for random keys that share a segment in their
// middle (some with it as their tag), a tag is proposed and the proposal
// shares a slot.
func TestSharedTagProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 13))
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	word := func(lo, hi int) string {
		b := make([]byte, lo+r.IntN(hi-lo+1))
		for i := range b {
			b[i] = alnum[r.IntN(len(alnum))]
		}
		return string(b)
	}
	seps := ":/._-|"
	crossed := 0
	for range 3000 {
		shared := word(2, 8)
		keys := make([]string, 2+r.IntN(4))
		for i := range keys {
			var b strings.Builder
			for range 1 + r.IntN(3) {
				b.WriteString(word(1, 6))
				b.WriteByte(seps[r.IntN(len(seps))])
			}
			if r.IntN(4) == 0 {
				b.WriteString("{" + shared + "}")
			} else {
				b.WriteString(shared)
			}
			for range 1 + r.IntN(3) {
				b.WriteByte(seps[r.IntN(len(seps))])
				b.WriteString(word(1, 6))
			}
			keys[i] = b.String()
		}
		if !CheckGroup(keys).Crossslot {
			continue
		}
		crossed++
		tag, fixed, ok := SharedTag(keys)
		if !ok {
			t.Fatalf("SharedTag(%q) proposes nothing, though every key holds %q", keys, shared)
		}
		checkSharedTag(t, keys, tag, fixed)
	}
	if crossed < 2000 {
		t.Fatalf("only %d of 3000 random groups spanned slots", crossed)
	}
}

// FuzzSharedTag: SharedTag never panics, and what it proposes shares a
// slot and changes only braces.
func FuzzSharedTag(f *testing.F) {
	f.Add("rl:{acme}:a", "rl:acme:b")
	f.Add("rl:{user:42}:minute", "rl:user:42:day")
	f.Add("{}acme:x", "a{:acme:b")
	f.Add("", "{")
	f.Fuzz(func(t *testing.T, a, b string) {
		keys := []string{a, b}
		tag, fixed, ok := SharedTag(keys)
		if ok {
			checkSharedTag(t, keys, tag, fixed)
		}
		_ = CheckGroup(keys)
	})
}
