package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mutated returns testdata/file with the value at path (dot-separated,
// numbers index arrays) replaced by v, or removed when v is del.
func mutated(t *testing.T, file, path string, v any) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(path, ".")
	cur := doc
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if v == del {
					delete(c, p)
				} else {
					c[p] = v
				}
				break
			}
			cur = c[p]
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n >= len(c) {
				t.Fatalf("%s: no element %s", path, p)
			}
			if last {
				c[n] = v
				break
			}
			cur = c[n]
		default:
			t.Fatalf("%s: %s is not a container", path, p)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type deleted struct{}

var del any = deleted{}

// TestDecodeValidates feeds documents that parse but must not be rendered:
// each is refused with one line naming the field, wrapping ErrDocument.
func TestDecodeValidates(t *testing.T) {
	raw := func(s string) []byte { return []byte(s) }
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"duplicate kind", raw(`{"kind":"race","kind":"load","version":1}`), `key "kind" appears twice at the top level`},
		{"duplicate key other case", raw(`{"kind":"load","Kind":"race","version":1}`), `key "Kind" appears twice at the top level`},
		{"duplicate nested", raw(`{"kind":"load","version":1,"timeline":[{"second":0,"status":{"200":1,"200":5}}]}`), `key "200" appears twice in timeline[0].status`},
		{"duplicate deep in arrays", raw(`{"kind":"race","version":1,"strategies":[{},{"name":"a","label":"x","name":"b"}]}`), `key "name" appears twice in strategies[1]`},
		{"negative second", mutated(t, "load.json", "timeline.3.second", -5), "timeline[3].second is -5, want >= 0"},
		{"second out of order", mutated(t, "load.json", "timeline.3.second", 1000000000), "timeline[3].second is 1000000000, want 3"},
		{"negative status count", mutated(t, "load.json", "timeline.2.status.200", -1), `timeline[2].status["200"] is -1, want >= 0`},
		{"negative sent", mutated(t, "load.json", "sent", -3), "sent is -3, want >= 0"},
		{"percentiles out of order", mutated(t, "load.json", "latency_ms.p90", 0.1), "latency_ms.p90 is 0.1, less than p50 (0.41); want percentiles in order"},
		{"absurd latency", mutated(t, "load.json", "latency_ms.max", 1.7e308), "latency_ms.max is 1.7e+308, want at most 1e+15"},
		{"NaN string for a number", mutated(t, "load.json", "arrival_rate_per_s", "NaN"), "arrival_rate_per_s is a string, want a number"},
		{"Inf string for a count", mutated(t, "race.json", "limit", "+Inf"), "limit is a string, want an integer"},
		{"number too large", raw(`{"kind":"load","version":1,"sent":1e400}`), "sent is a number 1e400, want an integer"},
		{"pct over 100", mutated(t, "load.json", "failed_pct", 250), "failed_pct is 250, want at most 100"},
		{"unknown verdict", mutated(t, "load.json", "verdict", "maybe"), `verdict is "maybe", want one of pass, fail, interrupted`},
		{"histogram bounds", mutated(t, "load.json", "latency_histogram.buckets.2.le_ms", 0.1), "latency_histogram.buckets[2].le_ms is 0.1, not above the bucket before (0.5)"},
		{"valid over present", mutated(t, "load.json", "headers.ratelimit.valid", 1000), "headers.ratelimit.valid is 1000, more than present (198)"},
		{"race negative admitted", mutated(t, "race.json", "strategies.2.allowed.1", -7), "strategies[2].allowed[1] is -7, want >= 0"},
		{"race p50 over p99", mutated(t, "race.json", "strategies.0.p50_ms", 99999), "strategies[0].p50_ms is 99999, more than p99_ms (3.3)"},
		{"race empty verdict", mutated(t, "race.json", "verdict", del), `verdict is "", want one of pass, fail`},
		{"slot out of range", mutated(t, "keyslot.json", "keys.0.slot", 16384), "keys[0].slot is 16384, want a slot from 0 to 16383"},
		{"negative group slot", mutated(t, "keyslot.json", "groups.1.slots.0", -1), "groups[1].slots[0] is -1"},
		{"topology range reversed", mutated(t, "keyslot.json", "topology.shards.0.ranges.0", []int{5460, 0}), "topology.shards[0].ranges[0] is [5460, 0], want the first slot at most the last"},
		{"share over one", mutated(t, "keyslot.json", "spread.busiest_slot_share", 3), "spread.busiest_slot_share is 3, want a share from 0 to 1"},
		{"eval without params", mutated(t, "eval.json", "params", del), "params is missing, want the token-bucket parameters"},
		{"eval call without allowed", mutated(t, "eval.json", "calls.0.allowed", del), `calls[0] has no allowed and remaining, want both for reply_shape "limiter"`},
		{"eval unknown algo", mutated(t, "eval.json", "algo", "leaky"), `algo is "leaky", want one of script, token-bucket`},
		{"eval ttl", mutated(t, "eval.json", "calls.1.ttl_ms", -9), "calls[1].ttl_ms is -9, want >= -2"},
		{"simulate admitted over arrivals", mutated(t, "simulate.json", "allowed", 601), "allowed is 601, want at most arrivals (600)"},
		{"simulate negative second", mutated(t, "simulate.json", "allowed_per_second.4", -1), "allowed_per_second[4] is -1, want >= 0"},
		{"negative expected per second", mutated(t, "load.json", "expect.expected_per_second.2", -1), "expect.expected_per_second[2] is -1, want >= 0"},
		{"version 1 race negative admitted", raw(`{"kind":"race","version":1,"verdict":"pass","strategies":[{"name":"a","admitted":[-1]}]}`), "strategies[0].allowed[0] is -1, want >= 0"},
		{"version 1 load negative duration", raw(`{"kind":"load","version":1,"verdict":"pass","duration_s":-2}`), "duration_ms is -2000, want >= 0"},
		{"control bytes in a duplicate key", raw(`{"kind":"load","version":1,"\u001b[2J":1,"\u001b[2J":2}`), `key "\x1b[2J" appears twice`},
		{"control bytes in an unknown kind", raw(`{"kind":"\u001b[2J\u009b","version":1}`), `unknown kind "\x1b[2J\u009b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.in)
			if err == nil {
				t.Fatalf("Decode(%.120s) succeeded, want %q", tt.in, tt.want)
			}
			msg := err.Error()
			if !errors.Is(err, ErrDocument) || !strings.Contains(msg, tt.want) || strings.ContainsAny(msg, "\n\x1b") {
				t.Errorf("Decode = %q, want one clean line wrapping ErrDocument with %q", msg, tt.want)
			}
		})
	}
}

// TestDecodeKeepsGoodDocuments is the negative control of the checks: the
// fixtures and documents with edge values that are valid still decode.
func TestDecodeKeepsGoodDocuments(t *testing.T) {
	for _, in := range [][]byte{
		mutated(t, "load.json", "latency_ms.p90", 0.41),                                                 // equal percentiles
		mutated(t, "eval.json", "calls.1.ttl_ms", -2),                                                   // no key
		mutated(t, "race.json", "strategies.0.allowed.0", 0),                                            // nothing admitted
		mutated(t, "keyslot.json", "keys.0.slot", 16383),                                                // the last slot
		mutated(t, "load.json", "status.200", json.Number("0")),                                         // zero
		[]byte(`{"kind":"race","version":1,"verdict":"pass","strategies":[{"name":"a"},{"name":"b"}]}`), // same key in two objects
	} {
		if _, err := Decode(in); err != nil {
			t.Errorf("Decode(%.100s) = %v, want it read", in, err)
		}
	}
}

// TestEvalReplyNonFinite: eval writes NaN and infinite replies as the
// strings "NaN", "+Inf", "-Inf"; they decode and render in every format.
func TestEvalReplyNonFinite(t *testing.T) {
	res := rawScriptResult()
	res.Calls[0].Reply = []any{"NaN", "+Inf", "-Inf", 1.5}
	var doc bytes.Buffer
	if err := JSON(&doc, res); err != nil {
		t.Fatal(err)
	}
	d, err := Decode(doc.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(Formats("eval"), "html") {
		if f == "github" {
			continue // annotations carry the failed checks only, never the replies
		}
		var b bytes.Buffer
		if f == "html" {
			err = HTML(&b, []Document{d}, HTMLOptions{})
		} else {
			err = Render(&b, f, d, Options{})
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.Contains(b.String(), "NaN") || !strings.Contains(b.String(), "+Inf") || !strings.Contains(b.String(), "-Inf") {
			t.Errorf("%s output lacks the non-finite replies:\n%s", f, b.String())
		}
	}
}

// renderAll renders d in every format it has but json (the document
// itself) and as a page, failing on an error; a panic or an endless loop
// fails the test by itself.
func renderAll(t *testing.T, d Document) string {
	t.Helper()
	var all strings.Builder
	for _, f := range Formats(d.Kind) {
		if f == "json" {
			continue
		}
		var b bytes.Buffer
		if err := Render(&b, f, d, Options{}); err != nil {
			t.Fatalf("Render(%s): %v", f, err)
		}
		all.Write(b.Bytes())
	}
	var b bytes.Buffer
	if err := HTML(&b, []Document{d}, HTMLOptions{}); err != nil {
		t.Fatalf("HTML: %v", err)
	}
	all.Write(b.Bytes())
	return all.String()
}

// TestRenderExtremes: documents that are valid but extreme render in
// bounded work, with no NaN or Inf in the page. Before the renderers
// bounded their loops, the first two never ended (a replay of 10^9 s, a
// recount of 9e18 template keys) and the third drew an axis to +Inf.
func TestRenderExtremes(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"tiny rate", mutated(t, "load.json", "arrival_rate_per_s", 1e-9)},
		{"endless spread", mutated(t, "keyslot.json", "spread.to", int64(math.MaxInt64))},
		{"huge latencies", mutated(t, "load.json", "latency_ms.max", 1e15)},
		{"denormal latency", mutated(t, "load.json", "lateness_ms.min", 5e-324)},
		{"huge identities", mutated(t, "load.json", "identities", 1<<40)},
		{"huge limit", mutated(t, "race.json", "limit", 1e15)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decode(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			out := renderAll(t, d)
			for _, bad := range []string{"NaN", "Inf"} {
				if strings.Contains(out, bad) {
					t.Errorf("output has %s", bad)
				}
			}
		})
	}
}

// TestHostileText pins that no renderer lets a control byte of a key or
// name reach its output, and that valid UTF-8 stays as it is.
func TestHostileText(t *testing.T) {
	for _, name := range []string{"hostile_eval.json", "hostile_keyslot.json"} {
		d := readFixture(t, name)
		out := renderAll(t, d)
		for _, bad := range []string{"\x1b", "\x07", "\u009b"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: output has %q", name, bad)
			}
		}
		if !strings.Contains(out, "red\\x07ü") {
			t.Errorf("%s: output lacks the key shown as red\\x07ü", name)
		}
		if strings.Contains(out, `\xc3\xbc`) {
			t.Errorf("%s: output escapes valid UTF-8 (ü as \\xc3\\xbc)", name)
		}
	}
}

// TestRenderSpreadAtUint64End: a spread ending at the largest uint64 (the
// help promises any 64-bit range) renders in bounded time; counting it with
// n++ wrapped to 0 and never ended.
func TestRenderSpreadAtUint64End(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "keyslot.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	sp, ok := doc["spread"].(map[string]any)
	if !ok {
		t.Fatal("keyslot.json has no spread")
	}
	sp["from"], sp["to"], sp["key_count"] = json.Number("18446744073709551610"), json.Number("18446744073709551615"), 6
	in, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(in)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	done := make(chan string, 1)
	go func() { done <- renderAll(t, d) }()
	select {
	case out := <-done:
		if !strings.Contains(out, "18446744073709551615") {
			t.Errorf("output does not show the range end")
		}
	case <-time.After(time.Minute):
		t.Fatal("rendering a spread ending at the largest uint64 did not end")
	}
}
