package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartRefusesMissingTempDir (issue 26): with TMPDIR pointing nowhere
// (or at a file) Start failed with an unmarked error the command reported
// as an internal bug (exit 4). It is a configuration error naming TMPDIR,
// on one line, and nothing is started.
func TestStartRefusesMissingTempDir(t *testing.T) {
	if _, err := FindBinary(""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is required when CI is set: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(t.TempDir(), "missing", "dir"), file} {
		t.Setenv("TMPDIR", dir)
		sb, err := Start(context.Background(), Config{})
		if err == nil {
			_ = sb.Stop()
			t.Fatalf("Start with TMPDIR=%s succeeded", dir)
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "TMPDIR "+dir) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Start with TMPDIR=%s = %v, want one ErrConfig line naming TMPDIR %s", dir, err, dir)
		}
	}
}
