package recording

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/csv"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// simRequest is one request of a simulated run against a token bucket of
// 10 at 5/s per identity that answers with serve's headers.
type simRequest struct {
	send, done time.Time
	status     int
	identity   string
	header     http.Header
	err        string
}

// simRun is n requests at 20/s over ids identities (round-robin), the
// server deciding halfway through each request; every 50th request is a
// transport error (no status).
func simRun(n, ids int, seed uint64) []simRequest {
	rng := rand.New(rand.NewPCG(seed, 7))
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	buckets := map[string]model.Limiter{}
	out := make([]simRequest, n)
	for i := range out {
		send := start.Add(time.Duration(i)*50*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Millisecond))))
		lat := time.Duration(300+rng.Int64N(4000)) * time.Microsecond
		id := "key-" + strconv.Itoa(i%ids)
		r := simRequest{send: send, done: send.Add(lat), identity: id}
		if i%50 == 49 {
			r.err = "Get \"http://127.0.0.1:8011/hello\": dial tcp 127.0.0.1:8011: connect: connection refused"
			out[i] = r
			continue
		}
		b := buckets[id]
		if b == nil {
			b = model.NewTokenBucket(10, 5)
			buckets[id] = b
		}
		d := b.Allow(send.Add(lat/2).UnixMilli(), 1)
		h := http.Header{}
		_ = header.Set(h, []header.Policy{{Name: "default", Quota: 10, Window: 2}},
			[]header.Limit{{Name: "default", Remaining: d.Remaining, Reset: (d.ResetMs + 999) / 1000}})
		h.Set("Content-Type", "application/json")
		r.status = 200
		if !d.Allowed {
			r.status = 429
			h.Set("Retry-After", header.FormatRetryAfterMs(d.RetryMs))
			h.Set("Cache-Control", "no-store")
		}
		r.header = h
		out[i] = r
	}
	return out
}

// byDone is the order both tools write in: by the end of each request.
func byDone(rs []simRequest) []simRequest {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b simRequest) int { return a.done.Compare(b.done) })
	return out
}

// k6Point is a line of k6's --out json, as its documentation shows it.
type k6Point struct {
	Metric string `json:"metric"`
	Type   string `json:"type"`
	Data   struct {
		Time  time.Time         `json:"time"`
		Value float64           `json:"value"`
		Tags  map[string]string `json:"tags"`
	} `json:"data"`
}

// writeK6 writes rs as k6 run --out json would: the metric declarations,
// then for each request (in the order they ended) its http_req_* points
// with the request's tags, the identity in the tag "key"; withHeaders adds
// the ratelimit_headers Counter point the README's script records.
func writeK6(t testing.TB, rs []simRequest, withHeaders bool) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, m := range []string{"http_reqs", "http_req_duration", "http_req_blocked", "vus", "data_sent", "data_received", "iterations"} {
		fmt.Fprintf(&b, `{"type":"Metric","data":{"name":%q,"type":"trend","contains":"time","thresholds":[],"submetrics":null},"metric":%q}`+"\n", m, m)
	}
	enc := json.NewEncoder(&b)
	point := func(metric string, at time.Time, v float64, tags map[string]string) {
		p := k6Point{Metric: metric, Type: "Point"}
		p.Data.Time, p.Data.Value, p.Data.Tags = at, v, tags
		if err := enc.Encode(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range byDone(rs) {
		tags := map[string]string{"method": "GET", "url": "http://127.0.0.1:8011/hello", "name": "http://127.0.0.1:8011/hello",
			"proto": "HTTP/1.1", "scenario": "default", "status": strconv.Itoa(r.status), "key": r.identity, "expected_response": "true"}
		if r.err != "" {
			tags["error"], tags["error_code"] = "dial: connection refused", "1212"
		}
		ms := float64(r.done.Sub(r.send)) / 1e6
		point("http_reqs", r.done, 1, tags)
		point("http_req_duration", r.done, ms, tags)
		point("http_req_blocked", r.done, 0.002, tags)
		if withHeaders {
			ht := map[string]string{"status": strconv.Itoa(r.status), "scenario": "default"}
			for _, k := range []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "Cache-Control"} {
				if v := r.header.Get(k); v != "" {
					ht[k] = v
				}
			}
			point(K6HeaderMetric, r.done, 1, ht)
		}
		point("data_sent", r.done, 80, map[string]string{"scenario": "default"})
		point("data_received", r.done, 250, map[string]string{"scenario": "default"})
		point("vus", r.done, 3, nil)
	}
	return b.Bytes()
}

