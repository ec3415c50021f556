package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
)

func TestParseExpect(t *testing.T) {
	tests := []struct {
		in   string
		want limiter.Params
		auto bool
	}{
		{"auto", limiter.Params{}, true},
		{"AUTO", limiter.Params{}, true},
		{"token-bucket:burst=10,rate=5/s", limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}, Cost: 1}, false},
		{"token-bucket: capacity=10, rate=300/m", limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 300, Per: time.Minute}, Cost: 1}, false},
		{"sliding-window:limit=100,window=60s", limiter.Params{Algo: limiter.SlidingWindow, Limit: 100, Window: time.Minute, Cost: 1}, false},
		{"fixed-window:window=1m,limit=100", limiter.Params{Algo: limiter.FixedWindow, Limit: 100, Window: time.Minute, Cost: 1}, false},
		{"gcra:rate=5/s,burst=10", limiter.Params{Algo: limiter.GCRA, Rate: rate.Rate{Count: 5, Per: time.Second}, Burst: 10, Cost: 1}, false},
	}
	for _, tt := range tests {
		x, err := ParseExpect(tt.in)
		if err != nil {
			t.Errorf("ParseExpect(%q): %v", tt.in, err)
			continue
		}
		if x.Auto != tt.auto || !tt.auto && (len(x.Parts) != 1 || x.Parts[0] != tt.want) {
			t.Errorf("ParseExpect(%q) = %+v, want %+v auto %v", tt.in, x, tt.want, tt.auto)
		}
	}
	if x, err := ParseExpect("token-bucket:burst=10,rate=5/s + fixed-window:limit=100,window=1m"); err != nil || len(x.Parts) != 2 {
		t.Errorf("stacked models: %+v, %v", x, err)
	}
	if x, err := ParseExpect("none"); err != nil || !x.None || x.Judges() {
		t.Errorf("none: %+v, %v", x, err)
	}
	bad := []struct{ in, msg string }{
		{"", "empty"},
		{"leaky:rate=5/s", "leaky-bucket needs burst"},
		{"drip:rate=5/s", "unknown model"},
		{"token-bucket", "needs burst"},
		{"token-bucket:burst=10", "needs rate"},
		{"token-bucket:burst=10,rate=5/s,limit=3", "not limit"},
		{"token-bucket:burst=0,rate=5/s", "positive integer"},
		{"token-bucket:burst=10,rate=fast", "invalid rate"},
		{"token-bucket:burst=10,burst=11,rate=5/s", "given twice"},
		{"sliding-window:limit=100,window=forever", "duration"},
		{"sliding-window:limit=100,window=1500us", "whole milliseconds"},
		{"gcra:rate=5/s", "needs burst"},
		{"token-bucket:burst,rate=5/s", "not key=value"},
	}
	for _, tt := range bad {
		_, err := ParseExpect(tt.in)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseExpect(%q) = %v, want a usage error containing %q", tt.in, err, tt.msg)
		}
	}
}

// simulate builds the arrivals of n requests every period, round-robin over
// ids identities, answered by the model p as a target would (decided at the
// send time plus netMs), each response ending latMs after its send.
func simulate(t *testing.T, p limiter.Params, n int, period time.Duration, ids int, netMs, latMs int64) []Arrival {
	t.Helper()
	l, err := limiter.NewLimiter(p)
	if err != nil {
		t.Fatal(err)
	}
	ms := make([]model.Limiter, ids)
	for k := range ms {
		ms[k] = l.Model()
	}
	var out []Arrival
	for i := range n {
		send := int64(i) * int64(period)
		k := i % ids
		st := 429
		if ms[k].Allow(1_000_000+send/1e6+netMs, 1).Allowed {
			st = 200
		}
		out = append(out, Arrival{Identity: k, SendNs: send, DoneNs: send + latMs*1e6, Status: st})
	}
	return out
}

