// Package fault injects faults into a Redis server the user names: pause
// its clients, drop their connections, flush its script cache, fail over
// the primary holding a key, and, for servers this process started with
// package sandbox, freeze or restart the process. A fault spec such as
// pause:3s@10s says what to do and when (an offset from the run's start);
// a Plan is a list of them sorted by start. Where faults may go is decided
// from the URL alone, before any connection (see CheckTarget). An Injector
// runs a Plan and undoes every fault when it ends, on error and on
// cancellation; Close undoes whatever is still active.
//
// It is a leaf package: load --fault and the failover command use it.
package fault

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// Kind names a fault.
type Kind string

// The fault kinds.
const (
	// Pause holds every client's commands (CLIENT PAUSE ALL) for the
	// fault's duration.
	Pause Kind = "pause"
	// PauseWrite holds the clients' write commands (CLIENT PAUSE WRITE).
	PauseWrite Kind = "pause-write"
	// DropClients closes every normal client connection but the
	// injector's own (CLIENT KILL TYPE normal SKIPME yes).
	DropClients Kind = "drop-clients"
	// FlushScripts empties the script cache (SCRIPT FLUSH): the next
	// EVALSHA of every client meets NOSCRIPT.
	FlushScripts Kind = "flush-scripts"
	// Failover promotes a replica of the primary holding Options.Key
	// (CLUSTER FAILOVER on that replica); on a standalone primary with a
	// replica, REPLICAOF NO ONE on the replica, then the primary is made
	// its replica (standalone.go).
	Failover Kind = "failover"
	// Stop freezes the server's process (SIGSTOP, then SIGCONT): only for
	// a server this process started with package sandbox.
	Stop Kind = "stop"
	// Restart kills the server's process and starts it again with the
	// same configuration and port: only for a sandbox server.
	Restart Kind = "restart"
)

// Kinds lists the fault kinds in a stable order.
func Kinds() []Kind {
	return []Kind{Pause, PauseWrite, DropClients, FlushScripts, Failover, Stop, Restart}
}

// Timed reports whether the kind lasts for a duration (pause:3s@10s) and
// so is undone when it ends; the others happen at one moment.
func (k Kind) Timed() bool { return k == Pause || k == PauseWrite || k == Stop }

// Owned reports whether the kind acts on the server's process and so
// needs a server this process started (package sandbox).
func (k Kind) Owned() bool { return k == Stop || k == Restart }

func (k Kind) valid() bool {
	for _, v := range Kinds() {
		if k == v {
			return true
		}
	}
	return false
}

// Ceilings on a plan, checked when it is parsed.
const (
	MaxDuration = time.Hour      // one fault's duration
	MaxOffset   = 24 * time.Hour // a fault's start after the run's start
	MaxFaults   = 64             // faults in one plan
)

// Spec is one fault: what, when (At, after the run's start) and for how
// long (For, timed kinds only; 0 for the others).
type Spec struct {
	Kind Kind
	At   time.Duration
	For  time.Duration
}

// End is when the fault is planned to end: At+For (At for a fault that
// happens at one moment).
func (s Spec) End() time.Duration { return s.At + s.For }

// String is the spec as ParseSpec reads it: pause:3s@10s, drop-clients@10s.
func (s Spec) String() string {
	if s.Kind.Timed() {
		return fmt.Sprintf("%s:%s@%s", s.Kind, s.For, s.At)
	}
	return fmt.Sprintf("%s@%s", s.Kind, s.At)
}

const specSyntax = "want KIND[:DURATION]@OFFSET such as pause:3s@10s or drop-clients@10s " +
	"(kinds: pause, pause-write, stop take a duration; drop-clients, flush-scripts, failover, restart do not)"

