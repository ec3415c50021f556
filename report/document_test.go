package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/cluster/live"
	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/lualint"
	"github.com/ratelimit-dev/ratelimit/lualint/lint"
	"github.com/ratelimit-dev/ratelimit/race"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// The fixed documents in testdata/*.json are the inputs of the golden tests
// of every format here and of the `ratelimit report` command tests. They
// are written from the builders below (go test ./report -update), so they
// follow the Go types.

// fixtureLoad is 20/s for 10 s against a token bucket of 10 at 5/s, judged
// with --expect token-bucket:burst=10,rate=5/s: the admitted count fits,
// but 3 of 200 requests failed (a threshold breach) and two 429s came
// without Retry-After.
func fixtureLoad(t *testing.T) *tally.Result {
	t.Helper()
	lim, err := limiter.NewLimiter(limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}, Cost: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := lim.Model()
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	timeline := make([]tally.Second, 10)
	for i := range timeline {
		timeline[i] = tally.Second{Second: i, Status: map[string]int64{}}
	}
	var allowed int64
	perSec := make([]int64, 10)
	for i := range 200 {
		at := int64(i) * 50
		st := "429"
		if m.Allow(start.UnixMilli()+at, 1).Allowed {
			st = "200"
			allowed++
			perSec[at/1000]++
		}
		timeline[at/1000].Status[st]++
	}
	// Three failures replace refusals: a 500 in second 3, two timeouts in 6.
	timeline[3].Status["429"]--
	timeline[3].Status["500"] = 1
	timeline[6].Status["429"] -= 2
	timeline[6].Status["error"] = 2
	limited := 200 - allowed - 3
	return &tally.Result{
		Kind: "load", Version: 1,
		Header: testHeader(tally.Kind, tally.Version, nil, "--target", "http://127.0.0.1:8011/hello?team=a|b", "--rate", "20/s", "--duration", "10s",
			"--expect", "token-bucket:burst=10,rate=5/s", "--out", "load.json"),
		Target: "http://127.0.0.1:8011/hello?team=a|b", Method: "GET", StartedAt: start,
		Rate: "20/s", RatePerS: 20, DurationS: 10, ElapsedS: 9.962, TimeoutS: 10, Identities: 1, RunID: "5f2c9a1e",
		Planned: 200, Sent: 200, Completed: 200, Responses: 198, AchievedRate: 20,
		Status:  map[string]int64{"200": allowed, "429": limited, "500": 1},
		Allowed: allowed, RateLimited: limited, RateLimitedPct: 100 * float64(limited) / 198, Failed: 3, FailedPct: 1.5,
		Errors:         map[string]int64{"timeout": 2},
		Timeline:       timeline,
		Latency:        tally.Latency{Count: 200, Min: 0.21, Mean: 0.52, P50: 0.41, P90: 0.66, P99: 1.9, Max: 10000},
		LatencyFromDue: tally.Latency{Count: 200, Min: 0.25, Mean: 0.61, P50: 0.49, P90: 0.75, P99: 2.3, Max: 10000.4},
		Lateness:       tally.Latency{Count: 200, Min: 0.01, Mean: 0.07, P50: 0.05, P90: 0.09, P99: 0.4, Max: 0.9},
		LatencyHistogram: &tally.Histogram{Unit: "ms", Buckets: []tally.Bucket{
			{LeMs: 0.3, Count: 30}, {LeMs: 0.5, Count: 120}, {LeMs: 1, Count: 44}, {LeMs: 2, Count: 4},
			{LeMs: 3}, {LeMs: 5}, {LeMs: 10}, {LeMs: 20}, {LeMs: 30}, {LeMs: 50}, {LeMs: 100}, {LeMs: 200}, {LeMs: 300},
			{LeMs: 500}, {LeMs: 1000}, {LeMs: 2000}, {LeMs: 3000}, {LeMs: 5000}, {LeMs: 10000, Count: 2},
		}},
		LatencyFromDueHistogram: &tally.Histogram{Unit: "ms", Buckets: []tally.Bucket{
			{LeMs: 0.3, Count: 20}, {LeMs: 0.5, Count: 110}, {LeMs: 1, Count: 62}, {LeMs: 2, Count: 4}, {LeMs: 3, Count: 2},
			{LeMs: 5}, {LeMs: 10}, {LeMs: 20}, {LeMs: 30}, {LeMs: 50}, {LeMs: 100}, {LeMs: 200}, {LeMs: 300},
			{LeMs: 500}, {LeMs: 1000}, {LeMs: 2000}, {LeMs: 3000}, {LeMs: 5000}, {LeMs: 10000}, {LeMs: 20000, Count: 2},
		}},
		VUs: tally.VUStats{PreAllocated: 10, Max: 100, Peak: 10, MaxBusy: 3},
		Headers: tally.Headers{
			Responses:   198,
			RateLimit:   tally.FieldStat{Checked: 198, Present: 198, Valid: 198},
			Policy:      tally.FieldStat{Checked: 198, Present: 198, Valid: 198},
			RetryAfter:  tally.FieldStat{Checked: limited, Present: limited - 2, Valid: limited - 2, Example: "invalid rate limit header: Retry-After is missing"},
			PolicyValue: `"default";q=10;w=2`,
		},
		Thresholds: []judge.ThresholdCheck{{Name: "failed", Limit: "1%", Actual: "1.50%", Pass: false}},
		Expect: &judge.Judged{
			Model: "token-bucket:burst=10,rate=5/s", Description: "token bucket 10 + 5/s",
			Expected: allowed, Observed: allowed, Of: 200, Tolerance: 3, OverMs: 9950, Pass: true,
			ExpectedPerSecond: perSec,
			Tol:               judge.Tolerance{Jitter: 1, Rounding: 1, Unknown: 2},
		},
		Verdict:         "fail",
		VerdictMessages: []string{"threshold failed: 1.50% > 1%"},
	}
}

