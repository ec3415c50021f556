package suite

import (
	"strconv"
	"strings"
	"time"
)

// The command lines an entry stands for: check runs exactly what
// `ratelimit probe ARGS` and `ratelimit load ARGS` would, so an entry's
// behaviour, defaults and validation are those of the two commands (cmd
// parses these arguments with the commands' own flag sets), and a user
// can rerun one step by hand. Call them on an expanded entry (Expand).

// ProbeArgs are the arguments of `ratelimit probe` for e under d.
func (e Entry) ProbeArgs(d Defaults) []string {
	args := []string{e.URL}
	args = append(args, e.common(d)...)
	if x := e.Expect; x != "" && !strings.Contains(x, "+") && !strings.EqualFold(x, "auto") && !strings.EqualFold(x, "none") {
		// probe judges one policy; a stacked model is load's alone
		args = append(args, "--expect", x)
	}
	if len(e.Probe.Skip) > 0 {
		args = append(args, "--skip", strings.Join(e.Probe.Skip, ","))
	}
	if len(e.Probe.WarnOnly) > 0 {
		args = append(args, "--warn-only", strings.Join(e.Probe.WarnOnly, ","))
	}
	if e.Probe.Budget > 0 {
		args = append(args, "--budget", strconv.Itoa(e.Probe.Budget))
	}
	if e.Probe.MaxTime > 0 {
		args = append(args, "--max-time", e.Probe.MaxTime.String())
	}
	return args
}

// LoadArgs are the arguments of `ratelimit load` for e under d.
func (e Entry) LoadArgs(d Defaults) []string {
	args := []string{"--target", e.URL}
	args = append(args, e.common(d)...)
	args = append(args, "--rate", first(e.Load.Rate, d.Rate))
	if dur := firstDur(e.Load.Duration, d.Duration); dur > 0 {
		args = append(args, "--duration", dur.String())
	}
	if n := e.Load.Identities; n != nil {
		args = append(args, "--identities", strconv.Itoa(*n))
	} else if d.Identities != nil {
		args = append(args, "--identities", strconv.Itoa(*d.Identities))
	}
	if e.Expect != "" {
		args = append(args, "--expect", e.Expect)
	}
	if h := first(e.Load.Headers, d.Headers); h != "" {
		args = append(args, "--headers", h)
	}
	for _, t := range e.Load.Thresholds {
		args = append(args, "--threshold", t)
	}
	if e.Load.ExpectStatus != "" {
		args = append(args, "--expect-status", e.Load.ExpectStatus)
	}
	if fs := e.Fault; fs != nil {
		for _, f := range fs.Inject {
			args = append(args, "--fault", f)
		}
		args = append(args, "--fault-redis", fs.Redis)
		if fs.During != "" {
			args = append(args, "--during-fault", fs.During)
		}
		if fs.RecoverWithin > 0 {
			args = append(args, "--recover-within", fs.RecoverWithin.String())
		}
		if fs.Key != "" {
			args = append(args, "--fault-key", fs.Key)
		}
	}
	return args
}

// common are the flags probe and load share.
func (e Entry) common(d Defaults) []string {
	var args []string
	if e.Method != "" {
		args = append(args, "-X", e.Method)
	}
	for _, h := range e.Headers {
		args = append(args, "-H", h.Name+": "+h.Value)
	}
	if h := first(e.IdentityHeader, d.IdentityHeader); h != "" {
		args = append(args, "--identity-header", h)
	}
	if d.Timeout > 0 {
		args = append(args, "--timeout", d.Timeout.String())
	}
	if e.LimitedStatus != "" {
		args = append(args, "--limited-status", e.LimitedStatus)
	}
	return args
}

// Undecided reports whether an undecided run of e passes.
func (e Entry) Undecided(d Defaults) bool {
	if e.AllowUndecided != nil {
		return *e.AllowUndecided
	}
	return d.AllowUndecided
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func firstDur(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}
