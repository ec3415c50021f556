package cmd

import (
	"fmt"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/ratelimit-dev/ratelimit/load"
)

// loadProgress draws a live bar of a load run on ErrOut, which must be a
// terminal: elapsed of d, then sent, 2xx, 429, failed, dropped and busy
// VUs read from live (load keeps the counters, cmd draws them). A terminal
// that reports no size is drawn at 80 columns (Factory.ProgressWriter).
// Call the returned stop once the run is over: it removes the bar and
// returns when the bar is drawn for the last time.
func loadProgress(f *Factory, live *load.Live, d time.Duration) (stop func()) {
	p := mpb.New(mpb.WithConsoleWriter(f.ProgressWriter()), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	total := d.Milliseconds()
	// Short labels: the line must fit the terminal (80 columns when it
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
