package report

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestJSONDocVersions (issue 32): docs/json.md said every document is
// version 2 and, lower down, that probe, fingerprint and failover are
// version 1 (they write 1). One truth: its table names each kind with the
// version this build writes, and no sentence says they are all one.
func TestJSONDocVersions(t *testing.T) {
	b, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if regexp.MustCompile(`(?i)all (result )?documents are version|\(version 2\)\n`).MatchString(text) {
		t.Error("docs/json.md says every document has one version")
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z]+)` \\| ([0-9]+) \\|")
	seen := map[string]int{}
	for _, m := range row.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.Atoi(m[2])
		seen[m[1]] = v
	}
	for _, k := range Kinds() {
		vs := Versions(k)
		if got, ok := seen[k]; !ok || got != vs[len(vs)-1] {
			t.Errorf("docs/json.md gives %s version %d (listed: %v), this build writes %d", k, got, ok, vs[len(vs)-1])
		}
	}
	for _, line := range strings.Split(text, "\n") {
		for k, v := range seen {
			if strings.Contains(line, "`"+k+"`") && strings.Contains(line, "are version `") && !strings.Contains(line, "`"+strconv.Itoa(v)+"`") {
				t.Errorf("docs/json.md: %q contradicts version %d of %s", line, v, k)
			}
		}
	}
}
