package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/cluster/live"
	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/lualint"
	"github.com/ratelimit-dev/ratelimit/lualint/lint"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

func ksOfflineResult(t *testing.T) cluster.Result {
	t.Helper()
	res, err := cluster.Run(t.Context(), cluster.Options{
		Keys:     []string{"rl:user:42:minute", "rl:global:minute", "foo{hash_tag}", "a key {with space}", "\xff\x00bin", ""},
		SameSlot: true,
		Groups: []cluster.Group{
			{Keys: []string{"rl:{user:42}:minute", "rl:{user:42}:day"}, File: "groups.txt", Line: 1},
			{Keys: []string{"rl:user:7:tb", "rl:user:7:sw"}, File: "groups.txt", Line: 3},
		},
		Scripts: []lint.ScriptReport{
			lualint.Lint("eval/ok.lua", []byte("local key = KEYS[1]\nreturn redis.call('INCR', key)\n")),
			lualint.Lint("bad,1.lua", []byte("redis.call('INCR', 'rl:global')\nreturn redis.call('GET', ARGV[1])\n")),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// ksLiveResult is what a run against a 3-primary cluster looks like; the
// topology is built from a CLUSTER SLOTS reply.
func ksLiveResult(t *testing.T) cluster.Result {
	t.Helper()
	top := live.FromSlots([]redis.ClusterSlot{
		{Start: 0, End: 5460, Nodes: []redis.ClusterNode{{Addr: "127.0.0.1:7101"}, {Addr: "127.0.0.1:7104"}}},
		{Start: 5461, End: 10922, Nodes: []redis.ClusterNode{{Addr: "127.0.0.1:7102"}}},
		{Start: 10923, End: 16383, Nodes: []redis.ClusterNode{{Addr: "127.0.0.1:7103"}}},
	})
	srv := redisconn.Server{Product: "redis", Version: "7.0.15", Mode: "cluster", Primaries: 3, Addr: "redis://127.0.0.1:7101", Embedded: false}
	res := cluster.Result{Header: testHeader(cluster.Kind, cluster.Version, &srv, "--redis", "redis://127.0.0.1:7101", "--verify"), Topology: top,
		Groups: []cluster.Group{}, Scripts: []lint.ScriptReport{}, Findings: []lint.Finding{}}
	for i, k := range []string{"rl:{user:42}:tb", "somekey", "123456789"} {
		tag, ok := cluster.Tag(k)
		s := cluster.Slot(k)
		server := s
		if i == 2 {
			server = 1 // a mismatch, to render one
		}
		sh := top.Owner(s)
		res.Keys = append(res.Keys, cluster.Key{Key: k, Tag: tag, Tagged: ok, Slot: s, Node: sh.Primary, Replicas: sh.Replicas, ServerSlot: &server})
	}
	res.Verify = &cluster.Verify{Checked: 3, Mismatches: 1}
	tpl, err := cluster.ParseTemplate("rl:{tenant}:tb:%d")
	if err != nil {
		t.Fatal(err)
	}
	sp := cluster.SpreadOf(tpl, 1, 1000, top)
	res.Spread = &sp
	split, err := cluster.ProposeSplit("rl:{tenant:7}:tb", 4, top)
	if err != nil {
		t.Fatal(err)
	}
	split.SetRate(rate.Rate{Count: 1000, Per: time.Second})
	res.Split = &split
	res.Checks = cluster.Checks(res)
	res.Verdict = doc.Verdict(res.Checks)
	return res
}

func TestKeyslotGolden(t *testing.T) {
	cases := map[string]cluster.Result{"offline": ksOfflineResult(t), "live": ksLiveResult(t)}
	for name, res := range cases {
		t.Run(name, func(t *testing.T) {
			var text, color, js, ju, gh bytes.Buffer
			if err := KeyslotText(&text, res, Options{}); err != nil {
				t.Fatal(err)
			}
			golden(t, "keyslot_"+name+".txt.golden", text.Bytes())
			if err := KeyslotText(&color, res, Options{Color: true}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(color.Bytes(), []byte("\x1b[")) || bytes.Contains(text.Bytes(), []byte("\x1b[")) {
				t.Errorf("colour: ANSI escapes with Color %v, without %v", bytes.Contains(color.Bytes(), []byte("\x1b[")), bytes.Contains(text.Bytes(), []byte("\x1b[")))
			}
			if err := JSON(&js, res); err != nil {
				t.Fatal(err)
			}
			golden(t, "keyslot_"+name+".json.golden", js.Bytes())
			if err := KeyslotJUnit(&ju, res); err != nil {
				t.Fatal(err)
			}
			golden(t, "keyslot_"+name+".junit.golden", ju.Bytes())
			if err := KeyslotGitHub(&gh, res); err != nil {
				t.Fatal(err)
			}
			golden(t, "keyslot_"+name+".github.golden", gh.Bytes())

			var back cluster.Result
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatalf("json does not read back: %v", err)
			}
			if back.Kind != "keyslot" || back.Version != 2 || back.Verdict != res.Verdict || len(back.Keys) != len(res.Keys) {
				t.Errorf("json read back: kind %q version %d verdict %q keys %d", back.Kind, back.Version, back.Verdict, len(back.Keys))
			}
			var suites junitSuites
			if err := xml.Unmarshal(ju.Bytes(), &suites); err != nil {
				t.Fatalf("junit does not parse: %v", err)
			}
			want := len(res.Groups) + len(res.Scripts)
			if res.Verify != nil {
				want++
			}
			if suites.Tests != want || len(suites.Suites[0].Cases) != want {
				t.Errorf("junit has %d testcases, want %d", suites.Tests, want)
			}
		})
	}
}

func TestKeyslotGitHubAnnotations(t *testing.T) {
	var b bytes.Buffer
	if err := KeyslotGitHub(&b, ksOfflineResult(t)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"::error file=bad%2C1.lua,line=1,title=keyslot%3A key not from KEYS::redis.call(INCR ...) argument 1: 'rl:global' is a string literal",
		"::error file=bad%2C1.lua,line=2,",
		"::error file=groups.txt,line=3,title=keyslot%3A CROSSSLOT::keys rl:user:7:tb rl:user:7:sw span slots",
		"::error title=keyslot%3A CROSSSLOT::keys rl:user:42:minute",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("github output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "::error") != 4 {
		t.Errorf("github output has %d errors, want 4 (2 findings, 2 CROSSSLOT groups):\n%s", strings.Count(out, "::error"), out)
	}
}

// TestKeyslotJSONMatchesJSON pins the streaming writer to report.JSON.
func TestKeyslotJSONMatchesJSON(t *testing.T) {
	live := ksLiveResult(t)
	noKeys := ksOfflineResult(t)
	noKeys.Keys = []cluster.Key{}
	for name, res := range map[string]cluster.Result{"offline": ksOfflineResult(t), "live": live, "no keys": noKeys} {
		var a, b bytes.Buffer
		if err := JSON(&a, res); err != nil {
			t.Fatal(err)
		}
		if err := KeyslotJSON(&b, res); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s: KeyslotJSON differs from JSON:\n%s\n---\n%s", name, b.String(), a.String())
		}
	}
}

func FuzzKeyslotJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "<&>", "\x00\x1f\x7f", "\xff\xfe", "\u2028\u2029", "é日本", "\t\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := ksAppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("ksAppendJSONString(%q) = %s, want %s", s, got, want)
		}
		k := cluster.Key{Key: s, Tag: s, Slot: 3, Node: s, Replicas: []string{s, "x"}}
		var a, b bytes.Buffer
		res := cluster.Result{Header: testHeader(cluster.Kind, cluster.Version, nil), Keys: []cluster.Key{k, k}}
		_ = JSON(&a, res)
		_ = KeyslotJSON(&b, res)
		if a.String() != b.String() {
			t.Fatalf("key %q: KeyslotJSON differs from JSON:\n%s\n---\n%s", s, b.String(), a.String())
		}
	})
}
