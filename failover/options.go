// Package failover measures how generous a failover makes a Redis-backed
// limiter. On a cluster with replicas it drives decisions through a
// limiter script on one key at a steady rate, fails the key's primary
// over (CLUSTER FAILOVER FORCE on its replica, through package fault),
// keeps deciding until the new primary answers, and compares what was
// admitted with what the limiter's pure Go model (limiter/model) admits
// for the same decision times. Writes the old primary acknowledged but
// never passed on are lost; the new primary's answers show which (see
// lostCalls). Each trial runs once as the application would (the script
// call alone) and, with Options.Wait, once more with the mitigation (the
// script call followed by WAIT), so the trade-off is a pair of numbers.
// Trial by trial the primary and its replica swap roles; at the end the
// first primary is failed back gracefully (nothing is lost that way) and
// the cluster must report cluster_state:ok again.
package failover

import (
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/fault"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// Defaults for a zero Options field.
var (
	// DefaultParams is a token bucket of 20 refilled at 250/s: under the
	// default 500 decisions/s about half are admitted, so a lost write is
	// likely to be a lost admission.
	DefaultParams = limiter.Params{Algo: limiter.TokenBucket, Capacity: 20, Rate: rate.Rate{Count: 250, Per: time.Second}}
	DefaultRate   = rate.Rate{Count: 500, Per: time.Second}
)

// More defaults.
const (
	DefaultTrials      = 5
	DefaultClients     = 1
	DefaultBefore      = time.Second
	DefaultAfter       = time.Second
	DefaultWaitTimeout = 100 * time.Millisecond
)

// Ceilings, checked by Validate.
const (
	MaxTrials      = 100
	MaxClients     = 64
	MaxRatePerSec  = 10000
	MaxPhase       = time.Minute // Before and After
	MaxWait        = 5           // replicas WAIT asks for
	MaxWaitTimeout = 10 * time.Second
)

// Options configure a run. The zero value of every field but URL means
// its default.
type Options struct {
	// URL is the cluster as the user named it (--redis). The failover is
	// sent to a replica of the key's primary there, under package fault's
	// rule: loopback or a sandbox of this process, else AllowRemote.
	URL string
	// AllowRemote is --allow-faults-on-remote.
	AllowRemote bool
	// Sandboxes are the sandboxes this process started.
	Sandboxes []*sandbox.Sandbox
	// Params is the limiter under test; the zero value is DefaultParams.
	Params limiter.Params
	// Rate is the decisions per second of all clients together.
	Rate rate.Rate
	// Clients is how many clients decide concurrently, each on its own
	// connection.
	Clients int
	// Trials is how many failovers are measured (of each variant).
	Trials int
	// Before is how long decisions run before the failover; After how
	// long they go on once the new primary answered.
	Before, After time.Duration
	// Mode is how the replica takes over: fault.FailoverForce (the
	// default) or fault.FailoverTakeover.
	Mode fault.FailoverMode
	// Wait, when above 0, measures each trial a second time with every
	// script call followed by WAIT Wait WaitTimeout on the same
	// connection; an admission the replicas did not confirm is refused.
	// With more replicas per primary than Wait, the replica that
	// confirmed a write may not be the one promoted.
	Wait        int
	WaitTimeout time.Duration
	// MaxExtra, when set, fails the run (exit 1) if a trial's extra
	// admissions exceed it; nil reports only.
	MaxExtra *int64
	// RunID names the run's keys, failover:{<RunID>}:<trial>; "" is random.
	RunID string
	// Server identifies the cluster for the document's header.
	Server *doc.Server
	// Now is the clock decisions and windows are read from; nil is time.Now.
	Now func() time.Time
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Params == (limiter.Params{}) {
		o.Params = DefaultParams
	}
	if o.Rate.IsZero() {
		o.Rate = DefaultRate
	}
	if o.Clients == 0 {
		o.Clients = DefaultClients
	}
	if o.Trials == 0 {
		o.Trials = DefaultTrials
	}
	if o.Before == 0 {
		o.Before = DefaultBefore
	}
	if o.After == 0 {
		o.After = DefaultAfter
	}
	if o.Mode == "" {
		o.Mode = fault.FailoverForce
	}
	if o.WaitTimeout == 0 {
		o.WaitTimeout = DefaultWaitTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Validate checks the options without connecting (defaults applied
// first): where the failover may go (fault.CheckTarget on URL), the
// limiter's parameters and every count and duration. Errors are exit 2.
func (o Options) Validate() error {
	o = o.withDefaults()
	switch strings.TrimSpace(o.URL) {
	case "":
		return exitcode.Usagef("failover needs the URL of a cluster with replicas (--redis), e.g. of 'ratelimit sandbox --cluster --replicas 1'")
	case "embedded":
		return exitcode.Usagef("failover needs a real cluster with replicas, not the embedded server; run 'ratelimit sandbox --cluster --replicas 1' and pass its URL")
	}
	if _, err := fault.CheckTarget(o.URL, o.AllowRemote, o.Sandboxes); err != nil {
		return err
	}
	if _, err := limiter.NewLimiter(o.Params); err != nil {
		return err
	}
	mode, err := fault.ParseFailoverMode(string(o.Mode))
	if err != nil {
		return err
	}
	perSec := o.Rate.PerSecond()
	switch {
	case mode == fault.FailoverGraceful:
		return exitcode.Usagef("--mode graceful loses nothing, so there is nothing to measure; use force or takeover")
	case !(perSec > 0) || perSec > MaxRatePerSec:
		return exitcode.Usagef("--rate %s is out of range; use more than 0 and at most %d/s", limiter.ShowRate(o.Rate), MaxRatePerSec)
	case o.Clients < 1 || o.Clients > MaxClients:
		return exitcode.Usagef("--clients %d is out of range; use 1 to %d", o.Clients, MaxClients)
	case o.Trials < 1 || o.Trials > MaxTrials:
		return exitcode.Usagef("--trials %d is out of range; use 1 to %d", o.Trials, MaxTrials)
	case o.Before < 10*time.Millisecond || o.Before > MaxPhase:
		return exitcode.Usagef("--before %s is out of range; use 10ms to %s", o.Before, MaxPhase)
	case o.After < 10*time.Millisecond || o.After > MaxPhase:
		return exitcode.Usagef("--after %s is out of range; use 10ms to %s", o.After, MaxPhase)
	case o.Wait < 0 || o.Wait > MaxWait:
		return exitcode.Usagef("--wait %d is out of range; use 0 (no mitigation run) to %d replicas", o.Wait, MaxWait)
	case o.WaitTimeout < time.Millisecond || o.WaitTimeout > MaxWaitTimeout || o.WaitTimeout%time.Millisecond != 0:
		return exitcode.Usagef("--wait-timeout %s is out of range; use whole milliseconds from 1ms to %s", o.WaitTimeout, MaxWaitTimeout)
	case o.MaxExtra != nil && *o.MaxExtra < 0:
		return exitcode.Usagef("--max-extra %d is negative", *o.MaxExtra)
	case len(o.RunID) > 64 || strings.ContainsAny(o.RunID, "{}\r\n\t "):
		return exitcode.Usagef("run id %q must be at most 64 characters without braces or white space", o.RunID)
	}
	return nil
}
