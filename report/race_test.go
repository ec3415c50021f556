package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/race"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

func i64s(xs ...int64) []*int64 {
	out := make([]*int64, len(xs))
	for i := range xs {
		if xs[i] >= 0 {
			out[i] = &xs[i]
		}
	}
	return out
}

// withChecks sets the checks and the verdict of res as race.Run does.
func withChecks(res race.Result) race.Result {
	res.Checks = race.Checks(res)
	res.Verdict = doc.Verdict(res.Checks)
	return res
}

// racePassResult is a fixed two-trial run on a standalone server.
func racePassResult() race.Result {
	yes := true
	return withChecks(race.Result{
		Header:      testHeader(race.Kind, race.Version, srv(redisconn.Server{Product: "redis", Version: "7.0.15", Mode: "standalone", Addr: "redis://127.0.0.1:7001"})),
		RunID:       "3f9a1c2b7d4e",
		KeyPattern:  "race:{3f9a1c2b7d4e}:*",
		Concurrency: 200, Limit: 10, Trials: 2, WatchAttempts: 10,
		Strategies: []race.Strategy{
			{
				Name: "naive", Label: "naive GET+SET", Allowed: []int{200, 187}, OverLimit: []int{190, 177},
				FinalValue: i64s(1, 3), LostUpdates: i64s(199, 184), Retries: []int{0, 0}, GiveUps: []int{0, 0}, Errors: []int{0, 0},
				TrialP50Ms: []float64{4.21, 3.9}, TrialP99Ms: []float64{6.1, 5.5}, WallMs: []float64{7.02, 6.3},
				P50Ms: 4.1, P99Ms: 6.05, AllowedMin: 187, AllowedMedian: 193.5, AllowedMax: 200,
			},
			{
				Name: "watch", Label: "WATCH/MULTI", AtomicExpected: true, Allowed: []int{10, 10}, OverLimit: []int{0, 0},
				FinalValue: i64s(10, 10), LostUpdates: i64s(0, 0), Retries: []int{1043, 998}, GiveUps: []int{0, 2}, Errors: []int{0, 0},
				TrialP50Ms: []float64{41.25, 39}, TrialP99Ms: []float64{48.06, 47}, WallMs: []float64{48.57, 47.5},
				P50Ms: 40.1, P99Ms: 48, AllowedMin: 10, AllowedMedian: 10, AllowedMax: 10,
			},
			{
				Name: "script", Label: "Lua script", AtomicExpected: true, Allowed: []int{10, 10}, OverLimit: []int{0, 0},
				FinalValue: i64s(10, 10), LostUpdates: i64s(0, 0), Retries: []int{0, 0}, GiveUps: []int{0, 0}, Errors: []int{0, 0},
				TrialP50Ms: []float64{0.95, 1.63}, TrialP99Ms: []float64{3.76, 3.8}, WallMs: []float64{4.07, 4.45},
				P50Ms: 1.3, P99Ms: 3.79, AllowedMin: 10, AllowedMedian: 10, AllowedMax: 10,
			},
		},
		RaceReproduced: &yes,
		Verdict:        "pass",
		Notes:          []string{},
	})
}