// vegetaResultV12 is vegeta's lib.Result of v12.13.0, field for field, as
// vegeta attack gob-encodes it.
type vegetaResultV12 struct {
	Attack    string        `json:"attack"`
	Seq       uint64        `json:"seq"`
	Code      uint16        `json:"code"`
	Timestamp time.Time     `json:"timestamp"`
	Latency   time.Duration `json:"latency"`
	BytesOut  uint64        `json:"bytes_out"`
	BytesIn   uint64        `json:"bytes_in"`
	Error     string        `json:"error"`
	Body      []byte        `json:"body"`
	Method    string        `json:"method"`
	URL       string        `json:"url"`
	Headers   http.Header   `json:"headers"`
}

func vegetaResults(rs []simRequest) []vegetaResultV12 {
	var out []vegetaResultV12
	for i, r := range byDone(rs) {
		v := vegetaResultV12{Seq: uint64(i), Code: uint16(r.status), Timestamp: r.send, Latency: r.done.Sub(r.send),
			Method: "GET", URL: "http://127.0.0.1:8011/hello", Error: r.err, Headers: r.header}
		if r.err == "" {
			v.Body, v.BytesIn = []byte(`{"ok":true}`), 11
			if r.status == 429 {
				v.Error = "429 Too Many Requests"
			}
			v.Headers = r.header.Clone()
			v.Headers.Set("X-Api-Key", r.identity) // a target that echoes the identity
		}
		out = append(out, v)
	}
	return out
}

// writeVegeta encodes rs as vegeta attack (gob) or vegeta encode (json,
// csv) would.
func writeVegeta(t testing.TB, rs []simRequest, encoding string) []byte {
	t.Helper()
	var b bytes.Buffer
	switch encoding {
	case "gob":
		enc := gob.NewEncoder(&b)
		for _, v := range vegetaResults(rs) {
			if err := enc.Encode(&v); err != nil {
				t.Fatal(err)
			}
		}
	case "json":
		enc := json.NewEncoder(&b)
		for _, v := range vegetaResults(rs) {
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
		}
	case "csv":
		w := csv.NewWriter(&b)
		for _, v := range vegetaResults(rs) {
			var hb []byte
			if v.Headers != nil {
				var h bytes.Buffer
				_ = v.Headers.Write(&h)
				hb = append(h.Bytes(), '\r', '\n')
			}
			_ = w.Write([]string{strconv.FormatInt(v.Timestamp.UnixNano(), 10), strconv.Itoa(int(v.Code)), strconv.FormatInt(int64(v.Latency), 10),
				"0", strconv.FormatUint(v.BytesIn, 10), v.Error, base64.StdEncoding.EncodeToString(v.Body), v.Attack, strconv.FormatUint(v.Seq, 10),
				v.Method, v.URL, base64.StdEncoding.EncodeToString(hb)})
		}
		w.Flush()
	default:
		t.Fatalf("encoding %q", encoding)
	}
	return b.Bytes()
}

