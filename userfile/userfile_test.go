package userfile

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.lua")
	if err := os.WriteFile(small, []byte("return 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.lua")
	if err := os.WriteFile(big, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
		code             int
	}{
		{"regular", small, "", 0},
		{"too big", big, "more than the 1 KiB ceiling", exitcode.Usage},
		{"missing", filepath.Join(dir, "nope"), "no such file", exitcode.Usage},
		{"directory", dir, "is a directory, not a regular file", exitcode.Usage},
		{"fifo", fifo, "is a FIFO, not a regular file", exitcode.Usage},
		{"device", "/dev/zero", "is a character device", exitcode.Usage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			var b []byte
			var err error
			go func() { b, err = Read(tt.path, "script", 1024); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Read(%s) blocked", tt.path)
			}
			if code := exitcode.Code(err); code != tt.code {
				t.Fatalf("Read(%s) error %v (exit %d), want exit %d", tt.path, err, code, tt.code)
			}
			if tt.want == "" {
				if string(b) != "return 1" {
					t.Errorf("Read = %q", b)
				}
				return
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Read(%s) = %q, want one line containing %q", tt.path, err, tt.want)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	_, err := io.ReadAll(Limit(strings.NewReader(strings.Repeat("x", 100)), "stdin", 10))
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "10 bytes ceiling") {
		t.Errorf("ReadAll(Limit 10 of 100) error = %v, want the ceiling, exit 2", err)
	}
	b, err := io.ReadAll(Limit(strings.NewReader("0123456789"), "stdin", 10))
	if err != nil || len(b) != 10 {
		t.Errorf("ReadAll(Limit 10 of 10) = %d bytes, %v; want 10, nil", len(b), err)
	}
}
