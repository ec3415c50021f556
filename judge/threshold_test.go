package judge

import (
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

func TestParseThreshold(t *testing.T) {
	good := []struct {
		in, canon string
		value     float64
		pct       bool
	}{
		{"p99<50ms", "p99<50ms", 50, false},
		{" p99 < 50 ms ", "p99<50ms", 50, false},
		{"p(95)<=1s", "p95<=1s", 1000, false},
		{"max<250us", "max<250us", 0.25, false},
		{"mean>=2", "mean>=2ms", 2, false},
		{"dropped==0", "dropped==0", 0, false},
		{"failed<1%", "failed<1%", 1, true},
		{"FAILED<0.5%", "failed<0.5%", 0.5, true},
		{"refused>=50%", "refused>=50%", 50, true},
		{"rate_limited>0", "refused>0", 0, false},
		{"allowed!=0", "allowed!=0", 0, false},
		{"rps>=9.5/s", "rps>=9.5/s", 9.5, false},
	}
	for _, tt := range good {
		th, err := ParseThreshold(tt.in)
		if err != nil {
			t.Errorf("ParseThreshold(%q): %v", tt.in, err)
			continue
		}
		if th.String() != tt.canon || th.Value != tt.value || th.Pct != tt.pct {
			t.Errorf("ParseThreshold(%q) = %s (value %v pct %v), want %s (%v %v)", tt.in, th, th.Value, th.Pct, tt.canon, tt.value, tt.pct)
		}
	}
	bad := map[string]string{
		"":                       "no operator",
		"p99":                    "no operator",
		"<50ms":                  "no metric",
		"p98<50ms":               "unknown metric",
		"p99=>50ms":              "no operator",
		"p99<":                   "no number",
		"p99<-5ms":               "no number",
		"p99<1e3ms":              "unknown unit",
		"p99<50%":                "not %",
		"p99<50h":                "unknown unit",
		"failed<150%":            "at most 100%",
		"dropped<0.5":            "whole number",
		"dropped<1ms":            "unknown unit",
		"rps>5/m":                "unknown unit",
		"p99<1.2.3ms":            "no number",
		"p99<9999999999999999ms": "out of range",
		"p99<50ms\n":             "", // trailing space is trimmed: accepted
	}
	for in, want := range bad {
		_, err := ParseThreshold(in)
		if want == "" {
			if err != nil {
				t.Errorf("ParseThreshold(%q): %v, want it accepted", in, err)
			}
			continue
		}
		if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseThreshold(%q) = %v (exit %d), want a one-line exit-2 error with %q", in, err, exitcode.Code(err), want)
		}
	}
}

func FuzzThreshold(f *testing.F) {
	for _, s := range []string{"p99<50ms", "dropped==0", "failed<1%", "rps>=9.5/s", "p(95)<=1s", "max<250µs", "min>", "<=", "!=", "refused<=100%", "p99<1.", "a\x00<1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseThreshold(s)
		if err != nil {
			if exitcode.Code(err) != exitcode.Usage || strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("ParseThreshold(%q): %v (exit %d), want a one-line exit-2 error", s, err, exitcode.Code(err))
			}
			return
		}
		// The canonical form reads back as the same threshold.
		again, err := ParseThreshold(th.String())
		if err != nil || again.Metric != th.Metric || again.Op != th.Op || again.Pct != th.Pct {
			t.Fatalf("ParseThreshold(%q) = %s, which reads back as %+v, %v", s, th, again, err)
		}
		m := Metrics{Planned: 10, Completed: 10, Responses: 10, Allowed: 4, Refused: 6,
			LatencyCount: 10, Min: 1, Mean: 2, P50: 2, P90: 3, P95: 3, P99: 4, Max: 5}
		_ = th.Check(m)
		_, _ = th.Lost(Progress{Planned: 10, Dropped: 3, Failed: 2, Allowed: 4, Limited: 6, MaxDueUs: 5000, MinDueUs: 1000})
	})
}

func TestThresholdCheck(t *testing.T) {
	res := Metrics{Planned: 100, Dropped: 2, Completed: 98, Responses: 97, Failed: 3, Allowed: 40, Refused: 57, ResponsesPerS: 9.7,
		LatencyCount: 98, Min: 0.5, Mean: 2, P50: 1.5, P90: 3, P95: 4, P99: 40, Max: 120}
	tests := []struct {
		expr   string
		pass   bool
		actual string
	}{
		{"p99<50ms", true, "40ms"},
		{"p99<0.03s", false, "0.04s"},
		{"p95<=4ms", true, "4ms"},
		{"max<100ms", false, "120ms"},
		{"min>400us", true, "500us"},
		{"mean==2ms", true, "2ms"},
		{"dropped==0", false, "2"},
		{"dropped<=2%", true, "2.00% (2 of 100 planned)"},
		{"failed<1%", false, "3.06% (3 of 98 completed)"},
		{"failed<5", true, "3"},
		{"refused>50%", true, "58.76% (57 of 97 responses)"},
		{"allowed>=41", false, "40"},
		{"allowed!=40", false, "40"},
		{"rps>=9.5", true, "9.7/s"},
	}
	for _, tt := range tests {
		th, err := ParseThreshold(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		c := th.Check(res)
		if c.Pass != tt.pass || c.Actual != tt.actual || c.ID != th.String() || !strings.Contains(c.Message, c.ID) {
			t.Errorf("%s: pass %v actual %q message %q; want %v %q", tt.expr, c.Pass, c.Actual, c.Message, tt.pass, tt.actual)
		}
	}
	// A latency threshold without a single completed request fails.
	th, _ := ParseThreshold("p99<50ms")
	if c := th.Check(Metrics{}); c.Pass {
		t.Errorf("p99<50ms with no sample passes: %+v", c)
	}
}

func TestThresholdLost(t *testing.T) {
	w := Progress{Planned: 200, Dropped: 1, Failed: 2, Allowed: 10, Limited: 0, MaxDueUs: 120_000, MinDueUs: 300}
	tests := []struct {
		expr string
		lost bool
	}{
		{"dropped==0", true},
		{"dropped<1", true},
		{"dropped<=1", false},
		{"dropped!=0", false}, // only known at the end
		{"failed<1%", true},   // 2 of 200 planned is 1%: never below it again
		{"failed<=1%", false},
		{"failed<0.5%", true}, // 2 > 1 = 0.5% of 200
		{"allowed<=9", true},
		{"allowed>=100", false}, // more may come
		{"refused<1", false},
		{"max<100ms", true},
		{"max<=120ms", false},
		{"min>1ms", true},
		{"min<1ms", false},
		{"p99<1ms", false}, // percentiles are judged at the end
		{"mean<1ms", false},
		{"rps>100", false},
	}
	for _, tt := range tests {
		th, err := ParseThreshold(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		lost, why := th.Lost(w)
		if lost != tt.lost || lost && why == "" {
			t.Errorf("%s lost = %v (%q), want %v", tt.expr, lost, why, tt.lost)
		}
	}
	// Nothing is lost before the first sample.
	th, _ := ParseThreshold("max<1ms")
	if lost, _ := th.Lost(Progress{Planned: 10, MaxDueUs: -1, MinDueUs: -1}); lost {
		t.Error("max<1ms lost before any sample")
	}
}