func TestJudgeTokenBucket(t *testing.T) {
	p := limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}, Cost: 1}
	x := Expectation{Spec: "token-bucket:burst=10,rate=5/s", Parts: []limiter.Params{p}}
	arr := simulate(t, p, 600, 50*time.Millisecond, 1, 0, 1)
	j := Judge(x, Input{Arrivals: arr, Identities: 1, StartMs: 1_000_000, JitterMs: 1})
	want := "allowed 159 of 600; expected 159 (token bucket 10 + 5/s over 29.95 s) ±2: pass"
	if got := j.Line(); got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
	if j.Tol != (Tolerance{Jitter: 1, Shift: 0, Rounding: 1}) {
		t.Errorf("tolerance parts %+v", j.Tol)
	}

	// The same observation judged against a faster bucket fails.
	fast := p
	fast.Rate = rate.Rate{Count: 10, Per: time.Second}
	j = Judge(Expectation{Spec: "fast", Parts: []limiter.Params{fast}}, Input{Arrivals: arr, Identities: 1, StartMs: 1_000_000, JitterMs: 1})
	if j.Pass || j.Expected < 300 {
		t.Errorf("faster bucket: %s", j.Line())
	}

	// A target that decided 3 ms after the send (network time) still passes.
	late := simulate(t, p, 600, 50*time.Millisecond, 1, 3, 5)
	j = Judge(x, Input{Arrivals: late, Identities: 1, StartMs: 1_000_000, JitterMs: 5})
	if !j.Pass {
		t.Errorf("3 ms network time: %s (%+v)", j.Line(), j.Tol)
	}

	// Transport errors widen the tolerance, one per unknown outcome.
	arr[10].Status, arr[11].Status = 0, 0
	j = Judge(x, Input{Arrivals: arr, Identities: 1, StartMs: 1_000_000, JitterMs: 1})
	if j.Tol.Unknown != 2 || j.Tolerance != 4 || j.Of != 600 {
		t.Errorf("with 2 unknown: tolerance %d parts %+v of %d", j.Tolerance, j.Tol, j.Of)
	}
}

func TestJudgeIdentitiesScale(t *testing.T) {
	p := limiter.Params{Algo: limiter.SlidingWindow, Limit: 100, Window: time.Minute, Cost: 1}
	arr := simulate(t, p, 200, 50*time.Millisecond, 1, 0, 1)
	j := Judge(Expectation{Spec: "s", Parts: []limiter.Params{p}}, Input{Arrivals: arr, Identities: 1, JitterMs: 1})
	if j.Expected != 100 || j.Observed != 100 || !j.Pass {
		t.Errorf("one identity: %s", j.Line())
	}
	arr = simulate(t, p, 600, 10*time.Millisecond, 4, 0, 1)
	j = Judge(Expectation{Spec: "s", Parts: []limiter.Params{p}}, Input{Arrivals: arr, Identities: 4, JitterMs: 1})
	if j.Expected != 400 || j.Observed != 400 || !j.Pass || !strings.Contains(j.Description, "x 4 identities") {
		t.Errorf("four identities: %s", j.Line())
	}
	// Judged as one identity, the same observation fails.
	j = Judge(Expectation{Spec: "s", Parts: []limiter.Params{p}}, Input{Arrivals: arr, Identities: 1, JitterMs: 1})
	if j.Pass {
		t.Errorf("four identities judged as one: %s", j.Line())
	}
}

func TestJudgeAuto(t *testing.T) {
	bucket := limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}, Cost: 1}
	window := limiter.Params{Algo: limiter.SlidingWindow, Limit: 10, Window: 2 * time.Second, Cost: 1}
	auto := Expectation{Spec: "auto", Auto: true}
	policy := `"default";q=10;w=2`

	j := Judge(auto, Input{Arrivals: simulate(t, bucket, 600, 50*time.Millisecond, 1, 0, 1), Identities: 1, JitterMs: 1, Policy: policy})
	if !j.Pass || j.Fits != "token-bucket:burst=10,rate=5/s" || len(j.Readings) != 3 {
		t.Errorf("bucket target: fits %q pass %v readings %+v", j.Fits, j.Pass, j.Readings)
	}
	if j.Readings[1].Fits || j.Readings[2].Fits {
		t.Errorf("a window reading fits a bucket: %+v", j.Readings)
	}

	j = Judge(auto, Input{Arrivals: simulate(t, window, 600, 50*time.Millisecond, 1, 0, 1), Identities: 1, JitterMs: 1, Policy: policy})
	if !j.Pass || !strings.HasPrefix(j.Fits, "sliding-window") && !strings.HasPrefix(j.Fits, "fixed-window") || j.Readings[0].Fits {
		t.Errorf("window target: fits %q readings %+v", j.Fits, j.Readings)
	}

	for _, pol := range []string{"", `"d";q=10`, `garbage`} {
		j = Judge(auto, Input{Arrivals: simulate(t, window, 10, 50*time.Millisecond, 1, 0, 1), Identities: 1, Policy: pol})
		if j.Pass || !strings.Contains(j.Note, "no RateLimit-Policy") {
			t.Errorf("policy %q: %+v", pol, j)
		}
	}
}