// ParseSpec reads one --fault value: KIND[:DURATION]@OFFSET, e.g.
// pause:3s@10s, pause-write:500ms@2s, stop:3s@10s, drop-clients@10s,
// flush-scripts@10s, failover@10s, restart@10s. Durations are Go
// durations of whole milliseconds (3s, 1m30s, 250ms); the duration is
// at least 1ms and at most MaxDuration, the offset at most MaxOffset.
// Errors are one line, exit 2.
func ParseSpec(raw string) (Spec, error) {
	bad := func(format string, args ...any) error {
		return exitcode.Usagef("invalid fault %q: %s; %s", raw, fmt.Sprintf(format, args...), specSyntax)
	}
	s := strings.TrimSpace(raw)
	if s == "" {
		return Spec{}, bad("it is empty")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return Spec{}, bad("it contains white space or a control character")
	}
	head, at, ok := strings.Cut(s, "@")
	if !ok {
		return Spec{}, bad("it has no @OFFSET (when the fault starts, after the run's start)")
	}
	if strings.Contains(at, "@") {
		return Spec{}, bad("it has more than one @")
	}
	name, dur, timed := strings.Cut(head, ":")
	k := Kind(strings.ToLower(name))
	if !k.valid() {
		return Spec{}, bad("unknown kind %q", name)
	}
	var spec Spec
	spec.Kind = k
	var err error
	if spec.At, err = parseDuration(at, "offset"); err != nil {
		return Spec{}, bad("%v", err)
	}
	if spec.At > MaxOffset {
		return Spec{}, bad("offset %s is more than %s", spec.At, MaxOffset)
	}
	switch {
	case k.Timed() && !timed:
		return Spec{}, bad("%s needs a duration, as in %s:3s@%s", k, k, spec.At)
	case !k.Timed() && timed:
		return Spec{}, bad("%s happens at one moment and takes no duration (write %s@%s)", k, k, spec.At)
	case timed:
		if spec.For, err = parseDuration(dur, "duration"); err != nil {
			return Spec{}, bad("%v", err)
		}
		if spec.For < time.Millisecond {
			return Spec{}, bad("duration %s is shorter than 1ms", spec.For)
		}
		if spec.For > MaxDuration {
			return Spec{}, bad("duration %s is more than %s", spec.For, MaxDuration)
		}
	}
	return spec, nil
}

// parseDuration reads a non-negative Go duration of whole milliseconds.
func parseDuration(s, what string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("the %s is empty", what)
	}
	// time.ParseDuration overflows quietly past 2^63 ns in some forms;
	// the ceilings are far below, so long inputs are refused first.
	if len(s) > 32 {
		return 0, fmt.Errorf("the %s %q is too long", what, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("the %s %q is not a duration such as 10s or 500ms", what, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("the %s %s is negative", what, d)
	}
	if d%time.Millisecond != 0 {
		return 0, fmt.Errorf("the %s %s is not a whole number of milliseconds", what, d)
	}
	return d, nil
}

// Plan is a list of faults for one server, sorted by start.
type Plan []Spec

// ParsePlan parses every --fault value and returns them as a Plan sorted
// by start (see NewPlan).
func ParsePlan(raw []string) (Plan, error) {
	specs := make([]Spec, 0, len(raw))
	for _, r := range raw {
		s, err := ParseSpec(r)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	return NewPlan(specs...)
}

// NewPlan sorts specs by start (keeping the given order between equal
// starts) and refuses (exit 2) an empty plan, more than MaxFaults faults,
// a spec ParseSpec would refuse, and faults that overlap: every fault
// goes to the one server the user named, so a fault must start at or
// after the planned end of the one before it, and two faults never start
// at the same moment.
func NewPlan(specs ...Spec) (Plan, error) {
	p := append(Plan(nil), specs...)
	sort.SliceStable(p, func(i, j int) bool { return p[i].At < p[j].At })
	return p, p.Validate()
}

// Validate refuses (exit 2) what NewPlan refuses in a plan built by hand:
// no fault, too many, a spec ParseSpec would not return, a plan not
// sorted by start, overlapping faults.
func (p Plan) Validate() error {
	if len(p) == 0 {
		return exitcode.Usagef("no fault given; pass --fault KIND[:DURATION]@OFFSET such as pause:3s@10s")
	}
	if len(p) > MaxFaults {
		return exitcode.Usagef("%d faults given; a run takes at most %d", len(p), MaxFaults)
	}
	for _, s := range p {
		if again, err := ParseSpec(s.String()); err != nil || again != s {
			return exitcode.Usagef("invalid fault %s: %s", s, specSyntax)
		}
	}
	for i := 1; i < len(p); i++ {
		if p[i].At < p[i-1].At {
			return exitcode.Usagef("the fault plan is not sorted by start: %s comes after %s", p[i], p[i-1])
		}
	}
	var last Spec // the fault that ends last so far
	for i, s := range p {
		if i > 0 && s.At == p[i-1].At {
			return overlap(p[i-1], s)
		}
		if i > 0 && s.At < last.End() {
			return overlap(last, s)
		}
		if i == 0 || s.End() > last.End() {
			last = s
		}
	}
	return nil
}

func overlap(a, b Spec) error {
	return exitcode.Usagef("faults %s and %s overlap on the same server; start %s at %s or later", a, b, b.Kind, laterThan(a))
}

// laterThan is the first start that does not overlap s.
func laterThan(s Spec) time.Duration {
	if s.For == 0 {
		return s.At + time.Millisecond
	}
	return s.End()
}

// Has reports whether the plan holds a fault of kind k.
func (p Plan) Has(k Kind) bool {
	for _, s := range p {
		if s.Kind == k {
			return true
		}
	}
	return false
}
