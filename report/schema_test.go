package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/schematest"
)

// TestGoldenDocumentsFitTheSchemas validates every document of version 2
// in testdata (the fixtures and the JSON goldens) against its kind's
// schema in docs/schema, and every document report writes back (-o json of
// each fixture, and of the version 1 documents once upgraded).
func TestGoldenDocumentsFitTheSchemas(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json*"))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := filepath.Glob(filepath.Join("testdata", "v1", "*.json*"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range append(files, v1...) {
		if !strings.HasSuffix(f, ".json") && !strings.HasSuffix(f, ".json.golden") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(f, "v1") {
			schematest.Validate(t, f, data)
		}
		d, err := Decode(data)
		if err != nil {
			t.Fatalf("Decode(%s): %v", f, err)
		}
		seen[d.Kind] = true
		var b bytes.Buffer
		if err := Render(&b, "json", d, Options{}); err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, f+" (report -o json)", b.Bytes())
	}
	for _, k := range Kinds() {
		if k != "scripts" && !seen[k] {
			t.Errorf("no golden document of kind %s", k)
		}
	}
}

// TestSchemasRefuse is the negative control: documents that break the
// schema in one place are refused.
func TestSchemasRefuse(t *testing.T) {
	tests := []struct{ name, file, path string }{
		{"version 1 field", "load.json", "rate_per_s"},
		{"unknown check field", "race.json", "checks.0.severity"},
		{"version 1 race field", "race.json", "strategies.0.admitted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := mutated(t, tt.file, tt.path, 1)
			if err := schematest.Check(data); err == nil {
				t.Errorf("%s with %s fits the schema", tt.file, tt.path)
			}
		})
	}
	if err := schematest.Check(mutated(t, "keyslot.json", "keys.0.slot", 16384)); err == nil {
		t.Error("a slot of 16384 fits the schema")
	}
	if err := schematest.Check(mutated(t, "eval.json", "version", 1)); err == nil {
		t.Error("version 1 fits the schema of version 2")
	}
	if err := schematest.Check(mutated(t, "simulate.json", "checks", del)); err == nil {
		t.Error("a document without checks fits the schema")
	}
}
