package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFingerprintObservationsCapped (issue 32): a fingerprint document
// holding more observations than its budget could send (a million forged
// ones rendered with 408 MiB) is refused by the streaming pass before it
// is decoded, and by validation after, as load documents are bounded by
// their plan.
func TestFingerprintObservationsCapped(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "fingerprint.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var obs []json.RawMessage
	if err := json.Unmarshal(m["observations"], &obs); err != nil || len(obs) == 0 {
		t.Fatalf("observations: %v", err)
	}
	forge := func(n int, budget string) []byte {
		var b bytes.Buffer
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(obs[i%len(obs)])
		}
		b.WriteByte(']')
		mm := map[string]json.RawMessage{}
		for k, v := range m {
			mm[k] = v
		}
		mm["observations"] = b.Bytes()
		mm["budget"] = json.RawMessage(budget)
		out, err := json.Marshal(mm)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		n      int
		budget string
		want   string
	}{
		{"a million", 1_000_000, "440", "has more than 20,000 elements"},
		{"over its budget", 441, "440", "more than the budget of 440"},
		{"budget over the ceiling", 10, "1000000", "above the ceiling"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := forge(tt.n, tt.budget)
			errScan := Scan(bytes.NewReader(data))
			_, errDecode := Decode(data)
			errs := []error{errScan, errDecode}
			if tt.name == "budget over the ceiling" {
				errs = errs[1:] // only validation knows the ceiling of the budget
			}
			for _, err := range errs {
				if !errors.Is(err, ErrDocument) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Scan %v; Decode %v; want both to refuse it saying %q", errScan, errDecode, tt.want)
					break
				}
			}
		})
	}
	if _, err := Decode(forge(len(obs), "440")); err != nil {
		t.Errorf("the fixture itself: %v", err)
	}
}
