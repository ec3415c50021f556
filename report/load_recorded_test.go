package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/recording"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// k6Recording is a k6 --out json recording of 60 requests at 20/s over
// two API keys (the tag "key") against a token bucket of 10 at 5/s per
// key, as k6 writes it: points at each request's end, in that order. One
// request failed to connect and k6 dropped two iterations.
func k6Recording() string {
	var b strings.Builder
	b.WriteString(`{"type":"Metric","data":{"name":"http_req_duration","type":"trend","contains":"time","thresholds":[],"submetrics":null},"metric":"http_req_duration"}` + "\n")
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	buckets := map[string]model.Limiter{"a": model.NewTokenBucket(10, 5), "b": model.NewTokenBucket(10, 5)}
	for i := range 60 {
		send := start.Add(time.Duration(i) * 50 * time.Millisecond)
		lat := time.Duration(800+(i*137)%900) * time.Microsecond
		key := []string{"a", "b"}[i%2]
		status, extra := "429", ""
		if buckets[key].Allow(send.UnixMilli(), 1).Allowed {
			status = "200"
		}
		if i == 31 {
			status, extra = "0", `,"error":"dial: connection refused","error_code":"1212"`
		}
		tags := fmt.Sprintf(`{"method":"GET","url":"http://127.0.0.1:8011/hello","name":"http://127.0.0.1:8011/hello","scenario":"default","key":%q,"status":%q%s}`, key, status, extra)
		at := send.Add(lat).Format(time.RFC3339Nano)
		fmt.Fprintf(&b, `{"metric":"http_reqs","type":"Point","data":{"time":%q,"value":1,"tags":%s}}`+"\n", at, tags)
		fmt.Fprintf(&b, `{"metric":"http_req_duration","type":"Point","data":{"time":%q,"value":%g,"tags":%s}}`+"\n", at, float64(lat)/1e6, tags)
		fmt.Fprintf(&b, `{"metric":"data_sent","type":"Point","data":{"time":%q,"value":90,"tags":{"scenario":"default"}}}`+"\n", at)
		if i == 40 {
			fmt.Fprintf(&b, `{"metric":"dropped_iterations","type":"Point","data":{"time":%q,"value":2,"tags":{"scenario":"default"}}}`+"\n", at)
		}
	}
	return b.String()
}

// fixtureLoadK6 is k6Recording judged by report --from k6 with one
// limiter per key: the admitted count fits, the header checks are
// skipped (k6 records no headers) and the generator's drops are a
// warning. With spec, the same judged against another model.
func fixtureLoadK6(t *testing.T, spec string) *tally.Result {
	t.Helper()
	x, err := judge.ParseExpect(spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recording.Read(strings.NewReader(k6Recording()), recording.RecordOptions{
		Source: tally.SourceK6, Name: "k6.json", IdentityTag: "key", Expect: x, MaxFailed: 0.05,
	})
	if err != nil {
		t.Fatal(err)
	}
	res.Header = doc.Header{Kind: tally.Kind, Version: tally.Version, Tool: testTool,
		Command: []string{"ratelimit", "report", "--from", "k6", "k6.json", "--identity-tag", "key", "--expect", spec, "--max-failed", "5%", "--out", "load_k6.json"}}
	return res
}

// TestRecordedFixture holds the reader to the frozen testdata/load_k6.json
// (the document it wrote for k6Recording: the counts, the verdict and its
// checks must not move), and renders that document in every format
// against its goldens; TestGoldenDocumentsFitTheSchemas validates it.
func TestRecordedFixture(t *testing.T) {
	res := fixtureLoadK6(t, "token-bucket:burst=10,rate=5/s")
	if res.Verdict != "pass" || res.Source != tally.SourceK6 || res.Identities != 2 || res.Dropped != 2 || res.Headers.NotRecorded == "" {
		t.Fatalf("fixture: verdict %s %q, source %q, %d identities, %d dropped, headers %+v", res.Verdict, res.VerdictMessages, res.Source, res.Identities, res.Dropped, res.Headers)
	}
	d := readFixture(t, "load_k6.json")
	frozen := d.Value.(*tally.Result)
	// every check the frozen document has keeps its verdict (new checks
	// may join as the document grows)
	now := map[string]bool{}
	for _, c := range res.CheckList() {
		now[c.ID] = c.Pass
	}
	for _, c := range frozen.CheckList() {
		if pass, ok := now[c.ID]; !ok || pass != c.Pass {
			t.Errorf("check %s: the reader now says pass %v (present %v); the frozen document says %v", c.ID, pass, ok, c.Pass)
		}
	}
	if res.Sent != frozen.Sent || res.Allowed != frozen.Allowed || res.Verdict != frozen.Verdict ||
		res.Expect.Observed != frozen.Expect.Observed || res.Expect.Expected != frozen.Expect.Expected {
		t.Errorf("the k6 reader no longer writes the frozen testdata/load_k6.json: sent %d allowed %d verdict %s, expected %d of %d; the fixture has %d %d %s, %d of %d",
			res.Sent, res.Allowed, res.Verdict, res.Expect.Expected, res.Expect.Observed, frozen.Sent, frozen.Allowed, frozen.Verdict, frozen.Expect.Expected, frozen.Expect.Observed)
	}
	goldenEveryFormat(t, "load_k6", d)

	// every format shows the source and why the header checks were skipped
	for _, format := range []string{"text", "markdown", "junit", "html"} {
		var out bytes.Buffer
		if format == "html" {
			if err := HTML(&out, []Document{d}, HTMLOptions{Generated: goldenTime}); err != nil {
				t.Fatal(err)
			}
		} else if err := Render(&out, format, d, goldenOptions); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "recorded by k6") || !strings.Contains(out.String(), "k6 records no response headers") {
			t.Errorf("%s does not show the source and the skipped header checks:\n%s", format, out.String())
		}
	}
}
