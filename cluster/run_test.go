package cluster

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/lualint"
	"github.com/ratelimit-dev/ratelimit/lualint/lint"
)

func TestReadKeys(t *testing.T) {
	long := strings.Repeat("k", 200000)
	in := "a\r\n\nb c\n{x}\xff\n" + long + "\n# a comment\n  # indented comment\n \t \n \x00pad \nlast"
	got, err := ReadKeys(strings.NewReader(in), "keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b c", "{x}\xff", long, " \x00pad ", "last"}
	if !slices.Equal(got, want) {
		t.Errorf("ReadKeys = %q, want %q", got, want)
	}
	if got, _ := ReadKeys(strings.NewReader("\n\n# only comments\n  \n"), "keys.txt"); len(got) != 0 {
		t.Errorf("ReadKeys of blank and comment lines = %q, want none", got)
	}
}

// zeros is an endless stream of NUL bytes without a newline, as /dev/zero
// is; it counts what was read.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestReadLimits: a line longer than MaxLine (an endless one too) is
// refused naming its line, after reading little more than MaxLine, and a
// file of more than MaxKeys keys is refused.
func TestReadLimits(t *testing.T) {
	for name, read := range map[string]func(r io.Reader) error{
		"keys":   func(r io.Reader) error { _, err := ReadKeys(r, "f.txt"); return err },
		"groups": func(r io.Reader) error { _, err := ReadGroups(r, "f.txt"); return err },
	} {
		z := &zeros{}
		err := read(io.MultiReader(strings.NewReader("a\n# c\nb\n"), z))
		if err == nil || !strings.Contains(err.Error(), "f.txt:4: line longer than 1 MiB") {
			t.Errorf("%s: endless line: error %v, want one naming f.txt:4 and the 1 MiB limit", name, err)
		}
		if z.n > 4*MaxLine {
			t.Errorf("%s: read %d bytes of an endless line, want about %d", name, z.n, MaxLine)
		}
		exact := strings.Repeat("k", MaxLine) + "\r\n"
		if err := read(strings.NewReader(exact)); err != nil {
			t.Errorf("%s: a line of exactly MaxLine bytes: %v", name, err)
		}
		if err := read(strings.NewReader(exact[:MaxLine] + "k\n")); err == nil {
			t.Errorf("%s: a line of MaxLine+1 bytes was accepted", name)
		}
	}
	many := strings.Repeat("k\n", MaxKeys)
	if keys, err := ReadKeys(strings.NewReader(many), "f.txt"); err != nil || len(keys) != MaxKeys {
		t.Errorf("ReadKeys of MaxKeys keys = %d keys, %v", len(keys), err)
	}
	if _, err := ReadKeys(strings.NewReader(many+"k\n"), "f.txt"); err == nil || !strings.Contains(err.Error(), "more than 1000000 keys") {
		t.Errorf("ReadKeys of MaxKeys+1 keys: error %v", err)
	}
	if _, err := ReadGroups(strings.NewReader(strings.Repeat("a b\n", MaxKeys/2)+"c\n"), "g.txt"); err == nil || !strings.Contains(err.Error(), "more than 1000000 keys") {
		t.Errorf("ReadGroups of MaxKeys+1 keys: error %v", err)
	}
}

func FuzzReadKeys(f *testing.F) {
	f.Add("a\r\n\nb c\n# x\n{x}\xff\n last")
	f.Add("\r\r\n\n\x00#")
	f.Fuzz(func(t *testing.T, in string) {
		keys, err := ReadKeys(strings.NewReader(in), "f")
		if err != nil {
			t.Fatalf("ReadKeys(%q): %v", in, err) // short input: never an error
		}
		if len(keys) > strings.Count(in, "\n")+1 {
			t.Fatalf("ReadKeys(%q) = %d keys from fewer lines", in, len(keys))
		}
		for _, k := range keys {
			if strings.Contains(k, "\n") || strings.HasSuffix(k, "\r") && !strings.Contains(in, k+"\r") || skipLine(k) {
				t.Fatalf("ReadKeys(%q) key %q: a newline, a CR it should have dropped, or a blank/comment line", in, k)
			}
			if !strings.Contains(in, k) {
				t.Fatalf("ReadKeys(%q) key %q is not in the input", in, k)
			}
		}
	})
}