// fixtureRace is three trials of every built-in strategy and a user script
// that admits everything, on a 3-primary cluster.
func fixtureRace() race.Result {
	yes := true
	strat := func(name, label string, atomic bool, admitted []int, limit int) race.Strategy {
		s := race.Strategy{Name: name, Label: label, AtomicExpected: atomic, Allowed: admitted}
		for t, a := range admitted {
			s.OverLimit = append(s.OverLimit, max(a-limit, 0))
			v := int64(min(a, limit))
			if !atomic {
				v = int64(3 + t)
			}
			s.FinalValue = append(s.FinalValue, &v)
			lost := int64(a) - v
			s.LostUpdates = append(s.LostUpdates, &lost)
			s.Retries = append(s.Retries, 0)
			s.GiveUps = append(s.GiveUps, 0)
			s.Errors = append(s.Errors, 0)
			s.TrialP50Ms = append(s.TrialP50Ms, float64(900+100*t)/1000)
			s.TrialP99Ms = append(s.TrialP99Ms, float64(3100+200*t)/1000)
			s.WallMs = append(s.WallMs, float64(4000+300*t)/1000)
		}
		s.AllowedMin, s.AllowedMax = admitted[0], admitted[0]
		for _, a := range admitted {
			s.AllowedMin, s.AllowedMax = min(s.AllowedMin, a), max(s.AllowedMax, a)
		}
		sorted := slices.Sorted(slices.Values(admitted))
		s.AllowedMedian = float64(sorted[len(sorted)/2])
		s.P50Ms, s.P99Ms = 1, 3.3
		return s
	}
	naive := strat("naive", "naive GET+SET", false, []int{200, 196, 200}, 10)
	multi := strat("multi", "GET+MULTI/SET", false, []int{187, 200, 194}, 10)
	watch := strat("watch", "WATCH/MULTI", true, []int{10, 10, 10}, 10)
	watch.Retries = []int{1043, 998, 1101}
	watch.GiveUps = []int{0, 2, 0}
	incr := strat("incr", "INCR", true, []int{10, 10, 10}, 10)
	script := strat("script", "Lua script", true, []int{10, 10, 10}, 10)
	user := strat("user", "always|`ok`.lua", true, []int{200, 200, 200}, 10)
	user.ScriptFile = "scripts/always|`ok`.lua"
	user.FinalValue, user.LostUpdates = []*int64{nil, nil, nil}, []*int64{nil, nil, nil}
	res := race.Result{
		Header: testHeader(race.Kind, race.Version, &redisconn.Server{Product: "redis", Version: "7.0.15", Mode: "cluster", Primaries: 3, Addr: "redis://127.0.0.1:7101"},
			"--redis", "redis://ops:xxxxx@127.0.0.1:7101", "--script", "scripts/always|`ok`.lua", "--out", "race.json"),
		RunID: "3f9a1c2b7d4e", KeyPattern: "race:{3f9a1c2b7d4e}:*", Node: "127.0.0.1:7102",
		Concurrency: 200, Limit: 10, Trials: 3, WatchAttempts: 10,
		Strategies:     []race.Strategy{naive, multi, watch, incr, script, user},
		RaceReproduced: &yes,
		Notes:          []string{"WATCH/MULTI: 2 requests gave up after 10 attempts"},
	}
	res.Checks = race.Checks(res)
	res.Verdict = doc.Verdict(res.Checks)
	return res
}

