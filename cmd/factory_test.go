package cmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/schematest"
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
// Every document a command writes (-o json on Out, --out FILE) is
// validated against its kind's schema in docs/schema.
func (tf *testFactory) execute(t *testing.T, args ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := tf.Out.Len()
	code := run(ctx, tf.Factory, args)
	if code == exitcode.OK || code == exitcode.Failed || code == exitcode.Interrupted {
		validateDocuments(t, args, tf.Out.Bytes()[start:])
	}
	return code
}

// documentCommands are the commands whose -o json is a result document.
var documentCommands = map[string]bool{"eval": true, "race": true, "load": true, "keyslot": true, "scripts": true, "report": true, "probe": true, "failover": true, "merge": true, "check": true}

// validateDocuments checks the documents of one command run: its -o json
// output and its --out file.
func validateDocuments(t *testing.T, args []string, out []byte) {
	t.Helper()
	if len(args) == 0 || !documentCommands[args[0]] {
		return
	}
	jsonOut := false
	for i, a := range args {
		if a == "--" {
			break
		}
		switch {
		case (a == "-o" || a == "--output") && i+1 < len(args):
			jsonOut = args[i+1] == "json"
		case a == "-ojson" || a == "--output=json" || a == "-o=json":
			jsonOut = true
		case a == "--out" && i+1 < len(args) && args[0] != "report":
			if data, err := os.ReadFile(args[i+1]); err == nil && len(data) > 0 {
				schematest.Validate(t, "--out "+args[i+1], data)
			}
		}
	}
	if jsonOut && len(bytes.TrimSpace(out)) > 0 {
		schematest.Validate(t, strings.Join(args, " ")+" -o json", out)
	}
}

// TestProgressWriterFallbackSize: a terminal that reports no size (0x0,
// as under 'script' or tmux before its first resize) or fails to report
// one gets 80x24; a real size is kept.
func TestProgressWriterFallbackSize(t *testing.T) {
	for _, tc := range []struct {
		name         string
		size         func() (int, int, error)
		wantW, wantH int
	}{
		{"no size function", nil, 80, 24},
		{"zero size", func() (int, int, error) { return 0, 0, nil }, 80, 24},
		{"error", func() (int, int, error) { return 120, 40, errors.New("inappropriate ioctl for device") }, 80, 24},
		{"zero columns only", func() (int, int, error) { return 0, 50, nil }, 80, 50},
		{"real size", func() (int, int, error) { return 132, 43, nil }, 132, 43},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Factory{IO: IOStreams{ErrOut: &bytes.Buffer{}, ErrTTY: true, ErrSize: tc.size}}
			w, h, err := f.ProgressWriter().GetTermSize()
			if err != nil || w != tc.wantW || h != tc.wantH {
				t.Errorf("GetTermSize() = %d, %d, %v, want %d, %d, nil", w, h, err, tc.wantW, tc.wantH)
			}
		})
	}
}

// TestProgressBarDrawsWithoutTerminalSize: mpb drawing through
// ProgressWriter on a terminal of unknown size still writes the bar (mpb's
// own writer renders nothing there: zero rows leave no room).
func TestProgressBarDrawsWithoutTerminalSize(t *testing.T) {
	var errOut bytes.Buffer
	f := &Factory{IO: IOStreams{ErrOut: &errOut, ErrTTY: true, ErrSize: func() (int, int, error) { return 0, 0, nil }}}
	p := mpb.New(mpb.WithConsoleWriter(f.ProgressWriter()), mpb.WithWidth(40))
	bar := p.AddBar(4, mpb.PrependDecorators(decor.Name("probe "), decor.CountersNoUnit("%d/%d done")))
	bar.SetCurrent(4)
	p.Wait()
	if out := errOut.String(); !strings.Contains(out, "probe 4/4 done") {
		t.Errorf("progress output %q lacks the bar", out)
	}
}
