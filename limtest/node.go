package limtest

import (
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The Node.js limiters: package.json and package-lock.json pin exact
// versions; server.js is the tiny server around them.
//
//go:embed node/package.json node/package-lock.json node/server.js
var nodeFiles embed.FS

// ExpressOptions configures express + express-rate-limit (and, with
// RedisURL, rate-limit-redis).
type ExpressOptions struct {
	// Limit and Window are express-rate-limit's limit and windowMs.
	Limit  int
	Window time.Duration
	// StandardHeaders is "" (false: none), "true" (draft-6, what true
	// means), "draft-6", "draft-7" or "draft-8".
	StandardHeaders string
	// LegacyHeaders sends X-RateLimit-Limit/-Remaining/-Reset. The
	// library's own default is true; here it is what the test says.
	LegacyHeaders bool
	// KeyHeader keys clients by this request header, falling back to the
	// client address (ipKeyGenerator) when a request does not carry it; ""
	// keys by address only (the library's default).
	KeyHeader string
	// StatusCode of a refusal; 0 is the library's 429.
	StatusCode int
	// RedisURL, when set, stores counts in that Redis through
	// rate-limit-redis (a fixed window anchored at a key's first hit).
	RedisURL string
	// RedisClient is "ioredis" (the default) or "redis" (node-redis).
	RedisClient string
	// RedisCommandTimeout is ioredis's commandTimeout (0: none, ioredis
	// then waits for a paused Redis).
	RedisCommandTimeout time.Duration
	// Prefix of the Redis keys; "" means "rl:" (rate-limit-redis's).
	Prefix string
	// PassOnStoreError lets requests through when the store fails.
	PassOnStoreError bool
}

// FlexibleOptions configures rate-limiter-flexible.
type FlexibleOptions struct {
	// Points and Duration are the library's points and duration: Points
	// requests per Duration, a fixed window from a key's first request.
	// RateLimiterRedis counts Duration in whole seconds.
	Points   int
	Duration time.Duration
	// BlockDuration blocks a key that went over Points for this long.
	BlockDuration time.Duration
	// KeyHeader keys clients by this request header, falling back to the
	// peer address; "" keys by peer address only.
	KeyHeader string
	// StatusCode of a refusal; 0 means 429.
	StatusCode int
	// IntegerRetryAfter sends Math.ceil(msBeforeNext / 1000); by default
	// Retry-After is msBeforeNext / 1000 as the library's README example
	// sets it, a fraction such as "1.234".
	IntegerRetryAfter bool
	// RedisURL, when set, uses RateLimiterRedis on that Redis; else
	// RateLimiterMemory.
	RedisURL string
	// RedisClient is "ioredis" (the default) or "redis" (node-redis).
	RedisClient string
	// RedisCommandTimeout is ioredis's commandTimeout (0: none).
	RedisCommandTimeout time.Duration
	// Prefix is the library's keyPrefix; "" means "rlflx".
	Prefix string
	// FailOpen answers 200 when the store fails (else 500).
	FailOpen bool
}

// SlowDownOptions configures express + express-slow-down.
type SlowDownOptions struct {
	// DelayAfter requests per Window are served at once (delayAfter,
	// windowMs); each one after is held Step longer than the one before
	// (delayMs: (used - delayAfter) x Step), at most MaxDelay (maxDelayMs;
	// 0: no cap, the library's Infinity).
	DelayAfter int
	Window     time.Duration
	Step       time.Duration
	MaxDelay   time.Duration
	// KeyHeader keys clients by this request header, falling back to the
	// client address.
	KeyHeader string
}

// nodeConfig is what server.js reads from LIMTEST_CONFIG.
type nodeConfig struct {
	Kind                  string  `json:"kind"`
	WindowMs              int64   `json:"windowMs,omitempty"`
	Limit                 int     `json:"limit,omitempty"`
	StandardHeaders       string  `json:"standardHeaders,omitempty"`
	LegacyHeaders         bool    `json:"legacyHeaders,omitempty"`
	PassOnStoreError      bool    `json:"passOnStoreError,omitempty"`
	Points                int     `json:"points,omitempty"`
	DurationSec           float64 `json:"durationSec,omitempty"`
	BlockDurationSec      float64 `json:"blockDurationSec,omitempty"`
	IntegerRetryAfter     bool    `json:"integerRetryAfter,omitempty"`
	FailOpen              bool    `json:"failOpen,omitempty"`
	KeyHeader             string  `json:"keyHeader,omitempty"`
	StatusCode            int     `json:"statusCode,omitempty"`
	RedisURL              string  `json:"redisUrl,omitempty"`
	RedisClient           string  `json:"redisClient,omitempty"`
	RedisCommandTimeoutMs int64   `json:"redisCommandTimeoutMs,omitempty"`
	Prefix                string  `json:"prefix,omitempty"`
	StepMs                int64   `json:"stepMs,omitempty"`
	MaxDelayMs            int64   `json:"maxDelayMs,omitempty"`
}

// Express starts express with express-rate-limit on a loopback port the
// kernel picks and returns its base URL. The npm packages are installed
// once (see NodeModules).
func Express(t testing.TB, opts ExpressOptions) string {
	t.Helper()
	if opts.Limit <= 0 || opts.Window <= 0 {
		t.Fatalf("limtest.Express: Limit and Window must be positive, got %d and %s", opts.Limit, opts.Window)
	}
	switch opts.StandardHeaders {
	case "", "true", "draft-6", "draft-7", "draft-8":
	default:
		t.Fatalf("limtest.Express: StandardHeaders %q is not \"\", \"true\", \"draft-6\", \"draft-7\" or \"draft-8\"", opts.StandardHeaders)
	}
	return startNode(t, "express", nodeConfig{
		Kind:                  "express",
		WindowMs:              opts.Window.Milliseconds(),
		Limit:                 opts.Limit,
		StandardHeaders:       opts.StandardHeaders,
		LegacyHeaders:         opts.LegacyHeaders,
		PassOnStoreError:      opts.PassOnStoreError,
		KeyHeader:             opts.KeyHeader,
		StatusCode:            opts.StatusCode,
		RedisURL:              opts.RedisURL,
		RedisClient:           opts.RedisClient,
		RedisCommandTimeoutMs: opts.RedisCommandTimeout.Milliseconds(),
		Prefix:                opts.Prefix,
	})
}

// Flexible starts rate-limiter-flexible (RateLimiterMemory, or
// RateLimiterRedis with RedisURL) behind a tiny node http server that
// answers a refusal with the library's README headers: Retry-After,
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (epoch
// seconds); allowed answers carry the X-RateLimit-* ones. It returns the
// base URL.
func Flexible(t testing.TB, opts FlexibleOptions) string {
	t.Helper()
	if opts.Points <= 0 || opts.Duration <= 0 {
		t.Fatalf("limtest.Flexible: Points and Duration must be positive, got %d and %s", opts.Points, opts.Duration)
	}
	return startNode(t, "rate-limiter-flexible", nodeConfig{
		Kind:                  "flexible",
		Points:                opts.Points,
		DurationSec:           opts.Duration.Seconds(),
		BlockDurationSec:      opts.BlockDuration.Seconds(),
		IntegerRetryAfter:     opts.IntegerRetryAfter,
		FailOpen:              opts.FailOpen,
		KeyHeader:             opts.KeyHeader,
		StatusCode:            opts.StatusCode,
		RedisURL:              opts.RedisURL,
		RedisClient:           opts.RedisClient,
		RedisCommandTimeoutMs: opts.RedisCommandTimeout.Milliseconds(),
		Prefix:                opts.Prefix,
	})
}

// SlowDown starts express with express-slow-down on a loopback port the
// kernel picks and returns its base URL: it never refuses, it delays.
func SlowDown(t testing.TB, opts SlowDownOptions) string {
	t.Helper()
	if opts.DelayAfter <= 0 || opts.Window <= 0 || opts.Step <= 0 {
		t.Fatalf("limtest.SlowDown: DelayAfter, Window and Step must be positive, got %d, %s and %s", opts.DelayAfter, opts.Window, opts.Step)
	}
	return startNode(t, "express-slow-down", nodeConfig{
		Kind:       "slowdown",
		WindowMs:   opts.Window.Milliseconds(),
		Limit:      opts.DelayAfter,
		StepMs:     opts.Step.Milliseconds(),
		MaxDelayMs: opts.MaxDelay.Milliseconds(),
		KeyHeader:  opts.KeyHeader,
	})
}

func startNode(t testing.TB, name string, cfg nodeConfig) string {
	t.Helper()
	modules := NodeModules(t)
	node, err := lookBinary("node", "nodejs")
	if err != nil {
		need(t, "node not found (Debian: apt-get install nodejs npm): %v", err)
	}
	script, err := nodeFiles.ReadFile("node/server.js")
	if err != nil {
		t.Fatalf("limtest: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "server.js")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		t.Fatalf("limtest: %v", err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("limtest: %v", err)
	}
	cmd := exec.Command(node, path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"LIMTEST_CONFIG="+string(raw),
		"NODE_PATH="+modules,
		"NODE_ENV=production",
		"NO_COLOR=1",
	)
	p := start(t, name, cmd)
	port, err := p.waitListening(StartTimeout)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	return baseURL(port)
}

var nodeInstall struct {
	once sync.Once
	dir  string
	err  error
}

// NodeModules returns the node_modules directory holding the pinned
// packages of limtest/node/package-lock.json, installing them the first
// time in this test binary with `npm ci --no-audit --no-fund
// --ignore-scripts` into a cache directory keyed by the lockfile's hash
// (kept between runs). A failed install fails the test under CI and skips
// it otherwise.
func NodeModules(t testing.TB) string {
	t.Helper()
	nodeInstall.once.Do(func() {
		nodeInstall.dir, nodeInstall.err = installNodeModules()
	})
	if nodeInstall.err != nil {
		need(t, "npm packages for the Node.js limiters: %v", nodeInstall.err)
	}
	return nodeInstall.dir
}

func installNodeModules() (string, error) {
	if _, err := lookBinary("node", "nodejs"); err != nil {
		return "", fmt.Errorf("node not found (Debian: apt-get install nodejs npm): %w", err)
	}
	npm, err := lookBinary("npm")
	if err != nil {
		return "", fmt.Errorf("npm not found (Debian: apt-get install npm): %w", err)
	}
	pkg, err := nodeFiles.ReadFile("node/package.json")
	if err != nil {
		return "", err
	}
	lock, err := nodeFiles.ReadFile("node/package-lock.json")
	if err != nil {
		return "", err
	}
	final := filepath.Join(cacheRoot(), "node-"+hashOf(pkg, lock))
	modules := filepath.Join(final, "node_modules")
	if _, err := os.Stat(filepath.Join(final, ".complete")); err == nil {
		return modules, nil
	}
	if err := os.MkdirAll(cacheRoot(), 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(cacheRoot(), "node-install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "NO_UPDATE_NOTIFIER=1", "npm_config_update_notifier=false")
	if err := runLogged(5*time.Minute, cmd); err != nil {
		return "", fmt.Errorf("install the pinned packages of limtest/node/package-lock.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(work, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := publish(work, final); err != nil {
		return "", err
	}
	return modules, nil
}