// fixtureKeyslot is a keyslot run against a 3-primary cluster: keys (one
// with characters that need escaping everywhere), two groups of which one
// spans slots, two linted scripts of which one has findings, and the spread
// of a template over the primaries.
func fixtureKeyslot(t *testing.T) cluster.Result {
	t.Helper()
	tpl, err := cluster.ParseTemplate("rl:{tenant:%d}:tb")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cluster.Run(t.Context(), cluster.Options{
		Keys: []string{"rl:{user:42}:tb", "rl:user:42:tb", "somekey", "<b>a|b`c</b>", "123456789"},
		Groups: []cluster.Group{
			{Keys: []string{"rl:{user:42}:minute", "rl:{user:42}:day"}, File: "groups.txt", Line: 1},
			{Keys: []string{"rl:user:7:minute", "rl:global:minute"}, File: "groups.txt", Line: 2},
		},
		Scripts: []lint.ScriptReport{
			lualint.Lint("lua/ok.lua", []byte("local key = KEYS[1]\nreturn redis.call('INCR', key)\n")),
			lualint.Lint("lua/bad.lua", []byte("redis.call('INCR', 'rl:global')\nreturn redis.call('GET', ARGV[1])\n")),
		},
		Template: &tpl, From: 1, To: 20000,
	})
	if err != nil {
		t.Fatal(err)
	}
	top := live.FromSlots([]redis.ClusterSlot{
		{Start: 0, End: 5460, Nodes: []redis.ClusterNode{{Addr: "127.0.0.1:7101"}, {Addr: "127.0.0.1:7104"}}},
		{Start: 5461, End: 10922, Nodes: []redis.ClusterNode{{Addr: "127.0.0.1:7102"}, {Addr: "127.0.0.1:7105"}}},
		{Start: 10923, End: 16383, Nodes: []redis.ClusterNode{{Addr: "127.0.0.1:7103"}, {Addr: "127.0.0.1:7106"}}},
	})
	res.Topology = top
	res.Header = testHeader(cluster.Kind, cluster.Version, &redisconn.Server{Product: "redis", Version: "7.0.15", Mode: "cluster", Primaries: 3, Addr: "redis://127.0.0.1:7101"},
		"--redis", "redis://127.0.0.1:7101", "--groups", "groups.txt", "--script", "lua/ok.lua", "lua/bad.lua", "--template", "rl:{tenant:%d}:tb", "--range", "1-20000", "-o", "json")
	for i := range res.Keys {
		sh := top.Owner(res.Keys[i].Slot)
		res.Keys[i].Node, res.Keys[i].Replicas = sh.Primary, sh.Replicas
	}
	sp := cluster.SpreadOf(tpl, 1, 20000, top)
	res.Spread = &sp
	return res
}

