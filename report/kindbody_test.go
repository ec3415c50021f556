package report

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBodyMustMatchKind (issue 32): a document whose "kind" names one kind
// and whose body is another's (kind race over a load run) was read as an
// empty report of the named kind; a field the kind does not have is
// refused, for every kind, as the schemas (additionalProperties: false)
// already said.
func TestBodyMustMatchKind(t *testing.T) {
	files := map[string]string{"race": "race.json", "load": "load.json", "keyslot": "keyslot.json", "probe": "probe.json",
		"fingerprint": "fingerprint.json", "eval": "eval.json", "failover": "failover.json", "suite": "suite.json"}
	bodies := map[string]map[string]any{}
	for kind, name := range files {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		bodies[kind] = m
	}
	for kind := range files {
		for bodyKind, body := range bodies {
			if bodyKind == kind {
				continue
			}
			m := map[string]any{}
			for k, v := range body {
				m[k] = v
			}
			m["kind"], m["version"] = kind, bodies[kind]["version"]
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(data); !errors.Is(err, ErrDocument) || strings.Contains(err.Error(), "\n") {
				t.Errorf("kind %s with a %s body: Decode = %v, want one line wrapping ErrDocument", kind, bodyKind, err)
			}
		}
	}
}