// TestExpectParamNames: a bad --expect parameter is named by the model's
// keys (burst=, rate=), never by eval's flags (--capacity).
func TestExpectParamNames(t *testing.T) {
	for spec, want := range map[string]string{
		"token-bucket:burst=2000000000,rate=5/s": "token-bucket needs burst= from 1",
		"gcra:rate=2000000/s,burst=5":            "gcra needs rate= greater than 0",
	} {
		_, err := ParseExpect(spec)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "--capacity") {
			t.Errorf("--expect %s: %v, want an error containing %q", spec, err, want)
		}
	}
}

// TestJudgeExpectedPerSecond: the verdict's replay spreads its expected
// count over the seconds of the sends (what report draws): the burst in
// the first second, the refill after it, the sum the expected count, for
// one or several identities and for the reading auto picks.
func TestJudgeExpectedPerSecond(t *testing.T) {
	bucket := limiter.Params{Algo: limiter.TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}, Cost: 1}
	sum := func(xs []int64) (n int64) {
		for _, x := range xs {
			n += x
		}
		return n
	}
	tests := []struct {
		name  string
		x     Expectation
		ids   int
		first int64 // expected in second 0
	}{
		{"one identity", Expectation{Spec: "tb", Parts: []limiter.Params{bucket}}, 1, 14},
		{"three identities", Expectation{Spec: "tb", Parts: []limiter.Params{bucket}}, 3, 20}, // ~7 arrivals each: all allowed
		{"auto", Expectation{Spec: "auto", Auto: true}, 1, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arr := simulate(t, bucket, 200, 50*time.Millisecond, tt.ids, 0, 1) // 10 s of 20/s
			j := Judge(tt.x, Input{Arrivals: arr, Identities: tt.ids, StartMs: 1_000_000, JitterMs: 1, Policy: `"default";q=10;w=2`})
			per := j.ExpectedPerSecond
			if len(per) != 10 || sum(per) != j.Expected {
				t.Fatalf("expected per second %v (sum %d), want 10 seconds summing to %d", per, sum(per), j.Expected)
			}
			if per[0] < tt.first || per[9] > 5*int64(tt.ids) {
				t.Errorf("expected per second %v: want at least %d in second 0 and at most the refill (%d/s) at the end", per, tt.first, 5*tt.ids)
			}
		})
	}
	if j := Judge(Expectation{Spec: "tb", Parts: []limiter.Params{bucket}}, Input{Identities: 1}); len(j.ExpectedPerSecond) != 0 {
		t.Errorf("no arrivals: expected per second %v, want none", j.ExpectedPerSecond)
	}
}

// TestJudgeDelays: a model that delays (nginx's delay=N) is judged on the
// delays too: a target that holds the requests the model delays passes;
// one that serves them at once fails, though the count is the same.
func TestJudgeDelays(t *testing.T) {
	p, err := limiter.ParseSpec("leaky-bucket:rate=5/s,burst=6,delay=2")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := limiter.NewLimiter(p)
	run := func(hold bool) Judged {
		m := l.Model()
		var arr []Arrival
		for i := range 60 {
			send := int64(i) * 50e6 // 20/s for 3 s
			d := m.Allow(1_000_000+send/1e6, 1)
			a := Arrival{SendNs: send, DoneNs: send + 1e6, Status: 429}
			if d.Allowed {
				a.Status = 200
				if hold {
					a.DoneNs = send + d.RetryMs*1e6 + 1e6
				}
			}
			arr = append(arr, a)
		}
		return Judge(Of(p), Input{Arrivals: arr, Identities: 1, StartMs: 1_000_000, JitterMs: 1})
	}
	held := run(true)
	if !held.Pass || held.Delays == nil || held.Delays.Delayed == 0 || held.Delays.Met != held.Delays.Delayed {
		t.Fatalf("a target that delays as nginx does: %s (%+v)", held.Line(), held.Delays)
	}
	fast := run(false)
	if fast.Pass || fast.Delays == nil || fast.Delays.Pass || fast.Observed != held.Observed {
		t.Fatalf("a target that serves at once what the model delays: %s", fast.Line())
	}
	t.Log(held.Line())
	t.Log(fast.Line())
}
