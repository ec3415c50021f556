package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/vbauerster/mpb/v8"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/report"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// IOStreams are the command's standard streams and whether each is a terminal.
type IOStreams struct {
	In             io.Reader
	Out, ErrOut    io.Writer
	OutTTY, ErrTTY bool
	// ErrSize reports the size of the terminal behind ErrOut in columns
	// and rows; nil, an error or a zero size means unknown (a pty that
	// reports no size, as under 'script' or tmux before its first resize).
	ErrSize func() (width, height int, err error)
}

// GlobalOptions are the persistent flags every subcommand shares.
type GlobalOptions struct {
	RedisURL string
	// RedisURLSet is true when --redis was given, even as "" (an unset
	// variable): then it is never replaced by REDIS_URL or the default.
	RedisURLSet   bool
	TLSCA         string
	TLSCert       string
	TLSKey        string
	TLSSkipVerify bool
	Cluster       *bool // nil: detect from INFO cluster
	Output        string
	NoColor       bool
	RedisTimeout  time.Duration
}

// Factory carries what commands share.
type Factory struct {
	IO     IOStreams
	Now    func() time.Time
	Getenv func(string) string
	Global *GlobalOptions
	// Redis connects once, on first use, and is closed when the command ends.
	Redis func(ctx context.Context) (*redisconn.Conn, error)
	// DefaultRedisURL, when set, replaces redis://localhost:6379/0 as the
	// address tried when neither --redis nor REDIS_URL is given.
	DefaultRedisURL string
	// Args is the command line after the program name, recorded (secrets
	// masked) in every document; nil means os.Args. run sets it from the
	// arguments it is given, so tests record theirs.
	Args []string
	// Sandboxes are the sandboxes this process started (tests set it):
	// their servers count as owned, so the stop and restart faults of
	// load --fault may signal them.
	Sandboxes []*sandbox.Sandbox
	// Procs, when set, sizes the process's processors for a load run and
	// returns what sets them back: load.UseProcs in the real process; nil
	// in tests, where many commands share one process and its GOMAXPROCS.
	Procs func(load.Options) (restore func())

	// formats are the running command's -o formats (commandFormats),
	// what Format accepts when called without a list.
	formats []string

	mu   sync.Mutex
	conn *redisconn.Conn
}

// NewFactory returns the factory for the real process: os streams, the
// wall clock, the environment, and Redis resolved from the global flags.
func NewFactory() *Factory {
	f := &Factory{
		IO: IOStreams{
			In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
			OutTTY: isTerminal(os.Stdout), ErrTTY: isTerminal(os.Stderr),
			ErrSize: func() (int, int, error) { return term.GetSize(os.Stderr.Fd()) },
		},
		Now:    time.Now,
		Getenv: os.Getenv,
		Global: &GlobalOptions{Output: "text", RedisTimeout: 2 * time.Second},
		Procs:  load.UseProcs,
	}
	f.Redis = f.openRedis
	return f
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// RedisOptions turns the global flags (and REDIS_URL) into connection
// options. --redis, when given, wins; else a non-empty REDIS_URL (an empty
// one counts as unset); else nothing, which lets redisconn try
// localhost:6379 and then the embedded server.
func (f *Factory) RedisOptions() redisconn.Options {
	g := f.Global
	url, source := g.RedisURL, ""
	switch {
	case g.RedisURLSet || url != "":
		source = "--redis"
	case f.Getenv("REDIS_URL") != "":
		url, source = f.Getenv("REDIS_URL"), "REDIS_URL"
	}
	return redisconn.Options{
		URL:           url,
		Source:        source,
		TLSCA:         g.TLSCA,
		TLSCert:       g.TLSCert,
		TLSKey:        g.TLSKey,
		TLSSkipVerify: g.TLSSkipVerify,
		Cluster:       g.Cluster,
		Timeout:       g.RedisTimeout,
		Notice:        f.IO.ErrOut,
		DefaultURL:    f.DefaultRedisURL,
	}
}

// checkGlobal refuses bad global flags before any command runs: a
// --redis-timeout that is not positive, and a --redis URL that is blank,
// malformed or lacks a host (REDIS_URL is checked when a command connects,
// so a stale one does not break commands that never use Redis).
func (f *Factory) checkGlobal(redisSet bool) error {
	g := f.Global
	if redisSet {
		g.RedisURLSet = true
	}
	if g.RedisTimeout <= 0 {
		return exitcode.Usagef("--redis-timeout %s must be positive, e.g. 2s or 500ms", g.RedisTimeout)
	}
	if g.RedisURLSet {
		return redisconn.Check(f.RedisOptions())
	}
	return nil
}

func (f *Factory) openRedis(ctx context.Context) (*redisconn.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		return f.conn, nil
	}
	c, err := redisconn.Open(ctx, f.RedisOptions())
	if err != nil {
		return nil, err
	}
	f.conn = c
	return c, nil
}

