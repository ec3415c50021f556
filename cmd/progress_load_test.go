package cmd

import (
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// drawn is a terminal that says when the first frame of the bar with
// its counters ("sent ") reached it.
type drawn struct {
	redistest.Buffer
	once  sync.Once
	first chan struct{}
}

func (d *drawn) Write(p []byte) (int, error) {
	n, err := d.Buffer.Write(p)
	if strings.Contains(d.String(), "sent ") {
		d.once.Do(func() { close(d.first) })
	}
	return n, err
}

// runLoadProgress draws the load bar on a terminal of the given size
// until its first frame is drawn, stops it and returns what it wrote.
func runLoadProgress(t *testing.T, size func() (int, int, error)) string {
	t.Helper()
	w := drawn{first: make(chan struct{})}
	f := &Factory{IO: IOStreams{ErrOut: &w, ErrTTY: true, ErrSize: size}}
	live := &load.Live{}
	live.Sent.Store(12)
	live.OK.Store(10)
	live.Limited.Store(2)
	live.Dropped.Store(3)
	live.ActiveVUs.Store(4)
	stop := loadProgress(f, live, 2*time.Second)
	select {
	case <-w.first:
	case <-time.After(10 * time.Second):
		stop()
		t.Fatalf("no frame with the counters drawn in 10 s: %q", w.String())
	}
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("stop did not return")
	}
	return w.String()
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// widest is the widest line of out, escapes removed, in runes.
func widest(out string) int {
	n := 0
	for _, l := range strings.FieldsFunc(ansi.ReplaceAllString(out, ""), func(r rune) bool { return r == '\n' || r == '\r' }) {
		n = max(n, utf8.RuneCountInString(l))
	}
	return n
}

func TestLoadProgress(t *testing.T) {
	out := runLoadProgress(t, func() (int, int, error) { return 120, 40, nil })
	for _, want := range []string{"load ", "sent 12", "2xx 10", "429 2", "drop 3", "vus 4"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q: %q", want, out)
		}
	}
}

// A terminal that reports no size (script -qc, some CI terminals, tmux
// before its first resize) gets the bar at 80 columns, not nothing.
func TestLoadProgressNoTerminalSize(t *testing.T) {
	sizes := map[string]func() (int, int, error){
		"none":  nil,
		"zero":  func() (int, int, error) { return 0, 0, nil },
		"error": func() (int, int, error) { return 0, 0, errors.New("inappropriate ioctl for device") },
	}
	for name, size := range sizes {
		t.Run(name, func(t *testing.T) {
			out := runLoadProgress(t, size)
			if !strings.Contains(out, "sent 12") || !strings.Contains(out, "load ") {
				t.Fatalf("no bar on a terminal without a size: %q", out)
			}
			if n := widest(out); n > fallbackColumns {
				t.Errorf("bar is %d columns wide, want at most %d: %q", n, fallbackColumns, out)
			}
		})
	}
}

// A size the terminal does report is honoured.
func TestLoadProgressHonoursWidth(t *testing.T) {
	out := runLoadProgress(t, func() (int, int, error) { return 60, 20, nil })
	if n := widest(out); n == 0 || n > 60 {
		t.Errorf("bar is %d columns wide on a 60-column terminal: %q", n, out)
	}
}