// fixtures are the fixed documents by file name in testdata.
func fixtures(t *testing.T) map[string]any {
	return map[string]any{
		"load.json": fixtureLoad(t),
		// a pause the target failed open through, judged by --during-fault closed
		"load_fault.json": loadFault("closed"),
		"race.json":       fixtureRace(),
		"keyslot.json":    fixtureKeyslot(t),
		"eval.json":       tokenBucketResult(),
		"simulate.json":   simulateResult(),
		"probe.json":      fixtureProbe(),
		"failover.json":   fixtureFailover(),
		// the same run judged by --max-extra 5, which one trial exceeds
		"failover_fail.json": fixtureFailoverFail(),
		// keys and names with control bytes, for the terminal-safety goldens
		"hostile_eval.json":    hostileEval(),
		"hostile_keyslot.json": hostileKeyslot(t),
	}
}

// TestFixtureDocuments: every frozen input in testdata/*.json decodes as
// `ratelimit report` reads it, and writing it again and reading that
// back gives the same document. The fixtures are inputs, never rewritten
// by -update: the builders above wrote them once; a new one is a document
// a real command wrote (--out), copied in by hand.
func TestFixtureDocuments(t *testing.T) {
	for name := range fixtures(t) {
		d := readFixture(t, name)
		var b bytes.Buffer
		if err := JSON(&b, d.Value); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := Decode(b.Bytes())
		if err != nil {
			t.Fatalf("%s written again does not decode: %v", name, err)
		}
		var b2 bytes.Buffer
		if err := JSON(&b2, again.Value); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), b2.Bytes()) {
			t.Errorf("%s: writing and reading again changes the document:\n%s", name, lineDiff(b.String(), b2.String(), 3, 40))
		}
	}
}

// readFixture decodes testdata/name as `ratelimit report` does.
func readFixture(t *testing.T, name string) Document {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode(%s): %v", name, err)
	}
	d.Source = name
	return d
}

func TestDecode(t *testing.T) {
	kinds := map[string]string{"load.json": "load", "race.json": "race", "keyslot.json": "keyslot", "eval.json": "eval", "simulate.json": "simulate"}
	for name, kind := range kinds {
		d := readFixture(t, name)
		if d.Kind != kind || d.Version != 2 {
			t.Errorf("Decode(%s) = kind %q version %d, want %q 2", name, d.Kind, d.Version, kind)
		}
		if k, _, err := docKind(d.Value); err != nil || k != kind {
			t.Errorf("Decode(%s) value %T has kind %q (%v)", name, d.Value, k, err)
		}
	}
	full, err := os.ReadFile(filepath.Join("testdata", "load.json"))
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name, in, want string
	}{
		{"empty", "", "empty"},
		{"blank", " \n", "empty"},
		{"truncated", string(full[:len(full)/2]), "truncated"},
		{"truncated object", `{"kind": "load", "version": 1,`, "truncated"},
		{"not json", "kind: load\n", "not JSON"},
		{"array", `[{"kind":"load","version":1}]`, "foreign JSON"},
		{"string", `"load"`, "foreign JSON"},
		{"foreign object", `{"name": "x", "items": [1, 2]}`, "foreign JSON"},
		{"kind without version", `{"kind": "load"}`, "foreign JSON"},
		{"version not a number", `{"kind": "load", "version": "1"}`, "foreign JSON"},
		{"unknown kind", `{"kind": "bench", "version": 1}`, `unknown kind "bench"`},
		{"version 99", `{"kind": "load", "version": 99}`, "load document version 99 is not supported"},
		{"version 0", `{"kind": "race", "version": 0}`, "version 0"},
		{"wrong field type", `{"kind": "load", "version": 2, "sent": "many"}`, "sent is a string, want an integer"},
		{"wrong field type in version 1", `{"kind": "load", "version": 1, "sent": "many"}`, "sent is a string, want an integer"},
		{"version 3", `{"kind": "eval", "version": 3}`, "eval document version 3 is not supported (this ratelimit reads version 1, 2)"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("Decode(%q) succeeded", tt.in)
			}
			if !errors.Is(err, ErrDocument) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Decode(%q) = %q, want one line wrapping ErrDocument with %q", tt.in, err, tt.want)
			}
		})
	}
}

// goldenOptions pin the text renderers: no colour, a fixed width.
var goldenOptions = Options{Color: false, Width: 100}

