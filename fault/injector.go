package fault

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// FailoverMode is how a failover fault promotes the replica.
type FailoverMode string

// The failover modes.
const (
	// FailoverForce is CLUSTER FAILOVER FORCE: the replica takes over
	// without waiting for its primary; writes it has not received are lost.
	FailoverForce FailoverMode = "force"
	// FailoverTakeover is CLUSTER FAILOVER TAKEOVER: not even the other
	// primaries are asked.
	FailoverTakeover FailoverMode = "takeover"
	// FailoverGraceful is CLUSTER FAILOVER: the primary holds its clients
	// until the replica has caught up, so nothing is lost (how a test
	// fails back).
	FailoverGraceful FailoverMode = "graceful"
)

// ParseFailoverMode reads force, takeover or graceful; "" is force.
func ParseFailoverMode(s string) (FailoverMode, error) {
	switch m := FailoverMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return FailoverForce, nil
	case FailoverForce, FailoverTakeover, FailoverGraceful:
		return m, nil
	}
	return "", exitcode.Usagef("unknown failover mode %q; use force, takeover or graceful", s)
}

func (m FailoverMode) args() []any {
	switch m {
	case FailoverTakeover:
		return []any{"CLUSTER", "FAILOVER", "TAKEOVER"}
	case FailoverGraceful:
		return []any{"CLUSTER", "FAILOVER"}
	}
	return []any{"CLUSTER", "FAILOVER", "FORCE"}
}

// Options say where faults go and how.
type Options struct {
	// URL is the server the faults go to (--fault-redis): only there,
	// and, for a failover, to a replica of the primary holding Key in the
	// cluster URL belongs to.
	URL string
	// AllowRemote lets faults go to a server that is neither on loopback
	// nor a sandbox this process started (--allow-faults-on-remote).
	AllowRemote bool
	// Sandboxes are the sandboxes this process started: their servers
	// count as owned (stop and restart need one).
	Sandboxes []*sandbox.Sandbox
	// Key is the key whose primary a failover fault fails over.
	Key string
	// Failover is how a failover promotes the replica; "" is FailoverForce.
	Failover FailoverMode
	// Replica, when set, is the replica (host:port) a failover promotes;
	// "" promotes the first in sync by address. A failover waits for it
	// to be a replica of the key's primary, in sync.
	Replica string
	// TLSConfig replaces the TLS settings of a rediss:// URL (a private CA).
	TLSConfig *tls.Config
	// Clock schedules the plan; nil is the wall clock.
	Clock Clock
	// Dial makes every connection the injector opens; nil dials TCP or
	// unix sockets directly. Tests inject one to prove what was dialled.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds each dial and command; 0 means 2s.
	Timeout time.Duration
}

