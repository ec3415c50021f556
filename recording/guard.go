package recording

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ratelimit-dev/ratelimit/words"
)

// Ceilings of what a recording may inflate to and hold, checked as it is
// read, so a file of a few MB cannot keep the reader busy for minutes: a
// gzip member that inflates to 20 GiB of blank lines, a plain file of
// nothing but newlines. A recording of k6 or vegeta compresses about 10
// to 30 times and has no blank lines besides a trailing one.
const (
	// MaxInflated bounds the bytes a gzipped recording inflates to.
	MaxInflated = 32 << 30
	// MaxInflateRatio bounds the bytes it inflates to per byte read, once
	// past inflateGrace: deflate reaches about 1,000 on a run of one byte.
	MaxInflateRatio = 200
	inflateGrace    = 16 << 20
	// MaxLines bounds the lines of a recording; MaxBlankLines those with
	// nothing on them.
	MaxLines      = 1_000_000_000
	MaxBlankLines = 1_000_000
)

// ceilingError is a recording refused at a ceiling: its message names the
// ceiling and stands for itself, without the line it was found at. A guard
// keeps it where Read finds it (recorder.ceiling): whatever a reader made
// of the cut input (a partial last line), the ceiling is what is said.
type ceilingError struct{ msg string }

func (e *ceilingError) Error() string { return e.msg }

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// inflateGuard stops a gzip reader at MaxInflated bytes, or at
// MaxInflateRatio times what it read of the compressed stream.
type inflateGuard struct {
	z       io.Reader
	in      *countReader
	out     int64
	tripped *error // where a ceiling passed is kept (recorder.ceiling)
}

func (g *inflateGuard) Read(p []byte) (int, error) {
	if *g.tripped != nil {
		return 0, *g.tripped
	}
	n, err := g.z.Read(p)
	g.out += int64(n)
	switch {
	case g.out > MaxInflated:
		*g.tripped = &ceilingError{msg: fmt.Sprintf("it inflates to more than %s bytes, the ceiling of a gzipped recording; judge it in parts", words.Commas(int64(MaxInflated)))}
	case g.out > inflateGrace && g.out > MaxInflateRatio*max(g.in.n, 1):
		*g.tripped = &ceilingError{msg: fmt.Sprintf("it inflates to more than %d times its compressed size (%s bytes from %s): a decompression bomb, not a recording (k6 and vegeta output compresses 10 to 30 times)",
			MaxInflateRatio, words.Commas(g.out), words.Commas(g.in.n))}
	default:
		return n, err
	}
	return 0, *g.tripped
}

// lineGuard counts lines, and lines with only white space on them, as
// they are read.
func (r *recorder) lineGuard(br io.Reader) io.Reader {
	tripped := new(error)
	if r != nil {
		tripped = &r.ceiling
	}
	return &lineGuard{r: br, tripped: tripped}
}

type lineGuard struct {
	r            io.Reader
	lines, blank int64
	text         bool   // the line being read has more than white space
	tripped      *error // where a ceiling passed is kept (recorder.ceiling)
}

func (g *lineGuard) Read(p []byte) (int, error) {
	if *g.tripped != nil {
		return 0, *g.tripped
	}
	n, err := g.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		if !g.text && len(bytes.TrimLeft(seg, " \t\r")) > 0 {
			g.text = true
		}
		if i < 0 {
			break
		}
		g.lines++
		if !g.text {
			g.blank++
		}
		g.text = false
		b = b[i+1:]
	}
	switch {
	case g.lines > MaxLines:
		*g.tripped = &ceilingError{msg: fmt.Sprintf("more than %s lines, the ceiling of a recording; judge it in parts", words.Commas(int64(MaxLines)))}
	case g.blank > MaxBlankLines:
		*g.tripped = &ceilingError{msg: fmt.Sprintf("more than %s blank lines: k6 and vegeta write none, so this is not a recording", words.Commas(int64(MaxBlankLines)))}
	default:
		return n, err
	}
	return 0, *g.tripped
}