// Close releases the Redis connection, if one was opened.
func (f *Factory) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		_ = f.conn.Close()
		f.conn = nil
	}
}

// Color reports whether Out may carry colour: a terminal, no --no-color,
// no NO_COLOR in the environment.
func (f *Factory) Color() bool {
	return f.IO.OutTTY && !f.Global.NoColor && f.Getenv("NO_COLOR") == ""
}

// ReportOptions are the text renderer's options for Out.
func (f *Factory) ReportOptions() report.Options {
	return report.Options{Color: f.Color()}
}

// Format returns the -o value after checking that the command supports
// it: that it is one of allowed or, without allowed, one of the running
// command's formats in commandFormats (the ones its help lists).
func (f *Factory) Format(allowed ...string) (string, error) {
	if len(allowed) == 0 {
		allowed = f.formats
	}
	if len(allowed) == 0 {
		allowed = []string{"text"}
	}
	o := strings.ToLower(strings.TrimSpace(f.Global.Output))
	if o == "" {
		o = "text"
	}
	if !slices.Contains(allowed, o) {
		if len(allowed) == 1 {
			return "", exitcode.Usagef("--output %q is not supported here; this command has only %s output", f.Global.Output, allowed[0])
		}
		return "", exitcode.Usagef("--output %q is not supported here; use one of %s", f.Global.Output, strings.Join(allowed, ", "))
	}
	return o, nil
}

// Fallback terminal size for progress bars when ErrOut is a terminal that
// reports no size.
const (
	fallbackColumns = 80
	fallbackRows    = 24
)

// ProgressWriter is the console writer for progress bars (mpb) on ErrOut,
// which must be a terminal. Unlike mpb's own, it does not give up when the
// terminal reports no size: it draws for 80 columns and 24 rows then.
func (f *Factory) ProgressWriter() mpb.ConsoleWriter {
	return &progressWriter{out: f.IO.ErrOut, size: f.IO.ErrSize}
}

type progressWriter struct {
	bytes.Buffer
	out  io.Writer
	size func() (width, height int, err error)
}

func (w *progressWriter) IsTerminal() bool { return true }

// GetTermSize is the terminal's size, or 80x24 in place of what it does
// not report.
func (w *progressWriter) GetTermSize() (width, height int, err error) {
	if w.size != nil {
		if width, height, err = w.size(); err != nil {
			width, height = 0, 0
		}
	}
	if width <= 0 {
		width = fallbackColumns
	}
	if height <= 0 {
		height = fallbackRows
	}
	return width, height, nil
}

// Flush writes the frame and queues the escapes that move the cursor back
// up over its lines and clear them, so the next frame overwrites it.
func (w *progressWriter) Flush(lines int) error {
	if _, err := w.WriteTo(w.out); err != nil {
		return err
	}
	if lines > 0 {
		fmt.Fprintf(&w.Buffer, "\x1b[%dA\x1b[J", lines)
	}
	return nil
}
