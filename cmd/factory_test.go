package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// testFactory is a Factory with buffers for streams, a fixed clock and an
// empty environment (so REDIS_URL and NO_COLOR of the machine do not leak in).
type testFactory struct {
	*Factory
	Out, ErrOut *bytes.Buffer
	Env         map[string]string
}

var testNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func newTestFactory(t *testing.T) *testFactory {
	t.Helper()
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	env := map[string]string{}
	f := NewFactory()
	f.IO = IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	f.Now = func() time.Time { return testNow }
	f.Getenv = func(k string) string { return env[k] }
	// A command run without --redis must never reach a server that happens
	// to listen on localhost:6379: port 1 refuses at once, so it falls back
	// to the embedded server.
	f.DefaultRedisURL = "redis://127.0.0.1:1/0"
	t.Cleanup(f.Close)
	return &testFactory{Factory: f, Out: out, ErrOut: errOut, Env: env}
}

// execute runs the command tree with args and returns the exit code.
func (tf *testFactory) execute(t *testing.T, args ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return run(ctx, tf.Factory, args)
}
