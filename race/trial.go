package race

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// outcome is one goroutine's request.
type outcome struct {
	admitted bool
	wrote    bool // a write of this request reached Redis
	retries  int
	gaveUp   bool
	err      error
	latency  time.Duration
	// sent and done are when the call was sent and answered, from the
	// barrier's opening.
	sent, done time.Duration
}

// trial is one strategy's trial.
type trial struct {
	outcomes []outcome
	wall     time.Duration
	final    *int64
	startMs  int64 // wall clock of the barrier's opening, ms
}

// runTrial starts opts.Concurrency goroutines that each take a dedicated
// connection and PING through it, waits until all are ready, opens the
// barrier and waits for every request.
func runTrial(ctx context.Context, node *redis.Client, s strategy, key string, opts Options) (trial, error) {
	n := opts.Concurrency
	outs := make([]outcome, n)
	warmErrs := make([]error, n)
	start, abort := make(chan struct{}), make(chan struct{})
	dials := make(chan struct{}, opts.WarmParallel)
	var ready, done sync.WaitGroup
	var t0 time.Time // set before the barrier opens, read after
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			conn := node.Conn()
			defer conn.Close()
			dials <- struct{}{}
			warmErrs[i] = conn.Ping(ctx).Err()
			<-dials
			ready.Done()
			select {
			case <-start:
			case <-abort:
				return
			}
			sent := time.Since(t0)
			o := s.call(ctx, conn, key, i)
			o.done = time.Since(t0)
			o.sent, o.latency = sent, o.done-sent
			outs[i] = o
		}()
	}
	ready.Wait()
	if slices.ContainsFunc(warmErrs, func(e error) bool { return e != nil }) {
		full := serverFull(ctx, node) // asked while the connections are held
		close(abort)
		done.Wait() // the connections are back: the server can be asked why
		return trial{}, warmError(ctx, node, warmErrs, full)
	}
	t0 = time.Now()
	close(start)
	done.Wait()
	wall := time.Since(t0)
	if ctx.Err() != nil {
		return trial{}, ctx.Err()
	}
	return trial{outcomes: outs, wall: wall, startMs: t0.UnixMilli()}, nil
}
