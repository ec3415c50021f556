package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportMasksStoredCredentials (issue 32): a document whose target,
// command line or server address holds a password and a credential query
// value (written before query masking existed, or edited) shows neither
// in any format: report masks on read as the writers mask on write.
func TestReportMasksStoredCredentials(t *testing.T) {
	const pw = "PW0rdS3cr3t"
	target := "http://u:" + pw + "@127.0.0.1:8011/hello?api_key=" + pw + "&code=" + pw
	for _, name := range []string{"load.json", "probe.json", "fingerprint.json", "race.json", "keyslot.json", "eval.json", "failover.json"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if _, ok := m["target"]; ok {
				m["target"] = target
			}
			m["command"] = []any{"ratelimit", name, "--target", target, "--redis=redis://:" + pw + "@127.0.0.1:6379/0"}
			if s, ok := m["server"].(map[string]any); ok {
				s["addr"] = "redis://default:" + pw + "@127.0.0.1:6379"
			}
			forged, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Decode(forged)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			for _, format := range fmtAll {
				var b bytes.Buffer
				if err := Render(&b, format, d, Options{}); err != nil {
					t.Fatalf("Render %s: %v", format, err)
				}
				if strings.Contains(b.String(), pw) {
					t.Errorf("%s of %s shows the stored credential:\n%s", format, name, b.String())
				}
			}
			var b bytes.Buffer
			if err := HTML(&b, []Document{d}, HTMLOptions{Generated: time.Unix(0, 0)}); err != nil {
				t.Fatalf("HTML: %v", err)
			}
			if strings.Contains(b.String(), pw) {
				t.Errorf("html of %s shows the stored credential", name)
			}
		})
	}
}