// raceFailResult is a fixed one-trial run on a cluster where the user's
// script over-admits, watch had errors and naive did not reproduce the race.
func raceFailResult() race.Result {
	no := false
	return withChecks(race.Result{
		Header:      testHeader(race.Kind, race.Version, srv(redisconn.Server{Product: "redis", Version: "7.0.15", Mode: "cluster", Primaries: 3, Addr: "redis://127.0.0.1:7101"})),
		RunID:       "0badc0ffee00",
		KeyPattern:  "race:{0badc0ffee00}:*",
		Node:        "127.0.0.1:7102",
		Concurrency: 20, Limit: 10, Trials: 1, WatchAttempts: 10,
		Strategies: []race.Strategy{
			{
				Name: "naive", Label: "naive GET+SET", Allowed: []int{10}, OverLimit: []int{0},
				FinalValue: i64s(10), LostUpdates: i64s(0), Retries: []int{0}, GiveUps: []int{0}, Errors: []int{0},
				TrialP50Ms: []float64{0.31}, TrialP99Ms: []float64{0.48}, WallMs: []float64{0.52},
				P50Ms: 0.31, P99Ms: 0.48, AllowedMin: 10, AllowedMedian: 10, AllowedMax: 10,
			},
			{
				Name: "watch", Label: "WATCH/MULTI", AtomicExpected: true, Allowed: []int{10}, OverLimit: []int{0},
				FinalValue: i64s(10), LostUpdates: i64s(0), Retries: []int{31}, GiveUps: []int{0}, Errors: []int{2},
				TrialP50Ms: []float64{2500}, TrialP99Ms: []float64{2600}, WallMs: []float64{2610},
				P50Ms: 2500, P99Ms: 2600, AllowedMin: 10, AllowedMedian: 10, AllowedMax: 10,
				ErrorSample: "i/o timeout",
			},
			{
				Name: "user", Label: "always.lua", ScriptFile: "scripts/always.lua", AtomicExpected: true, Allowed: []int{20}, OverLimit: []int{10},
				FinalValue: i64s(-1), LostUpdates: i64s(-1), Retries: []int{0}, GiveUps: []int{0}, Errors: []int{0},
				TrialP50Ms: []float64{0.7}, TrialP99Ms: []float64{0.9}, WallMs: []float64{1},
				P50Ms: 0.7, P99Ms: 0.9, AllowedMin: 20, AllowedMedian: 20, AllowedMax: 20,
			},
		},
		RaceReproduced: &no,
		Verdict:        "fail",
		Notes: []string{
			"WATCH/MULTI: 2 of 20 calls failed, e.g. i/o timeout",
			"the race was not reproduced at this concurrency: naive GET+SET admitted at most the limit of 10; try a higher --concurrency",
		},
	})
}

func TestRaceText(t *testing.T) {
	tests := []struct {
		name   string
		res    race.Result
		golden string
	}{
		{"pass", racePassResult(), "race_pass.txt.golden"},
		{"fail", raceFailResult(), "race_fail.txt.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := RaceText(&b, tt.res, Options{}); err != nil {
				t.Fatalf("RaceText: %v", err)
			}
			if strings.Contains(b.String(), "\x1b[") {
				t.Errorf("plain output holds ANSI escapes")
			}
			golden(t, tt.golden, b.Bytes())
		})
	}
}

func TestRaceTextFirstLines(t *testing.T) {
	var b bytes.Buffer
	if err := RaceText(&b, racePassResult(), Options{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if want := "naive GET+SET admitted 187-200 of 200; WATCH/MULTI admitted 10 of 200; Lua script admitted 10 of 200"; lines[0] != want {
		t.Errorf("first line = %q, want %q", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], "server: redis 7.0.15, standalone") {
		t.Errorf("second line = %q, want the server line", lines[1])
	}
}

func TestRaceTextColor(t *testing.T) {
	var b bytes.Buffer
	if err := RaceText(&b, raceFailResult(), Options{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b[") || !strings.Contains(b.String(), "FAIL") {
		t.Errorf("coloured output lacks escapes or the FAIL word:\n%s", b.String())
	}
}

// TestRaceJSON pins the document's field names and checks that it reads
// back into the same value, as 'ratelimit report' will read it.
func TestRaceJSON(t *testing.T) {
	for _, res := range []race.Result{racePassResult(), raceFailResult()} {
		var b bytes.Buffer
		if err := JSON(&b, res); err != nil {
			t.Fatal(err)
		}
		var back race.Result
		if err := json.Unmarshal(b.Bytes(), &back); err != nil {
			t.Fatalf("unmarshal: %v", err)
		}
		if !reflect.DeepEqual(back, res) {
			t.Errorf("JSON round trip changed the result:\n got %+v\nwant %+v", back, res)
		}
		if res.Verdict == "pass" {
			golden(t, "race_pass.json.golden", b.Bytes())
		}
	}
}