func mustExpect(t testing.TB, spec string) *judge.Expectation {
	t.Helper()
	x, err := judge.ParseExpect(spec)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// judgeDirectly is what Judge says of the simulated run, as load's merge
// would call it.
func judgeDirectly(rs []simRequest, x *judge.Expectation, ids int, jitterMs float64, policy string) judge.Judged {
	start := rs[0].send
	index := map[string]int{}
	var as []judge.Arrival
	for _, r := range rs {
		k, ok := index[r.identity]
		if !ok {
			k = len(index)
			index[r.identity] = k
		}
		if ids == 0 {
			k = 0
		}
		as = append(as, judge.Arrival{Identity: k, DueNs: int64(r.send.Sub(start)), SendNs: int64(r.send.Sub(start)), DoneNs: int64(r.done.Sub(start)), Status: r.status})
	}
	slices.SortStableFunc(as, func(a, b judge.Arrival) int { return int(a.SendNs - b.SendNs) })
	return judge.Judge(*x, judge.Input{Arrivals: as, Identities: max(ids, 1), StartMs: start.UnixMilli(), JitterMs: jitterMs, Policy: policy})
}

// TestReadRecording: the same simulated run recorded by k6 and by vegeta
// (gob, JSON, CSV) reads into the same counts and the same verdict, the
// one Judge gives on all its arrivals; what each recording lacks is said.
func TestReadRecording(t *testing.T) {
	rs := simRun(600, 1, 1)
	x := mustExpect(t, "token-bucket:burst=10,rate=5/s")
	read := func(t *testing.T, source string, data []byte, o RecordOptions) *tally.Result {
		t.Helper()
		o.Source, o.Name = source, "rec"
		res, err := Read(bytes.NewReader(data), o)
		if err != nil {
			t.Fatalf("Read(%s) = %v", source, err)
		}
		return res
	}
	k6 := read(t, SourceK6, writeK6(t, rs, false), RecordOptions{Expect: x, MaxFailed: load.DefaultMaxFailed})
	want := judgeDirectly(rs, x, 0, k6.Latency.P99, "")
	if k6.Sent != 600 || k6.Planned != 600 || k6.Responses != 588 || k6.Errors["connection refused"] != 12 || k6.Completed != 600 {
		t.Errorf("k6: sent %d planned %d responses %d errors %v", k6.Sent, k6.Planned, k6.Responses, k6.Errors)
	}
	// the send is the point's time minus a duration in float ms: the same
	// arrivals to the nanosecond or so, so the same verdict
	if j := k6.Expect; j == nil || j.Expected != want.Expected || j.Observed != want.Observed || j.Of != 600 || !j.Pass || j.Tolerance != want.Tolerance {
		t.Errorf("k6 expect %+v, want %+v", k6.Expect, want)
	}
	if k6.Verdict != "fail" || !strings.Contains(strings.Join(k6.VerdictMessages, ";"), "failed<=1%") {
		// 12 of 600 failed: 2% is above load's default --max-failed
		t.Errorf("k6 verdict %s %q, want fail on failed<=1%%", k6.Verdict, k6.VerdictMessages)
	}
	if k6.Source != SourceK6 || k6.Headers.NotRecorded == "" || k6.LatencyFromDue != k6.Latency || k6.Lateness.Count != 0 || k6.BytesOut != 600*80 {
		t.Errorf("k6: source %q, headers %+v, latency %+v from due %+v, bytes out %d", k6.Source, k6.Headers, k6.Latency, k6.LatencyFromDue, k6.BytesOut)
	}
	for _, c := range k6.CheckList() {
		if strings.HasPrefix(c.ID, "header:") && (!c.Skipped || !strings.Contains(c.Message, K6HeaderMetric)) {
			t.Errorf("k6 without headers: check %+v, want skipped saying how to record them", c)
		}
	}
	var sum int64
	for _, s := range k6.Timeline {
		for _, n := range s.Status {
			sum += n
		}
	}
	if sum != 600 || len(k6.Timeline) != 30 || k6.Timeline[0].Status["200"] < 10 {
		t.Errorf("timeline of %d seconds sums to %d: %+v", len(k6.Timeline), sum, k6.Timeline[:2])
	}
	if k6.Rate != "20/s" || k6.DurationS < 29.9 || k6.DurationS > 30.1 {
		t.Errorf("rate %q over %.3fs, want 20/s over 30s", k6.Rate, k6.DurationS)
	}

	for _, enc := range []string{"gob", "json", "csv"} {
		t.Run("vegeta "+enc, func(t *testing.T) {
			v := read(t, SourceVegeta, writeVegeta(t, rs, enc), RecordOptions{Expect: x, NoMaxFailed: true})
			w := judgeDirectly(rs, x, 0, v.Latency.P99, `"default";q=10;w=2`)
			if !reflectEqualJudged(*v.Expect, w) || v.Verdict != "pass" {
				t.Errorf("vegeta %s: expect %+v verdict %s %q, want %+v", enc, v.Expect, v.Verdict, v.VerdictMessages, w)
			}
			h := v.Headers
			if h.NotRecorded != "" || h.Responses != 588 || h.Policy.Valid != 588 || h.RetryAfter.Valid != v.RateLimited || h.PolicyValue != `"default";q=10;w=2` {
				t.Errorf("vegeta %s headers %+v", enc, h)
			}
			if v.Sent != k6.Sent || v.Allowed != k6.Allowed || v.RateLimited != k6.RateLimited || v.Errors["connection refused"] != 12 {
				t.Errorf("vegeta %s counts differ from k6's: %d/%d/%d %v", enc, v.Sent, v.Allowed, v.RateLimited, v.Errors)
			}
		})
	}

	t.Run("k6 with headers and auto", func(t *testing.T) {
		res := read(t, SourceK6, writeK6(t, rs, true), RecordOptions{Expect: mustExpect(t, "auto"), NoMaxFailed: true})
		if res.Headers.NotRecorded != "" || res.Headers.Responses != 588 || res.Headers.RetryAfter.Valid != res.RateLimited {
			t.Errorf("headers %+v", res.Headers)
		}
		want := judgeDirectly(rs, mustExpect(t, "auto"), 0, res.Latency.P99, `"default";q=10;w=2`)
		if !reflectEqualJudged(*res.Expect, want) || res.Expect.Fits != "token-bucket:burst=10,rate=5/s" || res.Verdict != "pass" {
			t.Errorf("auto: %+v verdict %s %q, want %+v", res.Expect, res.Verdict, res.VerdictMessages, want)
		}
	})

	t.Run("identities", func(t *testing.T) {
		rs := simRun(600, 3, 2)
		want := judgeDirectly(rs, x, 3, 0, "")
		k6 := read(t, SourceK6, writeK6(t, rs, false), RecordOptions{Expect: x, IdentityTag: "key", NoMaxFailed: true})
		v := read(t, SourceVegeta, writeVegeta(t, rs, "gob"), RecordOptions{Expect: x, IdentityTag: "X-API-Key", NoMaxFailed: true})
		for name, res := range map[string]*tally.Result{"k6": k6, "vegeta": v} {
			// vegeta's errors are a fourth identity, whose fresh model
			// admits them: the expected count may differ by as many
			if res.Identities < 3 || res.Expect.Observed != want.Observed || abs(res.Expect.Expected-want.Expected) > res.Expect.Tol.Unknown || !res.Expect.Pass {
				t.Errorf("%s: %d identities, expect %+v, want %+v", name, res.Identities, res.Expect, want)
			}
		}
		// vegeta's transport errors have no headers: one more identity, said
		if v.Identities != 4 || !strings.Contains(strings.Join(v.Notes, ";"), "12 of 600 requests carry no X-API-Key response header") {
			t.Errorf("vegeta identities %d, notes %q", v.Identities, v.Notes)
		}
		// one limiter for all: the admitted count is far off
		one := read(t, SourceK6, writeK6(t, rs, false), RecordOptions{Expect: x, NoMaxFailed: true})
		if one.Expect.Pass || one.Verdict != "fail" {
			t.Errorf("three identities judged as one: %+v", one.Expect)
		}
	})

	t.Run("gzip", func(t *testing.T) {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, _ = zw.Write(writeK6(t, rs, false))
		_ = zw.Close()
		res := read(t, SourceK6, z.Bytes(), RecordOptions{Expect: x})
		if res.Sent != 600 || res.Expect.Expected != k6.Expect.Expected {
			t.Errorf("gzipped: sent %d expect %+v", res.Sent, res.Expect)
		}
	})
}

// reflectEqualJudged compares two verdicts as a reader sees them.
func reflectEqualJudged(a, b judge.Judged) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestReadRecordingRefuses: what cannot be read or judged is one exit-2
// line naming the recording and where.
func TestReadRecordingRefuses(t *testing.T) {
	rs := simRun(40, 1, 3)
	good := writeK6(t, rs, false)
	lines := strings.SplitAfter(string(good), "\n")
	tests := []struct {
		name, source, in string
		o                RecordOptions
		want             string
	}{
		{"empty k6", SourceK6, "", RecordOptions{}, "no http_req_duration point"},
		{"not json", SourceK6, "hello\n", RecordOptions{}, "line 1 is not a JSON object"},
		{"truncated line", SourceK6, lines[0] + lines[len(lines)-2][:40] + "\n", RecordOptions{}, "line 2 is not a JSON object"},
		{"garbled line", SourceK6, lines[0] + `{"metric":"http_req_duration","type":"Point","data":{"time":"x"}}` + "\n", RecordOptions{}, "line 2:"},
		{"bad status", SourceK6, `{"metric":"http_req_duration","type":"Point","data":{"time":"2026-12-02T12:00:00Z","value":1,"tags":{"status":"ok"}}}`, RecordOptions{}, `line 1: status tag "ok"`},
		{"no status", SourceK6, `{"metric":"http_req_duration","type":"Point","data":{"time":"2026-12-02T12:00:00Z","value":1,"tags":{}}}`, RecordOptions{}, "without a status tag"},
		{"negative duration", SourceK6, `{"metric":"http_req_duration","type":"Point","data":{"time":"2026-12-02T12:00:00Z","value":-1,"tags":{"status":"200"}}}`, RecordOptions{}, "line 1: a http_req_duration point without a value"},
		{"only http_reqs", SourceK6, `{"metric":"http_reqs","type":"Point","data":{"time":"2026-12-02T12:00:00Z","value":1,"tags":{"status":"200"}}}`, RecordOptions{}, "but no http_req_duration"},
		{"span", SourceK6, `{"metric":"http_req_duration","type":"Point","data":{"time":"2026-12-02T12:00:00Z","value":1,"tags":{"status":"200"}}}` + "\n" +
			`{"metric":"http_req_duration","type":"Point","data":{"time":"2027-12-02T12:00:00Z","value":1,"tags":{"status":"200"}}}`, RecordOptions{}, "line 2: sent at 2027-12-02"},
		{"auto without headers", SourceK6, string(good), RecordOptions{Expect: mustExpect(t, "auto")}, "--expect auto needs RateLimit-Policy, which rec.json lacks"},
		{"empty vegeta", SourceVegeta, "", RecordOptions{}, "empty"},
		{"vegeta garbage", SourceVegeta, "\x00\x01\x02garbage", RecordOptions{}, "record 1"},
		{"vegeta truncated gob", SourceVegeta, string(writeVegeta(t, rs, "gob")[:300]), RecordOptions{}, "truncated"},
		{"vegeta bad json", SourceVegeta, `{"code":200,"timestamp":"2026-12-02T12:00:00Z","latency":1}` + "\n{\"code\":\n", RecordOptions{}, "line 2: not JSON"},
		{"vegeta json code", SourceVegeta, `{"code":70000,"timestamp":"2026-12-02T12:00:00Z","latency":1}`, RecordOptions{}, "line 1: code is a JSON number"},
		{"vegeta csv fields", SourceVegeta, "1,2,3\n", RecordOptions{}, "line 1 has 3 fields"},
		{"vegeta csv number", SourceVegeta, "1780000000000000000,200,x,0,0,,,,0,GET,http://x/,\n", RecordOptions{}, `line 1: latency "x"`},
		{"vegeta negative latency", SourceVegeta, `{"code":200,"timestamp":"2026-12-02T12:00:00Z","latency":-5}`, RecordOptions{}, "line 1: a negative latency"},
		{"vegeta identity without headers", SourceVegeta, "1780000000000000000,200,5,0,0,,,,0,GET,http://x/,\n", RecordOptions{IdentityTag: "X-API-Key"},
			"--identity-tag X-API-Key: rec.json carries responses without headers"},
		{"unknown source", "jmeter", "", RecordOptions{}, `--from "jmeter"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.Source, o.Name = tt.source, "rec.json"
			_, err := Read(strings.NewReader(tt.in), o)
			if err == nil {
				t.Fatalf("ReadRecording succeeded, want an error with %q", tt.want)
			}
			msg := err.Error()
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q (exit %d), want one exit-2 line with %q", msg, exitcode.Code(err), tt.want)
			}
			if tt.source != "jmeter" && !strings.Contains(msg, "rec.json") {
				t.Errorf("error %q does not name the recording", msg)
			}
		})
	}
}

// TestReadRecordingReorder: a response that ends later than the reorder
// window allows is refused, naming its line; within the window the order
// of the lines does not matter.
func TestReadRecordingReorder(t *testing.T) {
	rs := simRun(200, 1, 4)
	x := mustExpect(t, "token-bucket:burst=10,rate=5/s")
	// the 10th request answered 3 s late, after ~60 requests sent later
	rs[10].done = rs[10].done.Add(3 * time.Second)
	for _, tt := range []struct {
		window time.Duration
		ok     bool
	}{{time.Second, false}, {5 * time.Second, true}} {
		res, err := Read(bytes.NewReader(writeK6(t, rs, false)), RecordOptions{Source: SourceK6, Name: "k6.json", Expect: x, ReorderWindow: tt.window, NoMaxFailed: true})
		switch {
		case tt.ok && err != nil:
			t.Errorf("window %s: %v", tt.window, err)
		case tt.ok:
			if want := judgeDirectly(rs, x, 0, res.Latency.P99, ""); !reflectEqualJudged(*res.Expect, want) {
				t.Errorf("window %s: %+v, want %+v", tt.window, res.Expect, want)
			}
		case err == nil || !strings.Contains(err.Error(), "k6.json: line") || !strings.Contains(err.Error(), "raise --reorder-window"):
			t.Errorf("window %s: %v, want a refusal naming the line", tt.window, err)
		}
	}
	// a transport error is replayed like any request (the ideal limiter
	// decides every request sent): that late, it is refused as a late
	// response is; within the window it is judged
	rs = simRun(200, 1, 4)
	rs[49].done = rs[49].done.Add(3 * time.Second)
	if _, err := Read(bytes.NewReader(writeK6(t, rs, false)), RecordOptions{Source: SourceK6, Expect: x, ReorderWindow: time.Second}); err == nil || !strings.Contains(err.Error(), "raise --reorder-window") {
		t.Errorf("late transport error, window 1s: %v, want a refusal", err)
	}
	res, err := Read(bytes.NewReader(writeK6(t, rs, false)), RecordOptions{Source: SourceK6, Expect: x, ReorderWindow: 5 * time.Second})
	if err != nil || res.Errors["connection refused"] != 4 || res.Expect.Of != 200 {
		t.Errorf("late transport error, window 5s: %v, %+v", err, res)
	}
}

// FuzzReadK6: no input makes the k6 reader panic; every refusal is one
// exit-2 line.
func FuzzReadK6(f *testing.F) {
	rs := simRun(30, 2, 5)
	f.Add(writeK6(f, rs, true))
	f.Add([]byte(`{"metric":"http_req_duration","type":"Point","data":{"time":"2026-12-02T12:00:00Z","value":1,"tags":{"status":"200","key":"a"}}}`))
	f.Add([]byte(`{"type":"Point","data":{"time":"2026-12-02T12:00:00.5Z","value":1e308,"tags":{"status":"0","error_code":"1050"}},"metric":"http_req_duration"}`))
	f.Add([]byte(`{"metric":"dropped_iterations","type":"Point","data":{"time":"2026-12-02T12:00:00Z","value":3,"tags":null}}`))
	f.Add([]byte(`{0,"metric":"}`)) // the metric's name overlapping the line's end (once a slice out of range)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, spec := range []string{"token-bucket:burst=10,rate=5/s", "auto"} {
			res, err := Read(bytes.NewReader(data), RecordOptions{Source: SourceK6, Name: "f", IdentityTag: "key", Expect: mustExpect(t, spec)})
			checkFuzzed(t, res, err)
		}
	})
}

// FuzzReadVegeta: the same for vegeta's three encodings.
func FuzzReadVegeta(f *testing.F) {
	rs := simRun(30, 2, 6)
	for _, enc := range []string{"gob", "json", "csv"} {
		f.Add(writeVegeta(f, rs, enc))
	}
	f.Add([]byte("1780000000000000000,200,5,0,0,,,,0,GET,http://x/,\n"))
	f.Add([]byte(`0"`)) // a CSV error on the first record (once FieldPos out of range)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, spec := range []string{"gcra:rate=5/s,burst=10", "auto"} {
			res, err := Read(bytes.NewReader(data), RecordOptions{Source: SourceVegeta, Name: "f", IdentityTag: "X-API-Key", Expect: mustExpect(t, spec)})
			checkFuzzed(t, res, err)
		}
	})
}