func FuzzReadGroups(f *testing.F) {
	f.Add("# comment\nrl:{u:1}:a rl:{u:1}:b\n\n  \"key with space\" '{x}'\r\nbad \"quote\n")
	f.Add("\"\\x41\\xzz\" 'it\\'s'\n\t\n")
	f.Fuzz(func(t *testing.T, in string) {
		groups, err := ReadGroups(strings.NewReader(in), "g")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "g:") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("ReadGroups(%q) error %q does not start with g:LINE or has several lines", in, err)
			}
			return
		}
		last := 0
		for _, g := range groups {
			if g.Line <= last || len(g.Keys) == 0 || g.File != "g" {
				t.Fatalf("ReadGroups(%q) group %+v after line %d", in, g, last)
			}
			last = g.Line
		}
	})
}

func TestReadGroups(t *testing.T) {
	in := "# comment\nrl:{u:1}:a rl:{u:1}:b\n\n  \"key with space\" '{x}'\r\nbad \"quote\n"
	_, err := ReadGroups(strings.NewReader(in), "g.txt")
	if err == nil || !strings.Contains(err.Error(), "g.txt:5") {
		t.Fatalf("ReadGroups error = %v, want one naming g.txt:5", err)
	}
	gs, err := ReadGroups(strings.NewReader(in[:strings.Index(in, "bad")]), "g.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].Line != 2 || gs[1].Line != 4 || !slices.Equal(gs[1].Keys, []string{"key with space", "{x}"}) {
		t.Errorf("ReadGroups = %+v", gs)
	}
}

func TestRunOffline(t *testing.T) {
	res, err := Run(t.Context(), Options{
		Keys:     []string{"rl:user:42:minute", "rl:global:minute", "\xff{a}"},
		SameSlot: true,
		Groups:   []Group{{Keys: []string{"rl:{u}:a", "rl:{u}:b"}, File: "g", Line: 3}},
		Scripts:  []lint.ScriptReport{lualint.Lint("ok.lua", []byte("return redis.call('GET', KEYS[1])")), lualint.Lint("bad.lua", []byte("\nreturn redis.call('GET', ARGV[1])"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "keyslot" || res.Version != 2 || res.Verdict != "fail" || res.Server != nil || res.Topology != nil {
		t.Errorf("Run: kind %s version %d verdict %s server %v", res.Kind, res.Version, res.Verdict, res.Server)
	}
	if len(res.Groups) != 2 || !res.Groups[0].Crossslot || res.Groups[1].Crossslot || res.Groups[1].Line != 3 {
		t.Errorf("groups = %+v", res.Groups)
	}
	if len(res.Findings) != 1 || res.Findings[0].File != "bad.lua" || res.Findings[0].Line != 2 {
		t.Errorf("findings = %+v", res.Findings)
	}
	if res.Keys[2].KeyBase64 != "/3thfQ==" || res.Keys[2].Tag != "a" || res.Keys[0].KeyBase64 != "" {
		t.Errorf("binary key = %+v", res.Keys[2])
	}
	if len(res.Reasons()) != 2 {
		t.Errorf("reasons = %q, want CROSSSLOT and lint", res.Reasons())
	}
}

// TestRunWithServerAnswers: Run places keys on the Topology it is given
// and verifies them against the ServerSlots it is given, still offline.
func TestRunWithServerAnswers(t *testing.T) {
	top := NewTopology("test", []Shard{
		{Primary: "127.0.0.1:7001", Ranges: [][2]int{{0, 8191}}},
		{Primary: "127.0.0.1:7002", Replicas: []string{"127.0.0.1:7003"}, Ranges: [][2]int{{8192, Slots - 1}}},
	})
	keys := []string{"foo{hash_tag}", "somekey"} // slots 2515 and 11058
	res, err := Run(t.Context(), Options{Keys: keys, Topology: top, ServerSlots: []int{2515, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Topology != top || res.Keys[0].Node != "127.0.0.1:7001" || res.Keys[1].Node != "127.0.0.1:7002" ||
		!slices.Equal(res.Keys[1].Replicas, []string{"127.0.0.1:7003"}) {
		t.Errorf("placement = %+v on %+v", res.Keys, res.Topology)
	}
	if res.Verify == nil || *res.Verify != (Verify{Checked: 2, Mismatches: 1}) || *res.Keys[1].ServerSlot != 1 {
		t.Fatalf("verify = %+v, keys %+v; want 2 checked, 1 mismatch", res.Verify, res.Keys)
	}
	if last := res.Checks[len(res.Checks)-1]; last.ID != "verify" || last.Pass || res.Verdict != "fail" {
		t.Errorf("checks = %+v, verdict %s; want a failed verify", res.Checks, res.Verdict)
	}
	if _, err := Run(t.Context(), Options{Keys: keys, ServerSlots: []int{2515}}); err == nil {
		t.Error("Run with 1 server slot for 2 keys: no error")
	}
}
