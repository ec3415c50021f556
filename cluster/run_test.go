package cluster

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestReadKeys(t *testing.T) {
	long := strings.Repeat("k", 200000)
	in := "a\r\n\nb c\n{x}\xff\n" + long + "\nlast"
	got, err := ReadKeys(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b c", "{x}\xff", long, "last"}
	if !slices.Equal(got, want) {
		t.Errorf("ReadKeys = %q, want %q", got, want)
	}
	if got, _ := ReadKeys(strings.NewReader("\n\n")); len(got) != 0 {
		t.Errorf("ReadKeys of blank lines = %q, want none", got)
	}
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
		Scripts:  []Script{{File: "ok.lua", Src: []byte("return redis.call('GET', KEYS[1])")}, {File: "bad.lua", Src: []byte("\nreturn redis.call('GET', ARGV[1])")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "keyslot" || res.Version != 1 || res.Verdict != "fail" || res.Server != nil || res.Topology != nil {
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
	if len(res.Reasons) != 2 {
		t.Errorf("reasons = %q, want CROSSSLOT and lint", res.Reasons)
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
