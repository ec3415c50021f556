package failover

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// call is one decision as the client saw it.
type call struct {
	seq         int64
	nowMs       int64     // the script's now_ms: the client's clock when it first sent the call
	sent, done  time.Time // first send, and the answer (or the give-up)
	node        string    // the primary that answered; "" when none did
	ok          bool      // the script answered
	d           limiter.Decision
	acks        int64             // WAIT's reply; -1 without WAIT
	errs        []redisconn.Class // the errors met on the way, in order
	firstErr    time.Time         // when the first of them came
	firstErrMsg string            // and what it said
	attempts    int               // sends, redirects and retries included
	recoveries  map[string]int    // what the client did about the errors
}

// Recovery actions, as the document names them.
const (
	recoverRedirect = "followed the MOVED redirect"
	recoverEval     = "sent the script with EVAL"
	recoverRefresh  = "asked the cluster for the slot's primary and retried"
)

// How one decision retries: for at most decisionBudget, following at
// most maxRedirects MOVED replies at once (nodes disagree for a moment
// after a failover), pausing retryPause before any other retry.
const (
	decisionBudget = 2 * time.Second
	maxRedirects   = 5
	retryPause     = 5 * time.Millisecond
)

// driver makes decisions for one key through a router.
type driver struct {
	lim         *limiter.Limiter
	r           *router
	key         string
	wait        int
	waitTimeout time.Duration
	now         func() time.Time
}

// decide runs the limiter's script once for the key, as a cluster-aware
// client would: EVALSHA (EVAL after NOSCRIPT), followed on the same
// connection by WAIT when d.wait > 0; a MOVED reply is followed at once,
// any other error retried after asking the cluster for the slot's
// primary, until the answer or decisionBudget.
func (d *driver) decide(ctx context.Context, seq int64) call {
	c := call{seq: seq, sent: d.now(), acks: -1}
	c.nowMs = c.sent.UnixMilli()
	id := ""
	if d.lim.NeedsID() {
		id = redislimit.NewID()
	}
	args := d.lim.Args(c.nowMs, id)
	keys := []string{d.key}
	eval := false
	for {
		addr := d.r.current()
		if addr == "" {
			if _, err := d.r.refresh(ctx); err != nil {
				if d.failed(ctx, &c, err) || sleep(ctx, retryPause) != nil {
					c.done = d.now()
					return c
				}
				continue
			}
			addr = d.r.current()
		}
		c.attempts++
		reply, acks, err := d.send(ctx, d.r.client(addr), keys, args, eval)
		if err == nil {
			dec, derr := d.lim.Decode(reply)
			if derr == nil {
				c.ok, c.node, c.d, c.acks, c.done = true, addr, dec, acks, d.now()
				return c
			}
			err = derr
		}
		cls := redisconn.Classify(err)
		if d.failed(ctx, &c, err) {
			return c
		}
		switch {
		case cls == redisconn.NoScript:
			eval = true
			c.recovered(recoverEval)
			continue
		case cls == redisconn.Moved && c.recoveries[recoverRedirect] < maxRedirects:
			if to, ok := movedTo(err, addr); ok && d.r.moveTo(to) {
				c.recovered(recoverRedirect)
				continue
			}
		}
		c.recovered(recoverRefresh)
		if sleep(ctx, retryPause) != nil {
			c.done = d.now()
			return c
		}
		_, _ = d.r.refresh(ctx)
	}
}

// failed records err on c and reports whether the decision is given up
// (the context ended or the budget is spent).
func (d *driver) failed(ctx context.Context, c *call, err error) bool {
	now := d.now()
	if c.firstErr.IsZero() {
		c.firstErr, c.firstErrMsg = now, err.Error()
	}
	c.errs = append(c.errs, redisconn.Classify(err))
	if ctx.Err() != nil || now.Sub(c.sent) > decisionBudget {
		c.done = now
		return true
	}
	return false
}

func (c *call) recovered(how string) {
	if c.recoveries == nil {
		c.recoveries = map[string]int{}
	}
	c.recoveries[how]++
}

// send makes one attempt on node: the script alone, or in one pipeline
// with WAIT (WAIT counts the replicas that have this connection's writes,
// so it must follow on the same connection).
func (d *driver) send(ctx context.Context, node *redis.Client, keys []string, args []any, eval bool) (any, int64, error) {
	script := redislimit.Script(d.lim)
	if d.wait == 0 {
		var cmd *redis.Cmd
		if eval {
			cmd = script.Eval(ctx, node, keys, args...)
		} else {
			cmd = script.EvalSha(ctx, node, keys, args...)
		}
		reply, err := cmd.Result()
		return reply, -1, err
	}
	pipe := node.Pipeline()
	var cmd *redis.Cmd
	if eval {
		cmd = script.Eval(ctx, pipe, keys, args...)
	} else {
		cmd = script.EvalSha(ctx, pipe, keys, args...)
	}
	wait := pipe.Do(ctx, "WAIT", d.wait, d.waitTimeout.Milliseconds())
	_, _ = pipe.Exec(ctx)
	reply, err := cmd.Result()
	if err != nil {
		return nil, -1, err
	}
	acks, werr := wait.Int64()
	if werr != nil {
		// the script answered; that its write reached a replica is not known
		acks = 0
	}
	return reply, acks, nil
}

// drive runs decisions at a constant rate from start, shared by clients
// goroutines, until stop is closed. A decision found later than one
// interval (and at least lateSlack) past its due time is dropped and
// counted, never fired in a burst.
type drive struct {
	d       *driver
	sched   rate.Schedule
	start   time.Time
	slack   time.Duration
	next    atomic.Int64
	dropped atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup

	mu    sync.Mutex
	calls []call
}

// lateSlack is the least lateness that drops a decision.
const lateSlack = 10 * time.Millisecond

// horizon bounds a drive's schedule; Run stops it long before.
const horizon = 10 * time.Minute

func startDrive(ctx context.Context, d *driver, r rate.Rate, clients int, start time.Time) (*drive, error) {
	sched, err := rate.NewSchedule(r, horizon)
	if err != nil {
		return nil, err
	}
	interval := time.Duration(float64(time.Second) / r.PerSecond())
	dr := &drive{d: d, sched: sched, start: start, slack: max(interval, lateSlack), stop: make(chan struct{})}
	for i := 0; i < clients; i++ {
		dr.wg.Add(1)
		go dr.client(ctx)
	}
	return dr, nil
}

func (dr *drive) client(ctx context.Context) {
	defer dr.wg.Done()
	for {
		select {
		case <-dr.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		i := dr.next.Add(1) - 1
		due, ok := dr.sched.Due(i)
		if !ok {
			return
		}
		wait := dr.start.Add(due).Sub(dr.d.now())
		if wait < -dr.slack {
			dr.dropped.Add(1)
			continue
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-dr.stop:
				t.Stop()
				return
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		c := dr.d.decide(ctx, i)
		dr.mu.Lock()
		dr.calls = append(dr.calls, c)
		dr.mu.Unlock()
	}
}

// answeredBy reports whether a decision was answered by addr.
func (dr *drive) answeredBy(addr string) bool {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	for i := len(dr.calls) - 1; i >= 0; i-- {
		if dr.calls[i].ok && dr.calls[i].node == addr {
			return true
		}
	}
	return false
}

// end stops the clients and returns every decision made.
func (dr *drive) end() ([]call, int64) {
	select {
	case <-dr.stop:
	default:
		close(dr.stop)
	}
	dr.wg.Wait()
	dr.mu.Lock()
	defer dr.mu.Unlock()
	return dr.calls, dr.dropped.Load()
}
