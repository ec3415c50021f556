package cluster

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/lualint"
	"github.com/ratelimit-dev/ratelimit/lualint/lint"
	"github.com/ratelimit-dev/ratelimit/redistest"
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
	if _, err := Run(t.Context(), Options{Keys: []string{"a"}, Verify: true}); !errors.Is(err, ErrNotCluster) {
		t.Errorf("Verify without a client: %v, want ErrNotCluster", err)
	}
}

func TestRunOnServers(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			srv := tg.Server
			keys := []string{"rl:{user:42}:tb", "somekey", ""}
			res, err := Run(t.Context(), Options{Keys: keys, Client: tg.Client, Server: &srv})
			if err != nil {
				t.Fatal(err)
			}
			_, verr := Run(t.Context(), Options{Keys: keys, Client: tg.Client, Server: &srv, Verify: true})
			if tg.Name != "cluster" {
				if res.Notice == "" || res.Keys[0].Node != "" || !strings.Contains(res.Notice, "not a Redis Cluster") {
					t.Errorf("on %s: notice %q node %q", tg.Name, res.Notice, res.Keys[0].Node)
				}
				if !errors.Is(verr, ErrNotCluster) {
					t.Errorf("verify on %s: %v, want ErrNotCluster", tg.Name, verr)
				}
				return
			}
			if verr != nil {
				t.Fatalf("verify: %v", verr)
			}
			if res.Notice != "" || res.Topology == nil {
				t.Fatalf("on cluster: notice %q topology %v", res.Notice, res.Topology)
			}
			for _, k := range res.Keys {
				if k.Node == "" || k.Node != res.Topology.Owner(k.Slot).Primary {
					t.Errorf("key %q slot %d shown on %q", k.Key, k.Slot, k.Node)
				}
			}
		})
	}
}
