package limtest

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The httprate server's source, built at test time in a module of its own
// so that go-chi/httprate and go-chi/chi never enter the project's go.mod.
// go.mod and go.sum pin exact versions.
//
//go:embed httprate/main.go.txt httprate/go.mod.txt httprate/go.sum.txt
var httprateFiles embed.FS

// HttprateOptions configures github.com/go-chi/httprate.
type HttprateOptions struct {
	// Limit requests per Window (httprate.NewRateLimiter's arguments).
	Limit  int
	Window time.Duration
	// KeyHeader keys clients by this request header, falling back to the
	// client IP; "" keys by IP (chi's ClientIPFromRemoteAddr, then
	// httprate.CanonicalizeIP), as httprate's documentation recommends.
	KeyHeader string
	// ClockAligned passes an explicit httprate.NewLocalLimitCounter, which
	// makes windows start at multiples of Window on the wall clock. Without
	// it, httprate v0.16 aligns windows to the instant the limiter was
	// created (see HttprateWindowOffset).
	ClockAligned bool
}

// Httprate builds (once per test binary, cached between runs) and starts a
// tiny chi server limited by go-chi/httprate and returns its base URL. The
// build uses the shared module cache and the Go module proxy, in a module
// of its own (GOFLAGS=-mod=mod, GOWORK=off).
func Httprate(t testing.TB, opts HttprateOptions) string {
	t.Helper()
	if opts.Limit <= 0 || opts.Window <= 0 {
		t.Fatalf("limtest.Httprate: Limit and Window must be positive, got %d and %s", opts.Limit, opts.Window)
	}
	bin := httprateBinary(t)
	args := []string{"-limit", strconv.Itoa(opts.Limit), "-window", opts.Window.String()}
	if opts.KeyHeader != "" {
		args = append(args, "-key-header", opts.KeyHeader)
	}
	if opts.ClockAligned {
		args = append(args, "-clock-aligned")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	p := start(t, "httprate", cmd)
	port, err := p.waitListening(StartTimeout)
	if err != nil {
		t.Fatalf("start httprate server: %v", err)
	}
	return baseURL(port)
}

// HttprateWindowOffset asks a server that Httprate started where its
// windows start: windows are [k·Window + offset, (k+1)·Window + offset) in
// Unix time. The offset is 0 with ClockAligned; otherwise it is the
// limiter's creation instant modulo Window (httprate v0.16's windowOffset).
// The request does not pass through the limiter.
func HttprateWindowOffset(t testing.TB, baseURL string) (window, offset time.Duration) {
	t.Helper()
	resp, err := http.Get(baseURL + "/_limtest/window")
	if err != nil {
		t.Fatalf("httprate window: %v", err)
	}
	defer resp.Body.Close()
	var v struct {
		WindowNS int64 `json:"window_ns"`
		OffsetNS int64 `json:"offset_ns"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("httprate window: %v", err)
	}
	return time.Duration(v.WindowNS), time.Duration(v.OffsetNS)
}

var httprateBuild struct {
	once sync.Once
	bin  string
	err  error
}

// httprateBinary builds the server once per test binary into a cache
// directory keyed by its source, go.mod, go.sum and the Go version.
func httprateBinary(t testing.TB) string {
	t.Helper()
	httprateBuild.once.Do(func() {
		httprateBuild.bin, httprateBuild.err = buildHttprate()
	})
	if httprateBuild.err != nil {
		need(t, "build the go-chi/httprate server: %v", httprateBuild.err)
	}
	return httprateBuild.bin
}

func buildHttprate() (string, error) {
	goBin, err := lookBinary("go")
	if err != nil {
		return "", fmt.Errorf("go not found: %w", err)
	}
	files := map[string][]byte{}
	for _, name := range []string{"main.go", "go.mod", "go.sum"} {
		b, err := httprateFiles.ReadFile("httprate/" + name + ".txt")
		if err != nil {
			return "", err
		}
		files[name] = b
	}
	key := hashOf(files["main.go"], files["go.mod"], files["go.sum"], []byte(runtime.Version()))
	final := filepath.Join(cacheRoot(), "httprate-"+key)
	bin := filepath.Join(final, "httprate-server")
	if _, err := os.Stat(filepath.Join(final, ".complete")); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(cacheRoot(), 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(cacheRoot(), "httprate-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return "", err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", filepath.Join(work, "httprate-server"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if err := runLogged(5*time.Minute, cmd); err != nil {
		return "", err
	}
	if err := os.RemoveAll(src); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(work, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := publish(work, final); err != nil {
		return "", err
	}
	return bin, nil
}
