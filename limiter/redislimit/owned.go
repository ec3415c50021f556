package redislimit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/limiter"
)

// A decision through Script.Run on a shared client costs more than the
// round trip: the client's pool takes a turn and health-checks the
// connection it hands out (a syscall), and the call builds its command
// (the argument slice, the key and the names boxed) and its reply. A
// decider holds one connection of its own (redis.Client.Conn) and one
// EVALSHA command built once, whose key argument points at a field it
// sets: a decision writes the command, reads the reply and decodes it.

// decider runs decisions on a connection it owns. One goroutine uses it
// at a time (Store hands it out).
type decider struct {
	conn *redis.Conn
	took time.Time        // when conn was taken from the pool
	used time.Time        // when it was last put back (owned.reap)
	lim  *limiter.Limiter // whose ARGV args holds
	key  string           // the key of the call in progress (args[3] points at it)
	args []any            // EVALSHA sha 1 &key ARGV...
	cmd  *redis.Cmd       // args, written on every call
}

// newDecider takes a connection; the first put renews it, so that from
// then on it is one the pool has checked.
func newDecider(c *redis.Client) *decider { return &decider{conn: c.Conn()} }

// renewEvery is how long a decider keeps its connection before it gives
// it back to the pool and takes one again: go-redis peeks at a RESP3
// connection for push notifications before each command (a syscall and
// three allocations) unless the pool checked it within the last five
// seconds, which it does when the connection comes back.
const renewEvery = 2 * time.Second

// renew gives the connection back to the pool and takes one again, once
// it has been held renewEvery.
func (d *decider) renew(c *redis.Client) {
	if time.Since(d.took) < renewEvery {
		return
	}
	_ = d.conn.Close()
	d.conn, d.took = c.Conn(), time.Now()
}

// prepare builds the command for l, once per limiter.
func (d *decider) prepare(l *limiter.Limiter) {
	if d.lim == l {
		return
	}
	id := ""
	if l.NeedsID() {
		id = NewID() // replaced on every call
	}
	argv := l.Args(0, id)
	d.args = append(append(make([]any, 0, 4+len(argv)), "evalsha", Script(l).Hash(), 1, &d.key), argv...)
	d.cmd = redis.NewCmd(context.Background(), d.args...)
	d.lim = l
}

// allow decides one request for key on the server's clock. bad reports
// that the call failed for another reason than the server's answer (the
// connection broke, or the caller's deadline cut it with a reply perhaps
// still on its way): the decider is then of no more use.
func (d *decider) allow(ctx context.Context, l *limiter.Limiter, key string) (dec limiter.Decision, err error, bad bool) {
	d.prepare(l)
	if l.NeedsID() {
		// a fresh id in the slot it had when the command was built
		argv := l.Args(0, NewID())
		copy(d.args[4:], argv)
	}
	d.key = key
	d.cmd.SetErr(nil)
	d.cmd.SetVal(nil)
	_ = d.conn.Process(ctx, d.cmd)
	reply, err := d.cmd.Result()
	if err != nil && IsNoScript(err) {
		// the script cache was flushed (SCRIPT FLUSH, a restart, a
		// failover): EVAL loads it again, as Script.Run does
		reply, err = d.conn.Eval(ctx, l.Script().Source, []string{key}, d.args[4:]...).Result()
	}
	if err != nil {
		var rerr redis.Error
		return limiter.Decision{}, err, !errors.As(err, &rerr)
	}
	dec, err = l.Decode(reply)
	return dec, err, false
}

// owned is a Store's deciders on a *redis.Client: made as concurrency
// asks for them, at most max (one fewer than the client's pool holds, so
// its other commands still get a connection), and only while the pool
// has a connection to spare without waiting; otherwise a decision goes
// through Allow on the shared client. A decider idle for idleAfter gives
// its connection back, so a store that is no longer used (a test's, or a
// burst's extra deciders) holds none.
type owned struct {
	client *redis.Client
	max    int
	// retry: a decision whose connection failed is made again once on
	// the shared client (whose pool health-checks the connection it hands
	// out), unless the client never retries (a decision must not count
	// twice there).
	retry bool

	mu      sync.Mutex
	free    []*decider // idle, the most recently used last
	made    int        // deciders that hold a connection
	reaping bool       // a reap is scheduled
}

// idleAfter is how long a decider stays idle before it gives its
// connection back to the pool.
const idleAfter = time.Second

func newOwned(c *redis.Client) *owned {
	o := c.Options()
	return &owned{client: c, max: max(o.PoolSize-1, 1), retry: o.MaxRetries >= 0}
}

// get returns the decider used last, or a new one; nil when there are
// max already, or the pool has no connection to spare.
func (o *owned) get() *decider {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := len(o.free); n > 0 {
		d := o.free[n-1]
		o.free = o.free[:n-1]
		return d
	}
	if o.made >= o.max {
		return nil
	}
	if st := o.client.PoolStats(); st.IdleConns == 0 && int(st.TotalConns) >= o.client.Options().PoolSize {
		return nil // taking one would wait for another caller's
	}
	o.made++
	return newDecider(o.client)
}

// put keeps d for the next call.
func (o *owned) put(d *decider) {
	d.renew(o.client)
	d.used = time.Now()
	o.mu.Lock()
	o.free = append(o.free, d)
	if !o.reaping {
		o.reaping = true
		time.AfterFunc(idleAfter, o.reap)
	}
	o.mu.Unlock()
}

// reap gives back the connections of the deciders idle for idleAfter.
func (o *owned) reap() {
	cut := time.Now().Add(-idleAfter)
	o.mu.Lock()
	k := 0
	for k < len(o.free) && o.free[k].used.Before(cut) {
		k++
	}
	idle := append([]*decider(nil), o.free[:k]...)
	o.free = append(o.free[:0], o.free[k:]...)
	o.made -= k
	o.reaping = len(o.free) > 0
	if o.reaping {
		time.AfterFunc(idleAfter, o.reap)
	}
	o.mu.Unlock()
	for _, d := range idle {
		_ = d.conn.Close()
	}
}

// drop closes a decider whose connection failed.
func (o *owned) drop(d *decider) {
	_ = d.conn.Close()
	o.mu.Lock()
	o.made--
	o.mu.Unlock()
}

// allow decides one request for key on a decider, or through Allow when
// none is to be had.
func (o *owned) allow(ctx context.Context, shared redis.Scripter, l *limiter.Limiter, key string) (limiter.Decision, error) {
	d := o.get()
	if d == nil {
		return Allow(ctx, shared, l, key, 0)
	}
	dec, err, bad := d.allow(ctx, l, key)
	if !bad {
		o.put(d)
		if err != nil {
			return limiter.Decision{}, CallError(ctx, shared, l, key, err)
		}
		return dec, nil
	}
	o.drop(d)
	if o.retry && ctx.Err() == nil {
		return Allow(ctx, shared, l, key, 0)
	}
	return limiter.Decision{}, CallError(ctx, shared, l, key, err)
}
