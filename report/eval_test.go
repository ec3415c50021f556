package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

var evalServer = redisconn.Server{Product: "redis", Version: "7.0.15", Mode: "cluster", Primaries: 3, Addr: "redis://127.0.0.1:7101"}

func p64(v int64) *int64 { return &v }
func pb(v bool) *bool    { return &v }

func tokenBucketResult() eval.Result {
	res := eval.Result{
		Header: testHeader("eval", 2, srv(evalServer)), Algo: "token-bucket", Key: "rl:{user42}:token-bucket",
		Params:     &eval.ParamsDoc{ParamsDoc: limiter.ParamsDoc{Capacity: 5, Rate: "1/s", RatePerS: 1, Cost: 1}, PolicyQuota: 5, PolicyWindowMs: 5000},
		Script:     eval.ScriptDoc{Name: "token_bucket.lua", SHA1: "0123456789abcdef0123456789abcdef01234567", Via: "evalsha", Keys: []string{"rl:{user42}:token-bucket"}, Args: []string{"5", "1", "1"}},
		ReplyShape: "limiter",
	}
	type row struct {
		ok               bool
		left, retry, rst int64
		ttl              int64
		lat              float64
	}
	rows := []row{{true, 4, 0, 1000, 2000, 0.412}, {true, 3, 0, 1999, 2999, 0.198}, {true, 2, 0, 2998, 3998, 0.17},
		{true, 1, 0, 3997, 4997, 0.166}, {true, 0, 0, 4996, 5996, 0.171}, {false, 0, 995, 4995, 5995, 0.15}, {false, 0, 969, 4969, 5969, 1.52}}
	for i, r := range rows {
		res.Calls = append(res.Calls, eval.Call{N: i + 1, Allowed: pb(r.ok), Remaining: p64(r.left), RetryMs: p64(r.retry), ResetMs: p64(r.rst),
			TTLMs: r.ttl, LatencyMs: r.lat, Reply: []any{map[bool]int64{true: 1, false: 0}[r.ok], r.left, r.retry, r.rst}})
	}
	res.Summary = eval.Summary{Allowed: 5, Refused: 2, RetryMs: p64(969)}
	res.Header.Command = []string{"ratelimit", "eval", "rl:{user42}:token-bucket", "--algo", "token-bucket", "--capacity", "5", "--rate", "1/s", "-n", "7", "-o", "json"}
	res.SetChecks()
	return res
}

func leakyScriptResult() eval.Result {
	key := "test:{42}:counter"
	return eval.Result{
		Header: testHeader("eval", 2, srv(redisconn.Server{Product: "miniredis", Version: "2.40.0", Mode: "embedded", Addr: "embedded", Embedded: true}),
			"--script", "leaky_counter.lua", "test:{42}:counter", ",", "2", "-n", "3"),
		Algo: "script", Key: key,
		Script:     eval.ScriptDoc{Name: "leaky_counter.lua", SHA1: "fedcba9876543210fedcba9876543210fedcba98", Via: "evalsha", Keys: []string{key}, Args: []string{"2"}},
		ReplyShape: "limiter",
		Calls: []eval.Call{
			{N: 1, Allowed: pb(true), Remaining: p64(1), TTLMs: -1, LatencyMs: 0.09, Reply: []any{int64(1), int64(1)}},
			{N: 2, Allowed: pb(true), Remaining: p64(0), TTLMs: -1, LatencyMs: 0.08, Reply: []any{int64(1), int64(0)}},
			{N: 3, Allowed: pb(false), Remaining: p64(0), TTLMs: -1, LatencyMs: 0.085, Reply: []any{int64(0), int64(0)}},
		},
		Summary: eval.Summary{Allowed: 2, Refused: 1},
		NoTTL: &eval.TTLCheck{Patterns: []string{"*{42}*"}, Keys: []eval.NoTTLKey{
			{Key: key, Type: "string", Found: "keys"},
			{Key: key + ":total", Type: "string", Found: "scan"},
		}},
	}
}

func rawScriptResult() eval.Result {
	return eval.Result{
		Header: testHeader("eval", 2, srv(evalServer)), Algo: "script", Key: "k",
		Script:     eval.ScriptDoc{Name: "raw.lua", SHA1: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Via: "fcall", Function: "ratelimit_eval_aaaaaaaaaaaa", Keys: []string{"k"}, Args: []string{"hello world"}},
		ReplyShape: "raw",
		Calls:      []eval.Call{{N: 1, TTLMs: 60000, LatencyMs: 2.5, Reply: []any{"stored", "hello world", nil}}},
		NoTTL:      &eval.TTLCheck{Patterns: []string{"k*", "*hello world*"}, Truncated: true, Keys: []eval.NoTTLKey{}},
	}
}

func simulateResult() eval.SimResult {
	per := make([]int, 30)
	for i := range per {
		per[i] = 5
	}
	per[0] = 14
	h := testHeader(eval.SimKind, eval.SimVersion, srv(evalServer))
	h.Command = []string{"ratelimit", "eval", "--simulate", "--arrivals", "20/s", "--duration", "30s", "--capacity", "10", "--rate", "5/s", "-o", "json"}
	return eval.SimResult{
		Header: h, Algo: "token-bucket",
		Params: eval.ParamsDoc{ParamsDoc: limiter.ParamsDoc{Capacity: 10, Rate: "5/s", RatePerS: 5, Cost: 1}, PolicyQuota: 10, PolicyWindowMs: 2000},
		Rate:   "20/s", RatePerS: 20, ForMs: 30000, Arrivals: 600, Admitted: 159, Refused: 441, PerSecond: per,
		Model: 159, Agrees: true, WallMs: 14.2, Pipelines: 1, FirstRefMs: 650,
	}
}

func TestEvalText(t *testing.T) {
	tests := []struct {
		name string
		res  eval.Result
	}{
		{"eval_token_bucket", tokenBucketResult()},
		{"eval_script_no_ttl", leakyScriptResult()},
		{"eval_script_raw", rawScriptResult()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := EvalText(&b, tt.res, Options{}); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name+".txt.golden", b.Bytes())
			if strings.Contains(b.String(), "\x1b[") {
				t.Error("plain output contains ANSI escapes")
			}
			var j bytes.Buffer
			if err := JSON(&j, tt.res); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name+".json.golden", j.Bytes())
		})
	}
}

func TestEvalTextColor(t *testing.T) {
	var b bytes.Buffer
	if err := EvalText(&b, tokenBucketResult(), Options{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b[") || !strings.Contains(b.String(), "yes") {
		t.Errorf("coloured output has no ANSI escapes or lost its words:\n%s", b.String())
	}
}

func TestEvalSimulateText(t *testing.T) {
	var b bytes.Buffer
	if err := EvalSimulateText(&b, simulateResult(), Options{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "eval_simulate.txt.golden", b.Bytes())
	var j bytes.Buffer
	if err := JSON(&j, simulateResult()); err != nil {
		t.Fatal(err)
	}
	golden(t, "eval_simulate.json.golden", j.Bytes())
}

func TestEvalScriptsText(t *testing.T) {
	c := eval.NewCatalog(limiter.Scripts(), false)
	for i := range c.Scripts {
		c.Scripts[i].SHA1 = strings.Repeat("0", 40) // digests change with every edit of a script
	}
	var b bytes.Buffer
	if err := EvalScriptsText(&b, c, Options{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "eval_scripts.txt.golden", b.Bytes())
}
