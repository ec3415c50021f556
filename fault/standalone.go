package fault

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// A failover of a standalone pair: the target is a primary with a
// replica (no cluster, no Sentinel). The replica is promoted with
// REPLICAOF NO ONE once it is in sync, and the target is then made its
// replica, as a Sentinel failover reconfigures the old primary: a client
// that still writes to the target meets READONLY, and what the replica
// had not received is gone (the target resynchronises from it). Nothing
// is failed back: the pair stays swapped, and the report says so.

// replicaOf is one replica a primary lists in INFO replication.
type replicaOf struct {
	Addr   string
	Online bool
}

// pairReplicas reads the replicas the target lists (slaveN:ip=..,port=..,
// state=online,...) and its role.
func (in *Injector) pairReplicas(ctx context.Context) (role string, reps []replicaOf, err error) {
	m, err := replication(ctx, in.ctl)
	if err != nil {
		return "", nil, redisconn.Wrap("INFO replication on "+in.target.Shown, err)
	}
	for i := 0; ; i++ {
		v, ok := m["slave"+strconv.Itoa(i)]
		if !ok {
			break
		}
		var ip, port, state string
		for f := range strings.SplitSeq(v, ",") {
			k, val, _ := strings.Cut(f, "=")
			switch k {
			case "ip":
				ip = val
			case "port":
				port = val
			case "state":
				state = val
			}
		}
		if ip != "" && port != "" {
			reps = append(reps, replicaOf{Addr: net.JoinHostPort(ip, port), Online: state == "online"})
		}
	}
	return m["role"], reps, nil
}

// checkPair refuses, before the run, a standalone target that is not a
// primary with a replica the fault may go to.
func (in *Injector) checkPair(ctx context.Context) error {
	role, reps, err := in.pairReplicas(ctx)
	if err != nil {
		return err
	}
	if role != "master" {
		return exitcode.Usagef("a failover fault on a standalone server needs its primary; %s is a %s (name the primary in --fault-redis)", in.target.Shown, role)
	}
	if len(reps) == 0 {
		return exitcode.Usagef("a failover fault needs a replica to promote; %s is a standalone primary without one (attach one with REPLICAOF, or use a cluster with replicas)", in.target.Shown)
	}
	for _, r := range reps {
		if in.opts.Replica == "" || r.Addr == in.opts.Replica {
			return CheckAddr(r.Addr, in.opts.AllowRemote, in.opts.Sandboxes)
		}
	}
	return exitcode.Usagef("%s is not a replica of %s", in.opts.Replica, in.target.Shown)
}

// pairFailover promotes the replica and demotes the target.
func (in *Injector) pairFailover(ctx context.Context, o Outcome) (Outcome, error) {
	wctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	var replica string
	for replica == "" {
		_, reps, err := in.pairReplicas(wctx)
		if err != nil {
			return o, err
		}
		for _, r := range reps {
			if !r.Online || in.opts.Replica != "" && r.Addr != in.opts.Replica {
				continue
			}
			if err := CheckAddr(r.Addr, in.opts.AllowRemote, in.opts.Sandboxes); err != nil {
				return o, err
			}
			if ok, err := InSync(wctx, in.node(r.Addr)); err == nil && ok {
				replica = r.Addr
				break
			}
		}
		if replica != "" {
			break
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return o, ctx.Err()
			}
			return o, exitcode.Unreachablef("no replica of %s was online and in sync within %s", in.target.Shown, syncWait)
		case <-time.After(50 * time.Millisecond):
		}
	}
	rc := in.node(replica)
	o.OldPrimary, o.NewPrimary = in.target.Addr, replica
	o.Server = replica
	if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return o, redisconn.ServerError("REPLICAOF NO ONE on "+replica, err, "")
	}
	o.Start = in.clock.Now()
	host, port, _ := net.SplitHostPort(replica)
	if err := in.ctl.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		o.End = in.clock.Now()
		return o, redisconn.ServerError("REPLICAOF "+replica+" on "+in.target.Shown, err, "")
	}
	o.End = in.clock.Now()
	o.Detail = fmt.Sprintf("%s promoted (REPLICAOF NO ONE); %s now replicates it: the pair stays swapped", replica, in.target.Addr)
	return o, nil
}
