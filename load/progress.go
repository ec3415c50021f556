package load

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// FallbackColumns is the width assumed on a terminal that reports no size
// (script(1), some CI terminals, tmux before its first resize).
const FallbackColumns = 80

// TermSize reports the columns and rows of a terminal; an error, or 0
// columns, means the terminal does not say.
type TermSize func() (cols, rows int, err error)

// console is the bar's terminal: it asks size for the width at every
// redraw and falls back to FallbackColumns when the terminal reports
// none (mpb would otherwise draw nothing).
type console struct {
	bytes.Buffer
	out  io.Writer
	size TermSize
}

func (c *console) IsTerminal() bool { return true }

func (c *console) GetTermSize() (int, int, error) {
	cols, rows, err := c.size()
	if err != nil || cols <= 0 {
		cols = FallbackColumns
	}
	if err != nil || rows <= 0 {
		rows = 24
	}
	return cols, rows, nil
}

// Flush writes the frame and moves the cursor back up over its lines, so
// the next frame draws over it.
func (c *console) Flush(lines int) error {
	if _, err := c.WriteTo(c.out); err != nil {
		return err
	}
	if lines <= 0 {
		return nil
	}
	_, err := io.WriteString(c.out, "\x1b["+strconv.Itoa(lines)+"A\x1b[J")
	return err
}

// fileSize reads the terminal size of w when it is a file.
func fileSize(w io.Writer) TermSize {
	return func() (int, int, error) {
		f, ok := w.(*os.File)
		if !ok {
			return 0, 0, fmt.Errorf("not a terminal")
		}
		return term.GetSize(f.Fd())
	}
}

// Progress draws a live bar on w (a terminal): elapsed of duration, then
// sent, 2xx, 429, failed, dropped and busy VUs from live. Call the returned
// stop function once the run is over; it removes nothing from the output
// stream but the bar itself, and returns when the bar is drawn for the last
// time. size reports the terminal's size (nil: ask w's file descriptor); a
// terminal that reports none is drawn at FallbackColumns.
func Progress(w io.Writer, live *Live, d time.Duration, size TermSize) (stop func()) {
	if size == nil {
		size = fileSize(w)
	}
	p := mpb.New(mpb.WithConsoleWriter(&console{out: w, size: size}), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	total := d.Milliseconds()
	// Short labels: the line must fit the terminal (80 columns when mpb
	// cannot tell) or mpb cuts it.
	bar := p.AddBar(total,
		mpb.PrependDecorators(decor.Any(func(s decor.Statistics) string {
			return fmt.Sprintf("load %.1fs/%s", float64(s.Current)/1000, d)
		})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			return fmt.Sprintf("sent %d 2xx %d 429 %d fail %d drop %d vus %d",
				live.Sent.Load(), live.OK.Load(), live.Limited.Load(),
				live.Failed.Load(), live.Dropped.Load(), live.ActiveVUs.Load())
		})),
		mpb.BarWidth(20),
		mpb.BarRemoveOnComplete(),
	)
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				bar.SetCurrent(total)
				p.Wait()
				return
			case <-t.C:
				bar.SetCurrent(min(time.Since(start).Milliseconds(), total-1))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