// goldenTime pins the clock the HTML page shows.
var goldenTime = time.Date(2026, 12, 2, 12, 30, 0, 0, time.UTC)

// TestReportGolden renders every fixed document in every format it has.
func TestReportGolden(t *testing.T) {
	for _, name := range []string{"load", "load_fault", "race", "keyslot", "eval", "simulate", "probe", "failover", "failover_fail", "hostile_eval", "hostile_keyslot", "fingerprint", "suite"} {
		goldenEveryFormat(t, name, readFixture(t, name+".json"))
	}
}

// goldenEveryFormat renders d in every format of its kind but JSON (the
// input itself; TestFixtureDocuments pins it) and as a page, each held to
// testdata/report_NAME.FORMAT.golden.
func goldenEveryFormat(t *testing.T, name string, d Document) {
	t.Helper()
	for _, format := range Formats(d.Kind) {
		if format == "json" {
			continue
		}
		t.Run(name+"/"+format, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, format, d, goldenOptions); err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b.Bytes(), []byte("\x1b[")) {
				t.Errorf("%s output has ANSI escapes", format)
			}
			golden(t, "report_"+name+"."+format+".golden", b.Bytes())
		})
	}
	t.Run(name+"/html", func(t *testing.T) {
		var b bytes.Buffer
		if err := HTML(&b, []Document{d}, HTMLOptions{Generated: goldenTime}); err != nil {
			t.Fatal(err)
		}
		golden(t, "report_"+name+".html.golden", b.Bytes())
	})
}

// TestTextColor pins the colour profile: with Color the verdict carries
// ANSI colour and still the word.
func TestTextColor(t *testing.T) {
	d := readFixture(t, "race.json")
	var b bytes.Buffer
	if err := Render(&b, "text", d, Options{Color: true, Width: 100}); err != nil {
		t.Fatal(err)
	}
	golden(t, "report_race.color.golden", b.Bytes())
	if !bytes.Contains(b.Bytes(), []byte("\x1b[")) || !bytes.Contains(b.Bytes(), []byte("FAIL")) {
		t.Errorf("colour text lacks ANSI escapes or the FAIL word")
	}
}

func TestRenderRefusesFormat(t *testing.T) {
	d := readFixture(t, "eval.json")
	var b bytes.Buffer
	err := Render(&b, "pdf", d, Options{})
	if err == nil || !strings.Contains(err.Error(), "eval documents have no pdf output") || b.Len() != 0 {
		t.Errorf("Render(pdf, eval) = %v, wrote %d bytes", err, b.Len())
	}
	if err := Render(&b, "text", 42, Options{}); err == nil {
		t.Error("Render of an int succeeded")
	}
}

// The JUnit schema as CI systems read it, declared here independently of
// the renderer's types.
type xTestsuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []xTestsuite `xml:"testsuite"`
}

type xTestsuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []xTestcase `xml:"testcase"`
}

type xTestcase struct {
	Name      string    `xml:"name,attr"`
	Classname string    `xml:"classname,attr"`
	Time      float64   `xml:"time,attr"`
	Failure   *xFailure `xml:"failure"`
	Error     *xFailure `xml:"error"`
	Skipped   *struct{} `xml:"skipped"`
}

type xFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func TestJUnitParses(t *testing.T) {
	tests := []struct {
		file, suite string
		cases       int
		failing     []string // names of the testcases that must carry <failure>
		skipped     int
	}{
		{"race.json", "ratelimit race", 6, []string{"always|`ok`.lua (user)"}, 0},
		// thresholds 1, generator 1, headers 4, admitted count 1, verdict 1;
		// the verdict fails for the threshold, counted once (its testcase);
		// the missing Retry-After is a warning, not a failure
		{"load.json", "ratelimit load", 8, []string{"failed <= 1%"}, 0},
		// groups 2, scripts 2
		{"keyslot.json", "ratelimit keyslot", 4, []string{"groups.txt:2: rl:user:7:minute rl:global:minute", "lua/bad.lua"}, 0},
		// max-extra (its trials as the failure's text), max-extra-wait, cluster-ok, keys-deleted
		{"failover_fail.json", "ratelimit failover", 4, []string{"max-extra"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d := readFixture(t, tt.file)
			var b bytes.Buffer
			if err := Render(&b, "junit", d, Options{}); err != nil {
				t.Fatal(err)
			}
			var got xTestsuites
			if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
				t.Fatalf("junit does not parse: %v\n%s", err, b.String())
			}
			if len(got.Suites) != 1 || got.Suites[0].Name != tt.suite {
				t.Fatalf("suites = %+v, want one named %q", got.Suites, tt.suite)
			}
			s := got.Suites[0]
			if s.Tests != tt.cases || len(s.Cases) != tt.cases || got.Tests != tt.cases {
				t.Errorf("tests = %d (%d testcases, %d in all), want %d", s.Tests, len(s.Cases), got.Tests, tt.cases)
			}
			var failing []string
			skipped := 0
			for _, c := range s.Cases {
				if c.Name == "" || c.Classname == "" {
					t.Errorf("testcase without name or classname: %+v", c)
				}
				if c.Failure != nil {
					failing = append(failing, c.Name)
					if c.Failure.Message == "" || strings.TrimSpace(c.Failure.Text) == "" {
						t.Errorf("failure of %q lacks a message or text: %+v", c.Name, c.Failure)
					}
				}
				if c.Skipped != nil {
					skipped++
				}
			}
			if strings.Join(failing, "\n") != strings.Join(tt.failing, "\n") {
				t.Errorf("failing testcases = %q, want %q", failing, tt.failing)
			}
			if s.Failures != len(tt.failing) || got.Failures != len(tt.failing) || s.Errors != 0 || skipped != tt.skipped {
				t.Errorf("failures = %d/%d, errors %d, skipped %d; want %d, 0, %d", s.Failures, got.Failures, s.Errors, skipped, len(tt.failing), tt.skipped)
			}
		})
	}
	// All three in one report: one testsuite per document.
	var b bytes.Buffer
	if err := JUnit(&b, readFixture(t, "race.json"), readFixture(t, "load.json"), readFixture(t, "keyslot.json")); err != nil {
		t.Fatal(err)
	}
	var all xTestsuites
	if err := xml.Unmarshal(b.Bytes(), &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Suites) != 3 || all.Tests != 18 || all.Failures != 4 {
		t.Errorf("combined junit: %d suites, %d tests, %d failures; want 3, 18, 4", len(all.Suites), all.Tests, all.Failures)
	}
}

// TestJUnitLoadVerdictCountsOnce: a load run failed by one reason counts
// one failure; a reason no other testcase carries fails the verdict.
func TestJUnitLoadVerdictCountsOnce(t *testing.T) {
	failures := func(res *tally.Result) (int, string) {
		var b bytes.Buffer
		if err := LoadJUnit(&b, res); err != nil {
			t.Fatal(err)
		}
		var got xTestsuites
		if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		verdict := ""
		for _, c := range got.Suites[0].Cases {
			if c.Name == "verdict" && c.Failure != nil {
				verdict = c.Failure.Message
			}
		}
		return got.Failures, verdict
	}
	res := fixtureLoad(t)
	res.Headers.RetryAfter.Present, res.Headers.RetryAfter.Valid = res.RateLimited, res.RateLimited // only the threshold fails
	if n, v := failures(res); n != 1 || v != "" {
		t.Errorf("one failed threshold: %d failures, verdict %q; want 1, the verdict not failed again", n, v)
	}
	// no limiter seen, with --expect: a reason no other testcase carries
	res.RateLimited, res.Status = 0, map[string]int64{"200": res.Responses}
	res.Headers.RateLimit, res.Headers.Policy, res.Headers.RetryAfter = tally.FieldStat{}, tally.FieldStat{}, tally.FieldStat{}
	res.VerdictMessages = append(res.VerdictMessages, tally.NoLimiterNote)
	if n, v := failures(res); n != 2 || v != tally.NoLimiterNote {
		t.Errorf("no limiter seen: %d failures, verdict %q; want 2 and the verdict failing for it", n, v)
	}
}

