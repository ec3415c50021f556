package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

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

// racePassResult is a fixed two-trial run on a standalone server.
func racePassResult() race.Result {
	yes := true
	return race.Result{
		Kind: race.Kind, Version: race.Version,
		Server:      redisconn.Server{Product: "redis", Version: "7.0.15", Mode: "standalone", Addr: "redis://127.0.0.1:7001"},
		RunID:       "3f9a1c2b7d4e",
		Keys:        "race:{3f9a1c2b7d4e}:*",
		Concurrency: 200, Limit: 10, Trials: 2, WatchAttempts: 10,
		Strategies: []race.Strategy{
			{
				Name: "naive", Label: "naive GET+SET", Admitted: []int{200, 187}, OverAdmitted: []int{190, 177},
				FinalValue: i64s(1, 3), LostUpdates: i64s(199, 184), Retries: []int{0, 0}, GiveUps: []int{0, 0}, Errors: []int{0, 0},
				TrialP50Us: []int64{4210, 3900}, TrialP99Us: []int64{6100, 5500}, WallUs: []int64{7020, 6300},
				P50Us: 4100, P99Us: 6050, AdmittedMin: 187, AdmittedMedian: 193.5, AdmittedMax: 200,
			},
			{
				Name: "watch", Label: "WATCH/MULTI", AtomicExpected: true, Admitted: []int{10, 10}, OverAdmitted: []int{0, 0},
				FinalValue: i64s(10, 10), LostUpdates: i64s(0, 0), Retries: []int{1043, 998}, GiveUps: []int{0, 2}, Errors: []int{0, 0},
				TrialP50Us: []int64{41250, 39000}, TrialP99Us: []int64{48060, 47000}, WallUs: []int64{48570, 47500},
				P50Us: 40100, P99Us: 48000, AdmittedMin: 10, AdmittedMedian: 10, AdmittedMax: 10,
			},
			{
				Name: "script", Label: "Lua script", AtomicExpected: true, Admitted: []int{10, 10}, OverAdmitted: []int{0, 0},
				FinalValue: i64s(10, 10), LostUpdates: i64s(0, 0), Retries: []int{0, 0}, GiveUps: []int{0, 0}, Errors: []int{0, 0},
				TrialP50Us: []int64{950, 1630}, TrialP99Us: []int64{3760, 3800}, WallUs: []int64{4070, 4450},
				P50Us: 1300, P99Us: 3790, AdmittedMin: 10, AdmittedMedian: 10, AdmittedMax: 10,
			},
		},
		RaceReproduced: &yes,
		Verdict:        "pass",
		Failures:       []string{},
		Notes:          []string{},
	}
}

// raceFailResult is a fixed one-trial run on a cluster where the user's
// script over-admits, watch had errors and naive did not reproduce the race.
func raceFailResult() race.Result {
	no := false
	return race.Result{
		Kind: race.Kind, Version: race.Version,
		Server:      redisconn.Server{Product: "redis", Version: "7.0.15", Mode: "cluster", Primaries: 3, Addr: "redis://127.0.0.1:7101"},
		RunID:       "0badc0ffee00",
		Keys:        "race:{0badc0ffee00}:*",
		Node:        "127.0.0.1:7102",
		Concurrency: 20, Limit: 10, Trials: 1, WatchAttempts: 10,
		Strategies: []race.Strategy{
			{
				Name: "naive", Label: "naive GET+SET", Admitted: []int{10}, OverAdmitted: []int{0},
				FinalValue: i64s(10), LostUpdates: i64s(0), Retries: []int{0}, GiveUps: []int{0}, Errors: []int{0},
				TrialP50Us: []int64{310}, TrialP99Us: []int64{480}, WallUs: []int64{520},
				P50Us: 310, P99Us: 480, AdmittedMin: 10, AdmittedMedian: 10, AdmittedMax: 10,
			},
			{
				Name: "watch", Label: "WATCH/MULTI", AtomicExpected: true, Admitted: []int{10}, OverAdmitted: []int{0},
				FinalValue: i64s(10), LostUpdates: i64s(0), Retries: []int{31}, GiveUps: []int{0}, Errors: []int{2},
				TrialP50Us: []int64{2_500_000}, TrialP99Us: []int64{2_600_000}, WallUs: []int64{2_610_000},
				P50Us: 2_500_000, P99Us: 2_600_000, AdmittedMin: 10, AdmittedMedian: 10, AdmittedMax: 10,
				ErrorSample: "i/o timeout",
			},
			{
				Name: "user", Label: "always.lua", Script: "scripts/always.lua", AtomicExpected: true, Admitted: []int{20}, OverAdmitted: []int{10},
				FinalValue: i64s(-1), LostUpdates: i64s(-1), Retries: []int{0}, GiveUps: []int{0}, Errors: []int{0},
				TrialP50Us: []int64{700}, TrialP99Us: []int64{900}, WallUs: []int64{1000},
				P50Us: 700, P99Us: 900, AdmittedMin: 20, AdmittedMedian: 20, AdmittedMax: 20,
			},
		},
		RaceReproduced: &no,
		Verdict:        "fail",
		Failures:       []string{"over-admission: always.lua admitted 20 of 20 with limit 10 in trial 1"},
		Notes: []string{
			"WATCH/MULTI: 2 of 20 calls failed, e.g. i/o timeout",
			"the race was not reproduced at this concurrency: naive GET+SET admitted at most the limit of 10; try a higher --concurrency",
		},
	}
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
