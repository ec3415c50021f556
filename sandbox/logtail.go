package sandbox

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"
)

// tailLines and tailBytes bound what a node keeps of its own log.
const (
	tailLines = 32
	tailBytes = 16 << 10
)

// logTail keeps the last lines a server wrote to its standard output and
// error (redis-server logs there with --logfile ""), passing everything on
// to an optional writer. It is how a server's own reason for exiting at
// start reaches the user.
type logTail struct {
	mu      sync.Mutex
	next    io.Writer
	partial []byte
	lines   []string
}

func (t *logTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next != nil {
		// a failing log writer must not stop the server's output
		_, _ = t.next.Write(p)
	}
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.add(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > tailBytes {
		t.add(string(t.partial[:tailBytes]))
		t.partial = t.partial[:0]
	}
	return len(p), nil
}

func (t *logTail) add(line string) {
	line = strings.TrimRight(line, "\r")
	if len(line) > tailBytes/tailLines*4 {
		line = line[:tailBytes/tailLines*4]
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

// Lines returns the kept lines, the unfinished last one included.
func (t *logTail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	return out
}

// logPrefix is redis-server's log line prefix: "pid:role date time level ".
var logPrefix = regexp.MustCompile(`^\d+:[A-Z] \d{1,2} [A-Za-z]{3} \d{4} [\d:.]+ [.\-*#] `)

// reason picks the line that says why a server stopped: the last line
// that is neither empty nor a banner, without the log prefix. For a
// configuration error redis-server prints the offending line as
// ">>> 'name value'" before the reason; both are joined. It returns ""
// when the server said nothing.
func (t *logTail) reason() string {
	lines := t.Lines()
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(logPrefix.ReplaceAllString(lines[i], ""))
		if l == "" || strings.HasPrefix(l, "***") || strings.Contains(l, "oO0OoO0OoO0Oo") {
			continue
		}
		if i > 0 {
			prev := strings.TrimSpace(lines[i-1])
			if what, ok := strings.CutPrefix(prev, ">>> "); ok && !strings.HasPrefix(l, ">>> ") {
				l = strings.Trim(what, "'") + ": " + l
			}
		}
		// a bind failure is announced by the line before "aborting"
		if strings.HasPrefix(l, "Failed listening on port") && i > 0 {
			prev := strings.TrimSpace(logPrefix.ReplaceAllString(lines[i-1], ""))
			if strings.Contains(prev, "Could not create server") {
				l = strings.TrimPrefix(prev, "Warning: ")
			}
		}
		return strings.ToValidUTF8(strings.Join(strings.Fields(l), " "), "?")
	}
	return ""
}

// portTaken reports whether the server's log says its port was taken.
func (t *logTail) portTaken() bool {
	for _, l := range t.Lines() {
		if strings.Contains(l, "Address already in use") {
			return true
		}
	}
	return false
}
