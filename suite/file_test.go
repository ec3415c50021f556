package suite

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/schematest"
)

var testVocab = Vocabulary{ProbeChecks: []string{"limited-status", "retry-after", "policy", "ip-spoofing"}}

const good = `version: 1
defaults:
  rate: 20/s
  duration: 3s
  identities: 2
entries:
  - name: items
    url: https://api.example.test/v1/items?page=1
    method: POST
    headers:
      Authorization: Bearer ${API_TOKEN}
      Accept: application/json
    identity_header: X-Client
    expect: token-bucket:burst=10,rate=5/s
    limited_status: 503
    probe:
      checks: [limited-status, policy]
      warn_only: policy
      max_time: 1m
    load:
      rate: 30/s
      thresholds: ["p99<200ms", "dropped==0"]
      headers: warn
  - name: other
    url: http://user:${PW}@127.0.0.1:8080/
    load: {run: false}
`

// TestParseGood: every field lands where it belongs, checks: becomes the
// --skip of the others, and the entry's command lines carry each value
// as the commands' flags, with ${VAR} expanded from the environment.
func TestParseGood(t *testing.T) {
	f, err := Parse("ratelimit.yaml", []byte(good), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) != 2 || f.Entries[0].Line != 7 || f.Entries[1].Line != 24 {
		t.Fatalf("entries %+v", f.Entries)
	}
	e, err := f.Entries[0].Expand(f.Path, func(k string) string { return map[string]string{"API_TOKEN": "s3cr3t"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	probe := strings.Join(e.ProbeArgs(f.Defaults), " ")
	if want := "https://api.example.test/v1/items?page=1 -X POST -H Authorization: Bearer s3cr3t -H Accept: application/json --identity-header X-Client --limited-status 503 --expect token-bucket:burst=10,rate=5/s --skip retry-after,ip-spoofing --warn-only policy --max-time 1m0s"; probe != want {
		t.Errorf("ProbeArgs = %s\nwant        %s", probe, want)
	}
	load := strings.Join(e.LoadArgs(f.Defaults), " ")
	for _, want := range []string{"--rate 30/s", "--duration 3s", "--identities 2", "--expect token-bucket:burst=10,rate=5/s", "--headers warn", "--threshold p99<200ms --threshold dropped==0"} {
		if !strings.Contains(load, want) {
			t.Errorf("LoadArgs = %s, lacks %s", load, want)
		}
	}
	if cmd := strings.Join(Command("probe", e.ProbeArgs(f.Defaults)), " "); strings.Contains(cmd, "s3cr3t") {
		t.Errorf("Command shows the token: %s", cmd)
	}
	if !f.Entries[1].Load.Off || strings.Join(f.EnvVars(), ",") != "API_TOKEN,PW" {
		t.Errorf("other: load off %v, env %v", f.Entries[1].Load.Off, f.EnvVars())
	}
}

// TestParseRefuses: each mistake is exit 2 naming the line and the field.
func TestParseRefuses(t *testing.T) {
	head := "version: 1\ndefaults: {rate: 20/s}\nentries:\n  - name: a\n    url: http://127.0.0.1:1/\n"
	tests := []struct{ name, text, want string }{
		{"empty", "", "empty"},
		{"no version", "entries:\n  - name: a\n    url: http://127.0.0.1:1/\n", "version: missing"},
		{"version 2", "version: 2\n", "f.yaml:1: version: version 2 is not supported"},
		{"unknown top field", "version: 1\nentrys: []\n", "f.yaml:2: entrys: unknown field"},
		{"unknown default", "version: 1\ndefaults:\n  rte: 20/s\n", "f.yaml:3: defaults.rte: unknown field"},
		{"no entries", "version: 1\nentries: []\n", "entries: no entries"},
		{"entry not a mapping", "version: 1\nentries:\n  - http://x/\n", "f.yaml:3: entries[0]: want a mapping"},
		{"no name", "version: 1\ndefaults: {rate: 20/s}\nentries:\n  - url: http://127.0.0.1:1/\n", "f.yaml:4: entries[0].name: missing"},
		{"bad name", "version: 1\ndefaults: {rate: 20/s}\nentries:\n  - name: a b\n    url: http://127.0.0.1:1/\n", `entries[0].name: "a b"`},
		{"no url", "version: 1\ndefaults: {rate: 20/s}\nentries:\n  - name: a\n", "entries[0].url: missing"},
		{"ftp url", "version: 1\nentries:\n  - name: a\n    url: ftp://127.0.0.1/\n", `f.yaml:4: entries[0].url: "ftp://127.0.0.1/": want a http:// or https:// URL`},
		{"password", "version: 1\nentries:\n  - name: a\n    url: https://u:pw@h.test/\n", "f.yaml:4: entries[0].url: https://u:xxxxx@h.test/ holds a password"},
		{"token in query", "version: 1\nentries:\n  - name: a\n    url: https://h.test/?access_token=zz\n", "f.yaml:4: entries[0].url:"},
		{"literal cookie", head + "    headers: {Cookie: session=1}\n", "f.yaml:6: entries[0].headers.Cookie: Cookie carries a credential"},
		{"duplicate header", head + "    headers: {Accept: a, accept: b}\n", "entries[0].headers.accept: given twice"},
		{"duplicate field", head + "    url: http://127.0.0.1:2/\n", "f.yaml:6: entries[0].url: given twice"},
		{"bad model", head + "    expect: token-bucket:burst=ten\n", "f.yaml:6: entries[0].expect:"},
		{"bad check", head + "    probe: {skip: [nope]}\n", `f.yaml:6: entries[0].probe.skip: "nope" is not a probe check`},
		{"checks and skip", head + "    probe: {checks: [policy], skip: [retry-after]}\n", "entries[0].probe: give checks"},
		{"bad duration", head + "    load: {duration: soon}\n", `f.yaml:6: entries[0].load.duration: "soon"`},
		{"bad threshold", head + "    load: {thresholds: [p99 lt 5]}\n", "f.yaml:6: entries[0].load.thresholds:"},
		{"bad header mode", head + "    load: {headers: maybe}\n", "want fail, warn or off"},
		{"bad bool", head + "    allow_undecided: yes\n", `"yes": want true or false`},
		{"no rate", "version: 1\nentries:\n  - name: a\n    url: http://127.0.0.1:1/\n", "entries[0].load.rate: missing"},
		{"nothing to run", head + "    probe: {run: false}\n    load: {run: false}\n", "would test nothing"},
		{"duplicate name", head + "  - name: a\n    url: http://127.0.0.1:2/\n", "f.yaml:6: entries[1].name: \"a\" is the name of entries[0] too"},
		{"fault without model", head + "    fault: {inject: [pause:1s@1s], redis: redis://127.0.0.1:6379}\n", "entries[0].fault: a fault is judged against the model"},
		{"fault redis password", head + "    expect: gcra:rate=5/s,burst=10\n    fault: {inject: [pause:1s@1s], redis: redis://:pw@127.0.0.1:6379}\n", "entries[0].fault.redis: redis://:xxxxx@127.0.0.1:6379 holds a password"},
		{"two documents", head + "---\nversion: 1\n", "a second YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tt.text), testVocab)
			if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Parse = %v (exit %d), want exit 2, one line with %q", err, exitcode.Code(err), tt.want)
			}
			if err != nil && (strings.Contains(err.Error(), ":pw@") || strings.Contains(err.Error(), "session=1")) {
				t.Errorf("the credential is in the error: %v", err)
			}
		})
	}
}

// TestExpandUnset: an unset ${VAR} is exit 2 naming it and its line.
func TestExpandUnset(t *testing.T) {
	f, err := Parse("f.yaml", []byte(good), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Entries[0].Expand(f.Path, func(string) string { return "" })
	var fe *Error
	if !errors.As(err, &fe) || fe.Line != 11 || fe.Field != "headers.Authorization" || !strings.Contains(err.Error(), "${API_TOKEN} is not set") {
		t.Errorf("Expand = %v", err)
	}
}

// TestFileSchema: docs/schema/ratelimit-file.json accepts the good file
// and a file init writes, and refuses an unknown field (the negative
// control).
func TestFileSchema(t *testing.T) {
	d := Draft{Name: "hello", Top: []Line{{Key: "name", Value: "hello", Why: "x"}, {Key: "url", Value: "http://127.0.0.1:1/hello", Why: "x"},
		{Key: "expect", Value: "token-bucket:burst=10,rate=5/s", Why: "x"}},
		Headers: []Line{{Key: "Authorization", Value: "Bearer ${T}", Why: "x"}},
		Probe:   []Line{{Key: "warn_only", List: []string{"retry-after"}, Why: "x: y # z"}},
		Load:    []Line{{Key: "rate", Value: "20/s", Why: "x"}, {Key: "duration", Value: "10s", Why: "x"}}}
	written, err := Append("ratelimit.yaml", nil, d, testVocab)
	if err != nil {
		t.Fatal(err)
	}
	d.Name = "two"
	d.Top[0].Value = "two"
	appended, err := Append("ratelimit.yaml", written, d, testVocab)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := Parse("ratelimit.yaml", appended, testVocab); err != nil || len(f.Entries) != 2 || f.Entries[1].Probe.WarnOnly[0] != "retry-after" {
		t.Fatalf("appended file: %v\n%s", err, appended)
	}
	if _, err := Append("ratelimit.yaml", appended, d, testVocab); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("appending a name the file has: %v", err)
	}
	s, err := schematest.Schema("ratelimit-file")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"good": good, "written": string(appended), "unknown field": good + "extra: 1\n"} {
		var v any
		if err := yaml.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
		// through JSON, as a schema validator reads it
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		err = s.Validate(doc)
		if (err == nil) != (name != "unknown field") {
			t.Errorf("%s: schema says %v", name, err)
		}
	}
}
