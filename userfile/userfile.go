// Package userfile opens the files a user names on the command line
// (scripts, key lists, request bodies, saved documents, TLS certificates
// and keys) with the limits a tool pointed at production needs: only
// regular files, never a device, FIFO or directory that could block
// forever or never end, and never more than a stated size.
package userfile

import (
	"fmt"
	"io"
	"os"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// Size ceilings, documented in the README's "Safety" section.
const (
	MaxScript   = 1 << 20   // a Lua script: 1 MiB
	MaxBody     = 16 << 20  // a load request body: 16 MiB
	MaxDocument = 256 << 20 // a saved result document: 256 MiB
	MaxTLS      = 1 << 20   // a PEM certificate, CA bundle or key (--tls-ca, --tls-cert, --tls-key): 1 MiB
)

// Open opens path for reading after checking that it is a regular file.
// what names the file in errors ("script", "--body file"). Errors are
// exit 2 and fit on one line.
func Open(path, what string) (*os.File, error) {
	if path == "" {
		return nil, exitcode.Usagef("%s: no file name given", what)
	}
	// stat before opening: opening a FIFO blocks until a writer appears
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, exitcode.Usagef("%s %s is %s, not a regular file; pass a file (copy a stream to a file first)", what, path, kind(st.Mode()))
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Usagef("read %s: %w", what, unwrapPath(err))
	}
	st, err := fh.Stat()
	if err != nil {
		_ = fh.Close()
		return nil, exitcode.Usagef("read %s %s: %w", what, path, err)
	}
	if !st.Mode().IsRegular() {
		_ = fh.Close()
		return nil, exitcode.Usagef("%s %s is %s, not a regular file; pass a file (copy a stream to a file first)", what, path, kind(st.Mode()))
	}
	return fh, nil
}

// Read returns the contents of the regular file path, refusing one larger
// than max bytes (exit 2, naming the ceiling).
func Read(path, what string, max int64) ([]byte, error) {
	fh, err := Open(path, what)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if st, err := fh.Stat(); err == nil && st.Size() > max {
		return nil, exitcode.Usagef("%s %s is %s, more than the %s ceiling", what, path, human(st.Size()), human(max))
	}
	// the file may grow while it is read: never read past max
	b, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, exitcode.Usagef("read %s %s: %w", what, path, err)
	}
	if int64(len(b)) > max {
		return nil, exitcode.Usagef("%s %s is more than the %s ceiling", what, path, human(max))
	}
	return b, nil
}

// Limit wraps r so that reading more than max bytes fails with a one-line
// exit-2 error naming what was read, for streams (stdin) that cannot be
// checked up front.
func Limit(r io.Reader, what string, max int64) io.Reader {
	return &limited{r: r, what: what, max: max, left: max}
}

type limited struct {
	r         io.Reader
	what      string
	max, left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, exitcode.Usagef("%s is more than the %s ceiling", l.what, human(l.max))
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n - int(-l.left), exitcode.Usagef("%s is more than the %s ceiling", l.what, human(l.max))
	}
	return n, err
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

func human(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// unwrapPath keeps "open x: no such file or directory" as it is: the path
// is already in the *PathError's message.
func unwrapPath(err error) error { return err }