func TestJUnitLoadStates(t *testing.T) {
	res := fixtureLoad(t)
	res.Verdict, res.Interrupted, res.VerdictMessages = "interrupted", true, nil
	res.RateLimited, res.Headers.RateLimit = 0, tally.FieldStat{}
	var b bytes.Buffer
	if err := LoadJUnit(&b, res); err != nil {
		t.Fatal(err)
	}
	var got xTestsuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	byName := map[string]xTestcase{}
	for _, c := range got.Suites[0].Cases {
		byName[c.Name] = c
	}
	if c := byName["verdict"]; c.Error == nil || !strings.Contains(c.Error.Message, "interrupted") {
		t.Errorf("interrupted verdict = %+v, want <error>", c)
	}
	for _, n := range []string{"RateLimit valid", "Retry-After on every 429", "429 not storable by caches"} {
		if byName[n].Skipped == nil {
			t.Errorf("%s = %+v, want <skipped> (nothing to check)", n, byName[n])
		}
	}
	if got.Errors != 1 {
		t.Errorf("errors = %d, want 1", got.Errors)
	}
}

func TestMarkdownEscapes(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a|b", `a\|b`},
		{"`x`", "\\`x\\`"},
		{"<b>*y*</b>", `\<b\>\*y\*\</b\>`},
		{"a\nb", `a\\nb`}, // shows as a\nb: the row does not end
		{"\x1b[31mred\x07ü", `\\x1b\[31mred\\x07ü`},
		{"&lt;", "&amp;lt;"},
	}
	for _, tt := range tests {
		if got := md(tt.in); got != tt.want {
			t.Errorf("md(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	codes := []struct{ in, want string }{
		{"rl:{user:42}:tb", "`rl:{user:42}:tb`"},
		{"a|b", "`a\\|b`"},
		{"a`b", "`` a`b ``"},
		{"``", "``` `` ```"},
		{"\x00\n", "`\\x00\\n`"},
		{"ü\x1b\xc2\x85\xff", "`ü\\x1b\\u0085\\xff`"},
		{"", "(empty)"},
	}
	for _, tt := range codes {
		if got := mdCode(tt.in); got != tt.want {
			t.Errorf("mdCode(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Every table row of the rendered documents has as many unescaped
	// pipes as its header row: no cell breaks out of its column.
	for _, name := range []string{"race.json", "keyslot.json", "load.json", "failover.json"} {
		var b bytes.Buffer
		if err := Markdown(&b, readFixture(t, name)); err != nil {
			t.Fatal(err)
		}
		cols := -1
		for _, line := range strings.Split(b.String(), "\n") {
			if !strings.HasPrefix(line, "|") {
				cols = -1
				continue
			}
			n := strings.Count(line, "|") - strings.Count(line, `\|`)
			if cols < 0 {
				cols = n
			} else if n != cols {
				t.Errorf("%s: row %q has %d cell separators, its table %d", name, line, n, cols)
			}
		}
	}
}

func TestHTMLSelfContained(t *testing.T) {
	var docs []Document
	for _, name := range []string{"load.json", "race.json", "keyslot.json", "eval.json", "simulate.json"} {
		docs = append(docs, readFixture(t, name))
	}
	docs[0].Source = `<script>alert("x")</script>.json`
	var b bytes.Buffer
	if err := HTML(&b, docs, HTMLOptions{Generated: goldenTime}); err != nil {
		t.Fatal(err)
	}
	page := strings.ToLower(b.String())
	for _, bad := range []string{"<script", "src=", "href=\"http", "href='http", "url(", "@import", "<link", "<iframe", "<img", "javascript:"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;.json",   // the source name, escaped
		"&lt;b&gt;a|b`c&lt;/b&gt;",                               // the keyslot key, escaped
		"<svg", "class=\"line-expected\"", "class=\"ref-limit\"", // the envelope and the limit line
		"admitted per strategy and trial", "keys given, per range of 256 slots", "keys per primary",
		"remaining after each call", "latency percentiles", "cumulative admitted",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(b.String(), "<section class=\"doc\""); n != len(docs) {
		t.Errorf("page has %d sections, want %d", n, len(docs))
	}
	// Well-formed enough for an XML parser: the SVG and the tables nest.
	dec := xml.NewDecoder(strings.NewReader(strings.TrimPrefix(b.String(), "<!DOCTYPE html>\n")))
	dec.Entity = xml.HTMLEntity
	for {
		_, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("page does not parse: %v", err)
			}
			break
		}
	}
}

// TestLoadExpected: the chart draws the verdict's own admissions per
// second, and nothing when the document has none (version 1, no --expect).
func TestLoadExpected(t *testing.T) {
	res := fixtureLoad(t)
	env, desc, ok := loadExpected(res)
	if !ok || desc != "token bucket 10 + 5/s" || len(env) != 10 {
		t.Fatalf("loadExpected = %v, %q, %v", env, desc, ok)
	}
	var sum float64
	for _, v := range env {
		sum += v
	}
	if int64(sum) != res.Expect.Expected {
		t.Errorf("expected per second sum to %v, the verdict expected %d", sum, res.Expect.Expected)
	}
	if env[0] < 14 || env[1] != 5 {
		t.Errorf("expected per second = %v, want the burst in second 0 and 5/s after", env)
	}
	var b strings.Builder
	loadHTML(&b, res)
	if !strings.Contains(b.String(), `class="line-expected"`) {
		t.Error("page lacks the expected line")
	}
	res.Expect.ExpectedPerSecond = nil // a document of version 1
	if _, _, ok := loadExpected(res); ok {
		t.Error("a document without expected_per_second has an expected line")
	}
	b.Reset()
	loadHTML(&b, res)
	if strings.Contains(b.String(), `class="line-expected"`) || !strings.Contains(b.String(), "documents written before version 2 do not") {
		t.Errorf("version 1 page draws an expected line or does not say why it has none")
	}
	res.Expect = nil
	if _, _, ok := loadExpected(res); ok {
		t.Error("a run without --expect has an expected line")
	}
}

func TestNiceCeil(t *testing.T) {
	tests := []struct{ in, top, step float64 }{
		{200, 200, 50}, {10, 10, 2}, {14, 15, 5}, {0, 1, 0.2}, {0.9, 1, 0.2}, {10000.4, 12500, 2500},
	}
	for _, tt := range tests {
		top, step := niceCeil(tt.in)
		if top != tt.top || step != tt.step {
			t.Errorf("niceCeil(%v) = %v, %v; want %v, %v", tt.in, top, step, tt.top, tt.step)
		}
	}
}

func TestFormatHelpers(t *testing.T) {
	if got := secs(7.952223973) + " " + secs(30) + " " + secs(0.5); got != "7.95s 30s 0.5s" {
		t.Errorf("secs = %q", got)
	}
	if got := pct(0.005); got != "0.500%" {
		t.Errorf("pct(0.005) = %q", got)
	}
	if got := pct(0.735); got != "73.5%" {
		t.Errorf("pct(0.735) = %q", got)
	}
	if got := countNoun(1, "key", "keys") + ", " + countNoun(2, "key", "keys") + ", " + plural(0, "trial", "trials"); got != "1 key, 2 keys, trials" {
		t.Errorf("countNoun/plural = %q", got)
	}
}

func TestHTMLLoadHistogram(t *testing.T) {
	withHist := fixtureLoad(t)
	without := fixtureLoad(t)
	without.LatencyHistogram, without.LatencyFromDueHistogram = nil, nil
	tests := []struct {
		name    string
		res     *tally.Result
		want    []string
		notWant []string
	}{
		{"with buckets", withHist,
			[]string{"<h3>Latency histogram</h3>", `aria-label="latency histogram"`, "from due time: 110 requests over 0.3 ms and at most 0.5 ms", "from send: 2 requests over 5000 ms and at most 10000 ms", "from due time: no request over 5000 ms", ">≤0.3<"},
			[]string{"not their buckets"}},
		{"without buckets", without,
			[]string{"not their buckets, so the percentiles are drawn as bars instead"},
			[]string{"<h3>Latency histogram</h3>", `aria-label="latency histogram"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			loadHTML(&b, tt.res)
			page := b.String()
			for _, w := range tt.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(page, w) {
					t.Errorf("page has %q", w)
				}
			}
		})
	}
}