func checkFuzzed(t *testing.T, res *tally.Result, err error) {
	t.Helper()
	if err != nil {
		if exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
			t.Fatalf("error %q (exit %d), want one exit-2 line", err, exitcode.Code(err))
		}
		return
	}
	if res.Sent <= 0 || res.Completed != res.Sent || res.Responses > res.Sent || res.Allowed+res.RateLimited > res.Responses {
		t.Fatalf("counts out of line: %+v", res)
	}
	if len(res.Timeline) > 7*24*3600 {
		t.Fatalf("timeline of %d seconds", len(res.Timeline))
	}
}

// gobUint is gob's encoding of an unsigned integer.
func gobUint(n uint64) []byte {
	if n < 128 {
		return []byte{byte(n)}
	}
	var b []byte
	for ; n > 0; n >>= 8 {
		b = append([]byte{byte(n)}, b...)
	}
	return append([]byte{byte(-len(b))}, b...)
}

// TestVegetaGobMapCount: a gob stream whose header map claims a million
// entries it does not have is refused without sizing a map for them.
func TestVegetaGobMapCount(t *testing.T) {
	v := vegetaResultV12{Code: 200, Timestamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), Latency: time.Millisecond, Headers: http.Header{"Zq": {"v"}}}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&v); err != nil {
		t.Fatal(err)
	}
	// re-frame the stream, the value's map count raised from 1 to 2^20
	var out bytes.Buffer
	data := b.Bytes()
	patched := false
	for len(data) > 0 {
		n := uint64(data[0])
		data = data[1:]
		if n >= 128 {
			k := 256 - int(n)
			n = 0
			for _, c := range data[:k] {
				n = n<<8 | uint64(c)
			}
			data = data[k:]
		}
		msg := slices.Clone(data[:n])
		data = data[n:]
		if i := bytes.Index(msg, []byte("\x01\x02Zq")); i >= 0 {
			msg = slices.Concat(msg[:i], gobUint(1<<20), msg[i+1:])
			patched = true
		}
		out.Write(gobUint(uint64(len(msg))))
		out.Write(msg)
	}
	if !patched {
		t.Fatal("no map count to patch in the gob stream")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Read(bytes.NewReader(out.Bytes()), RecordOptions{Source: SourceVegeta, Name: "v.bin"})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "v.bin: record 1") {
		t.Errorf("ReadRecording = %v, want record 1 refused", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("reading it allocated %d MB: the claimed count sized a map", grew>>20)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
