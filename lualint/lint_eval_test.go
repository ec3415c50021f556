package lualint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintProjectScripts lints the limiter scripts the eval package embeds:
// they must pass, or the project would fail its own CI gate on Cluster.
func TestLintProjectScripts(t *testing.T) {
	entries, err := os.ReadDir("../limiter")
	if err != nil {
		t.Fatalf("read limiter scripts: %v", err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".lua") {
			continue
		}
		n++
		path := filepath.Join("..", "limiter", e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rep := Lint(path, src)
			for _, f := range rep.Findings {
				t.Errorf("%s:%d: %s", f.File, f.Line, f.Message())
			}
			if rep.Calls == 0 {
				t.Errorf("Lint(%s) saw no redis.call; the scanner missed the script's calls", path)
			}
		})
	}
	if n == 0 {
		t.Fatal("no limiter/*.lua scripts found to lint")
	}
}