// Outcome is what one fault did.
type Outcome struct {
	Spec Spec
	// Server is where the fault went: the target's URL (password masked)
	// or, for a failover, the promoted replica's host:port.
	Server string
	// Start is when the fault took effect (the server acknowledged it or
	// the signal was sent); End is when it was undone and the server
	// answered again, or, for a fault of one moment, when it was done
	// (a failover: when the replica reported itself primary; a restart:
	// when the new process answered). Both are read from Options.Clock.
	Start, End time.Time
	// Detail says what happened in a few words ("closed 3 client
	// connections", "127.0.0.1:7004 took over slot 866 from 127.0.0.1:7001").
	Detail string
	// OldPrimary and NewPrimary are set by a failover.
	OldPrimary, NewPrimary string
	// Err is why the fault failed, or was not held as planned.
	Err error
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("fault injector closed")

// Waits the injector bounds itself by.
const (
	undoTimeout  = 10 * time.Second // an undo, including the wait for the server to answer
	syncWait     = 30 * time.Second // for a replica in sync before a failover
	promoteWait  = 15 * time.Second // for the promoted replica to report itself primary
	restartGrace = 20 * time.Second // for a restarted server to answer
)

// Injector runs one Plan against one target. Its methods are safe to
// call from several goroutines; Run runs one plan at a time.
type Injector struct {
	plan      Plan
	opts      Options
	target    Target
	clock     Clock
	timeout   time.Duration
	statement string
	ctl       *redis.Client // the injector's own connection to the target

	closing context.Context
	close   context.CancelFunc

	mu      sync.Mutex
	closed  bool
	runDone chan struct{} // closed when the running Run returns; nil when none runs
	active  *activeFault
	nodes   map[string]*redis.Client // replicas a failover talked to
	// standalone: the failover target is a standalone primary with a
	// replica (promoted with REPLICAOF, standalone.go), not a cluster.
	standalone bool

	undoMu sync.Mutex // one undo at a time, so Close waits for Run's
}

// activeFault is a timed fault in force and how to undo it.
type activeFault struct {
	spec Spec
	undo func(ctx context.Context) (time.Time, error)
}

// New checks plan and opts and connects to the target. Where faults may
// go is decided from opts.URL before anything is dialled (CheckTarget);
// stop and restart need a sandbox node, a failover a Key and a cluster.
// Refusals are exit 2, an unreachable target exit 3.
func New(ctx context.Context, plan Plan, opts Options) (*Injector, error) {
	if err := plan.Validate(); err != nil {
		return nil, err
	}
	mode, err := ParseFailoverMode(string(opts.Failover))
	if err != nil {
		return nil, err
	}
	opts.Failover = mode
	t, err := CheckTarget(opts.URL, opts.AllowRemote, opts.Sandboxes)
	if err != nil {
		return nil, err
	}
	for _, s := range plan {
		if s.Kind.Owned() && t.Node == nil {
			return nil, exitcode.Usagef("fault %s signals the server's process, so it needs a server this process started with sandbox; %s is not one (use pause instead of stop, drop-clients instead of restart)", s, t.Shown)
		}
	}

	in := &Injector{plan: plan, opts: opts, target: t, clock: opts.Clock, timeout: opts.Timeout, nodes: map[string]*redis.Client{}}
	if in.clock == nil {
		in.clock = RealClock()
	}
	if in.timeout <= 0 {
		in.timeout = 2 * time.Second
	}
	redisconn.Quiet()
	in.ctl = in.client(t.Network, t.Addr)
	if plan.Has(Pause) || plan.Has(PauseWrite) {
		// never play a pause over another client's (nor end it)
		if err := in.foreignPause(ctx); err != nil {
			_ = in.ctl.Close()
			return nil, err
		}
	}
	if err := in.ctl.Ping(ctx).Err(); err != nil {
		_ = in.ctl.Close()
		// a PING that timed out may be held by another client's pause
		// (a second run with --fault while the first holds its pause)
		if perr := in.foreignPause(ctx); perr != nil {
			return nil, perr
		}
		return nil, connectErr("connect --fault-redis "+t.Shown, err)
	}
	if plan.Has(Failover) {
		info, err := in.ctl.Info(ctx, "cluster").Result()
		if err != nil {
			_ = in.ctl.Close()
			return nil, redisconn.Wrap("INFO cluster on "+t.Shown, err)
		}
		in.standalone = !strings.Contains(info, "cluster_enabled:1")
		switch {
		case !in.standalone && opts.Key == "":
			_ = in.ctl.Close()
			return nil, exitcode.Usagef("a failover fault on a cluster needs the key whose primary fails over")
		case in.standalone:
			if err := in.checkPair(ctx); err != nil {
				_ = in.ctl.Close()
				return nil, err
			}
		}
	}
	in.closing, in.close = context.WithCancel(context.Background())
	in.statement = in.describe()
	return in, nil
}

// client returns a connection to addr with the target's credentials and
// TLS settings: one connection (so CLIENT KILL ... SKIPME spares all of
// the injector's), no retries (a fault is never sent twice).
func (in *Injector) client(network, addr string) *redis.Client {
	o := *in.target.opts
	o.Network, o.Addr = network, addr
	o.Dialer = in.dialer()
	o.PoolSize, o.MinIdleConns, o.MaxIdleConns = 1, 0, 1
	o.MaxRetries, o.DialerRetries = -1, 2
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = in.timeout, in.timeout, in.timeout
	o.ContextTimeoutEnabled = true
	if in.opts.TLSConfig != nil {
		o.TLSConfig = in.opts.TLSConfig.Clone()
	}
	if o.TLSConfig != nil && o.TLSConfig.ServerName == "" && network == "tcp" {
		host, _, _ := net.SplitHostPort(addr)
		o.TLSConfig = o.TLSConfig.Clone()
		o.TLSConfig.ServerName = host
	}
	return redis.NewClient(&o)
}

// Statement is one line saying what will be done to which server, for
// the caller to print before Run.
func (in *Injector) Statement() string { return in.statement }

// Target is where the faults go.
func (in *Injector) Target() Target { return in.target }

func (in *Injector) describe() string {
	parts := make([]string, len(in.plan))
	for i, s := range in.plan {
		parts[i] = s.String() + " " + in.what(s)
	}
	return fmt.Sprintf("faults for %s (%s): %s; each is undone when it ends, on error and on interrupt",
		in.target.Shown, in.target.Describe(), strings.Join(parts, "; "))
}

// what says what a fault does, in a few words.
func (in *Injector) what(s Spec) string {
	switch s.Kind {
	case Pause:
		return fmt.Sprintf("holds every client's commands for %s (CLIENT PAUSE ALL, renewed every %s)", s.For, pauseSlice)
	case PauseWrite:
		return fmt.Sprintf("holds write commands for %s (CLIENT PAUSE WRITE in %s slices, renewed until it ends)", s.For, pauseSlice)
	case DropClients:
		return "closes every normal client connection (CLIENT KILL TYPE normal SKIPME yes)"
	case FlushScripts:
		return "empties the script cache (SCRIPT FLUSH)"
	case Failover:
		if in.standalone {
			which := "its replica"
			if in.opts.Replica != "" {
				which = "replica " + in.opts.Replica
			}
			return fmt.Sprintf("promotes %s (REPLICAOF NO ONE once in sync) and makes this server its replica (REPLICAOF), as a Sentinel failover does: clients still on this server get READONLY, and writes the replica has not received are lost", which)
		}
		cmd := make([]string, 0, 3)
		for _, a := range in.opts.Failover.args() {
			cmd = append(cmd, a.(string))
		}
		lost := "writes the replica has not received are lost"
		if in.opts.Failover == FailoverGraceful {
			lost = "the primary holds its clients until the replica has caught up"
		}
		which := "a replica"
		if in.opts.Replica != "" {
			which = "replica " + in.opts.Replica
		}
		return fmt.Sprintf("promotes %s of the primary holding %q (%s on that replica; %s)", which, in.opts.Key, strings.Join(cmd, " "), lost)
	case Stop:
		return fmt.Sprintf("freezes the process for %s (SIGSTOP, then SIGCONT)", s.For)
	case Restart:
		return "kills the process (SIGKILL) and starts it again on the same port; its data is lost"
	}
	return ""
}

// Run runs the plan: each fault at start plus its offset (late faults
// run at once, after the one before), each timed fault undone when its
// duration, counted from when it took effect, ends. It stops at the first
// fault that fails, at ctx's end and at Close, and undoes whatever is
// still in force on every way out (a panic included). The outcomes of the
// faults tried are returned with the error that stopped the plan; an
// interrupted run's error wraps ctx's (context.Canceled on Ctrl-C).
func (in *Injector) Run(ctx context.Context, start time.Time) (out []Outcome, err error) {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil, ErrClosed
	}
	if in.runDone != nil {
		in.mu.Unlock()
		return nil, exitcode.Internalf("fault injector: Run called while a plan runs")
	}
	done := make(chan struct{})
	in.runDone = done
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		in.runDone = nil
		in.mu.Unlock()
		close(done)
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(in.closing, cancel)
	defer stop()
	defer func() {
		if _, uerr := in.undo(ctx); uerr != nil && err == nil {
			err = uerr
		}
	}()
	for _, s := range in.plan {
		if err := in.clock.Sleep(ctx, start.Add(s.At).Sub(in.clock.Now())); err != nil {
			return out, in.stopped(s, err)
		}
		o, err := in.inject(ctx, s)
		if err != nil {
			o.Err = err
			out = append(out, o)
			if ctx.Err() != nil {
				return out, in.stopped(s, ctx.Err())
			}
			return out, err
		}
		if s.Kind.Timed() {
			werr := in.clock.Sleep(ctx, o.Start.Add(s.For).Sub(in.clock.Now()))
			end, uerr := in.undo(ctx)
			o.End = end
			if uerr != nil {
				o.Err = uerr
				out = append(out, o)
				return out, uerr
			}
			if werr != nil {
				o.Err = in.stopped(s, werr)
				out = append(out, o)
				return out, o.Err
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// stopped is the error of a plan stopped at s by ctx's end or by Close.
func (in *Injector) stopped(s Spec, err error) error {
	if in.closing.Err() != nil {
		return fmt.Errorf("fault %s: %w", s, ErrClosed)
	}
	return fmt.Errorf("fault %s interrupted: %w", s, err)
}

// inject puts s in force. A timed fault is registered as active before
// inject returns, so every way out of Run undoes it.
func (in *Injector) inject(ctx context.Context, s Spec) (Outcome, error) {
	o := Outcome{Spec: s, Server: in.target.Shown}
	if in.closing.Err() != nil {
		return o, ErrClosed
	}
	switch s.Kind {
	case Pause:
		return in.pause(ctx, o, pauseAll)
	case PauseWrite:
		return in.pause(ctx, o, pauseWrite)
	case DropClients:
		n, err := in.ctl.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Int64()
		if err != nil {
			return o, in.wrap("CLIENT KILL", err)
		}
		o.Start = in.clock.Now()
		o.End = o.Start
		o.Detail = fmt.Sprintf("closed %d client connection", n)
		if n != 1 {
			o.Detail += "s"
		}
		return o, nil
	case FlushScripts:
		if err := in.ctl.Do(ctx, "SCRIPT", "FLUSH").Err(); err != nil {
			return o, in.wrap("SCRIPT FLUSH", err)
		}
		o.Start = in.clock.Now()
		o.End = o.Start
		o.Detail = "script cache emptied"
		return o, nil
	case Stop:
		n := in.target.Node
		if err := n.Suspend(); err != nil {
			return o, err
		}
		o.Start = in.clock.Now()
		o.Detail = fmt.Sprintf("pid %d stopped", n.PID())
		return o, in.register(s, func(ctx context.Context) (time.Time, error) {
			if err := n.Resume(); err != nil {
				return in.clock.Now(), err
			}
			return in.answered(ctx)
		})
	case Restart:
		n := in.target.Node
		old := n.PID()
		o.Start = in.clock.Now()
		// an interrupted restart still brings the server back
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restartGrace)
		defer cancel()
		if err := in.target.Sandbox.Restart(rctx, n); err != nil {
			return o, err
		}
		end, err := in.answered(rctx)
		o.End = end
		o.Detail = fmt.Sprintf("pid %d killed, pid %d answers", old, n.PID())
		return o, err
	case Failover:
		if in.standalone {
			return in.pairFailover(ctx, o)
		}
		return in.failover(ctx, o)
	}
	return o, exitcode.Internalf("fault kind %q has no injector", s.Kind)
}

// connectErr explains a failed connection: exit 3 unless the server
// answered with an error of its own (NOPERM, a refused AUTH).
func connectErr(what string, err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) || errors.Is(err, context.Canceled) {
		return redisconn.ServerError(what, err, "")
	}
	return exitcode.UnreachableError(fmt.Errorf("%s: %w; check that the server is up and --fault-redis points at it", what, err))
}

// wrap explains a command of the injector's that failed.
func (in *Injector) wrap(what string, err error) error {
	return redisconn.ServerError(what+" on "+in.target.Shown, err, "")
}

// register makes a put-in-force fault the active one. After Close it is
// undone at once.
func (in *Injector) register(s Spec, undo func(ctx context.Context) (time.Time, error)) error {
	in.mu.Lock()
	in.active = &activeFault{spec: s, undo: undo}
	closed := in.closed
	in.mu.Unlock()
	if closed {
		_, _ = in.undo(context.Background())
		return ErrClosed
	}
	return nil
}

// undo undoes the active fault, if any, with its own deadline (ctx's
// values only: an interrupted run must still restore). It returns when
// the undo finished.
func (in *Injector) undo(ctx context.Context) (time.Time, error) {
	in.undoMu.Lock()
	defer in.undoMu.Unlock()
	in.mu.Lock()
	a := in.active
	in.active = nil
	in.mu.Unlock()
	if a == nil {
		return time.Time{}, nil
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	end, err := a.undo(uctx)
	if err != nil {
		return end, fmt.Errorf("undo fault %s: %w", a.spec, err)
	}
	return end, nil
}

// answered waits until the target answers PING and returns when it did.
func (in *Injector) answered(ctx context.Context) (time.Time, error) {
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, in.timeout+pauseSlice)
		last = in.ctl.Ping(pctx).Err()
		cancel()
		if last == nil {
			return in.clock.Now(), nil
		}
		select {
		case <-ctx.Done():
			return in.clock.Now(), exitcode.Unreachablef("%s did not answer PING again: %v", in.target.Shown, last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// pause starts a CLIENT PAUSE of mode (pauseAll or pauseWrite) in slices
// on a connection of its own, unless another client's pause is in force.
func (in *Injector) pause(ctx context.Context, o Outcome, mode string) (Outcome, error) {
	if err := in.foreignPause(ctx); err != nil {
		return o, err
	}
	conn, err := in.rawConn(ctx)
	if err != nil {
		return o, err
	}
	slice := min(pauseSlice, o.Spec.For)
	ro := in.target.opts
	p, err := startPause(conn, ro.Username, ro.Password, mode, slice, in.timeout)
	if err != nil {
		_ = conn.Close()
		return o, in.wrap("pause", err)
	}
	o.Start = in.clock.Now()
	o.Detail = "every client's commands held"
	if mode == pauseWrite {
		o.Detail = "write commands held"
	}
	return o, in.register(o.Spec, func(ctx context.Context) (time.Time, error) {
		perr := p.end()
		// the slice in force lapses by itself: the server answers when it has
		end, err := in.answered(ctx)
		if err == nil && mode == pauseWrite {
			end, err = in.writable(ctx, p)
		}
		if err == nil && perr != nil {
			err = perr
		}
		return end, err
	})
}

// writable waits until the target runs what a WRITE pause holds again
// (EVALSHA of no script, which changes nothing) and returns when it did.
// An ACL user without EVALSHA waits out the last slice and the server's
// tick.
func (in *Injector) writable(ctx context.Context, p *pauser) (time.Time, error) {
	for {
		pctx, cancel := context.WithTimeout(ctx, in.timeout+pauseSlice)
		err := in.ctl.EvalSha(pctx, noScript, nil).Err()
		cancel()
		var rerr redis.Error
		switch {
		case err == nil || redisconn.Classify(err) == redisconn.NoScript:
			return in.clock.Now(), nil
		case errors.As(err, &rerr):
			// refused (NOPERM, scripts disabled): the last slice lapses
			// by itself, within the server's timer tick
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(p.lapses().Add(100 * time.Millisecond))):
			}
			return in.clock.Now(), nil
		}
		select {
		case <-ctx.Done():
			return in.clock.Now(), exitcode.Unreachablef("%s did not take scripts or writes again: %v", in.target.Shown, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (in *Injector) tlsConfig() *tls.Config {
	tc := in.target.opts.TLSConfig
	if in.opts.TLSConfig != nil {
		tc = in.opts.TLSConfig
	}
	if tc == nil {
		return nil
	}
	tc = tc.Clone()
	if tc.ServerName == "" && in.target.Network == "tcp" {
		tc.ServerName, _, _ = net.SplitHostPort(in.target.Addr)
	}
	return tc
}

// node returns the injector's connection to a cluster node.
func (in *Injector) node(addr string) *redis.Client {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.nodes[addr]; ok {
		return c
	}
	c := in.client("tcp", addr)
	in.nodes[addr] = c
	return c
}

// failover promotes a replica of the primary holding the key, once one
// is in sync, and waits until it reports itself the slot's primary.
func (in *Injector) failover(ctx context.Context, o Outcome) (Outcome, error) {
	shard, replica, err := in.syncedReplica(ctx)
	if err != nil {
		return o, err
	}
	if err := CheckAddr(replica.Addr, in.opts.AllowRemote, in.opts.Sandboxes); err != nil {
		return o, err
	}
	rc := in.node(replica.Addr)
	o.Server, o.OldPrimary, o.NewPrimary = replica.Addr, shard.Primary.Addr, replica.Addr
	if err := rc.Do(ctx, in.opts.Failover.args()...).Err(); err != nil {
		return o, redisconn.ServerError("CLUSTER FAILOVER on "+replica.Addr, err, "")
	}
	o.Start = in.clock.Now()
	wctx, cancel := context.WithTimeout(ctx, promoteWait)
	defer cancel()
	for {
		if nodes, err := Nodes(wctx, rc); err == nil && Promoted(nodes, shard.Slot) {
			o.End = in.clock.Now()
			o.Detail = fmt.Sprintf("%s took over slot %d from %s", replica.Addr, shard.Slot, shard.Primary.Addr)
			return o, nil
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return o, ctx.Err()
			}
			return o, exitcode.Unreachablef("replica %s did not take over slot %d from %s within %s of CLUSTER FAILOVER %s (a replica that ran an election in the last 4 x cluster-node-timeout may reuse its old votes and lose: wait that long between failovers of one replica)",
				replica.Addr, shard.Slot, shard.Primary.Addr, promoteWait, strings.ToUpper(string(in.opts.Failover)))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// syncedReplica waits until the target sees a healthy replica of the
// key's primary whose link is up, and returns the first such by address.
func (in *Injector) syncedReplica(ctx context.Context) (Shard, ClusterNode, error) {
	wctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	var why string
	for {
		var nodes []ClusterNode
		shard, err := FindShard(wctx, in.ctl, in.opts.Key)
		if err == nil {
			nodes, err = Nodes(wctx, in.ctl)
		}
		switch {
		case err != nil:
			why = err.Error()
		case len(shard.Replicas) == 0:
			why = fmt.Sprintf("primary %s (slot %d) has no replica", shard.Primary.Addr, shard.Slot)
		default:
			why = fmt.Sprintf("no replica of %s (slot %d) is in sync", shard.Primary.Addr, shard.Slot)
			if in.opts.Replica != "" {
				why = fmt.Sprintf("%s is not a replica of %s (slot %d) in sync", in.opts.Replica, shard.Primary.Addr, shard.Slot)
			}
			for _, r := range shard.Replicas {
				if !r.Healthy() || in.opts.Replica != "" && r.Addr != in.opts.Replica {
					continue
				}
				if err := CheckAddr(r.Addr, in.opts.AllowRemote, in.opts.Sandboxes); err != nil {
					return shard, r, err
				}
				if ok, err := InSync(wctx, in.node(r.Addr)); err != nil || !ok {
					continue
				}
				if who := in.disagree(wctx, nodes, shard, r); who != "" {
					why = fmt.Sprintf("%s does not see %s as a replica of %s yet", who, r.Addr, shard.Primary.Addr)
					continue
				}
				return shard, r, nil
			}
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return Shard{}, ClusterNode{}, ctx.Err()
			}
			return Shard{}, ClusterNode{}, exitcode.Unreachablef("cannot fail over the primary of %q after %s: %s; a failover needs a replica whose link to its primary is up", in.opts.Key, syncWait, why)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// disagree is Disagreeing on the injector's connections, for nodes the
// injector may talk to.
func (in *Injector) disagree(ctx context.Context, nodes []ClusterNode, shard Shard, r ClusterNode) string {
	return Disagreeing(ctx, nodes, shard, r, func(addr string) (redis.Cmdable, error) {
		if err := CheckAddr(addr, in.opts.AllowRemote, in.opts.Sandboxes); err != nil {
			return nil, err
		}
		return in.node(addr), nil
	})
}

// Close undoes the fault still in force, if any, stops a running plan,
// and closes the injector's connections. It is safe to call more than
// once and from another goroutine than Run's.
func (in *Injector) Close() error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	done := in.runDone
	in.mu.Unlock()
	in.close()
	_, err := in.undo(context.Background())
	if done != nil {
		select {
		case <-done:
		case <-time.After(undoTimeout + time.Second):
		}
	}
	in.mu.Lock()
	nodes := in.nodes
	in.nodes = map[string]*redis.Client{}
	in.mu.Unlock()
	for _, c := range nodes {
		_ = c.Close()
	}
	_ = in.ctl.Close()
	return err
}
