package limiter

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
)

// Algo names a limiter algorithm.
type Algo string

// Algorithm is one registry entry: everything the tool knows about one
// algorithm. Entries are declared one per file (token_bucket.go, ...) and
// listed in registry.
type Algorithm struct {
	Algo    Algo
	Aliases []string // other spellings ParseAlgo accepts
	// Words name the algorithm in prose: "token bucket".
	Words string
	// Params are the parameters it reads, in the order its spec and its
	// settings list them. Each is a word of ParamWords.
	Params []Param
	// Options are optional settings with a default (round=, align=, ...).
	Options []Option
	// Script is its embedded script; nil for a model without a script
	// (usable by load --expect, not by eval, race or serve).
	Script *Script
	// StateType is the Redis type its script keeps state in.
	StateType string
	// ACL lists the ACL rules its script needs besides a key pattern.
	ACL string
	// NeedsID: each call passes a unique request id (the sliding log's
	// member), so the caller must make one per call.
	NeedsID bool

	validate func(p Params) error
	// args returns the script's ARGV before the optional now_ms and force,
	// for one call; id is the request id when NeedsID.
	args func(p Params) []any
	// idAt is the index in args where the request id goes (NeedsID).
	idAt int
	// replyLen is the number of integers the script replies.
	replyLen int
	decode   func(p Params, n []int64) Decision
	model    func(p Params) model.Limiter
	policy   func(p Params) Policy
	// describe names the parameters in words: "token bucket 10 + 5/s".
	describe func(p Params) string
	// perSecond is the long-run admissions per second of one key.
	perSecond func(p Params) float64
	// quota is the most admitted at once from a fresh key, and period the
	// time to restore it from empty.
	quota func(p Params) (int64, time.Duration)
}

// Param is one parameter of an algorithm.
type Param struct {
	// Word names it in messages ({word} in ParamError), in eval's and
	// serve's flags (--word) and in settings lists.
	Word string
	// Key is its key in a spec (token-bucket:burst=10): usually Word.
	Key string
	// Aliases are other keys a spec accepts.
	Aliases []string
}

// Option is an optional spec setting with its default.
type Option struct {
	Key     string
	Default string
	Values  []string // the accepted values; nil: any the setter accepts
	Help    string
}

// ParamWords are every parameter word, in a stable order: the flags eval
// and serve offer for them.
var ParamWords = []string{"capacity", "rate", "limit", "window", "burst"}

// registry lists the algorithms in a stable order: the scripted ones first.
var registry = []*Algorithm{&tokenBucket, &slidingWindow, &fixedWindow, &gcra, &slidingWindowCounter, &leakyBucket, &slowdownAlgo}

// The options the windowed models share.
var (
	countRefusedOption = Option{Key: "count-refused", Default: "false", Values: []string{"true", "false"},
		Help: "refused requests count too (a counter or log that adds before it checks; haproxy's sc_http_req_rate)"}
	offsetOption = Option{Key: "offset", Help: "with align=clock, windows start at offset + k x window (httprate v0.16: when its limiter was made)"}
	// blockOption is every model's: Limiter.Model wraps the model in a
	// block whatever the algorithm.
	blockOption = Option{Key: "block",
		Help: "the refusal that exceeds the limit starts a block of this long: every request refused, none counted, the key clean after (rate-limiter-flexible's blockDuration)"}
)

// alignOption is the align option with its default for one algorithm.
func alignOption(def string) Option {
	return Option{Key: "align", Default: def, Values: []string{AlignFirst, AlignClock},
		Help: "where windows start: first (a key's first request) or clock (floor(t / window))"}
}

// timerOption is the timers of a fixed window counter
// (model.FixedRules) that fixed-window and slowdown share.
var timerOption = Option{Key: "timer", Default: TimerMs, Values: []string{TimerMs, TimerSeconds},
	Help: "ms, or seconds: whole-second timers, a window starts at its first request's whole second s and ends once s + window < now in whole seconds (window to window + 1 s)"}

// fixedRules are the model.FixedRules of p's counter options.
func fixedRules(p Params) model.FixedRules {
	r := model.FixedRules{Limit: p.Limit, WindowMs: p.Window.Milliseconds(), Elastic: p.Expiry == ExpiryElastic,
		WholeSeconds: p.Timer == TimerSeconds, RefuseAtLimit: p.RefuseAt == RefuseLimit}
	if p.Align == AlignCreation {
		r.Anchor = model.AnchorCreation
	}
	return r
}

// validateTimers checks the counter options of p: whole-second timers
// need whole seconds and windows from the first request, like an elastic
// expiry.
func validateTimers(p Params) error {
	anchored := p.Align != "" && p.Align != AlignFirst
	if p.Timer == TimerSeconds {
		if p.Window%time.Second != 0 {
			return paramErr("window", "%s timer=seconds needs {window} of whole seconds, got %s", p.Algo, p.Window)
		}
		if anchored || p.Expiry == ExpiryElastic {
			return paramErr("", "%s timer=seconds starts windows at a request's second: it takes neither align=%s nor expiry=elastic", p.Algo, p.Align)
		}
	}
	if p.Expiry == ExpiryElastic && anchored {
		return paramErr("", "%s expiry=elastic restarts the window at every request: it takes no align=%s", p.Algo, p.Align)
	}
	return nil
}

// Lookup returns the entry of a; nil when a is unknown.
func Lookup(a Algo) *Algorithm {
	for _, e := range registry {
		if e.Algo == a {
			return e
		}
	}
	return nil
}

// Algos lists every algorithm in a stable order.
func Algos() []Algo {
	out := make([]Algo, len(registry))
	for i, e := range registry {
		out[i] = e.Algo
	}
	return out
}

// Scripted lists the algorithms that have an embedded script: what eval,
// race and serve can run.
func Scripted() []Algo {
	var out []Algo
	for _, e := range registry {
		if e.Script != nil {
			out = append(out, e.Algo)
		}
	}
	return out
}

func algoList(as []Algo) string {
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = string(a)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// find reads an algorithm name or alias.
func find(s string) *Algorithm {
	n := strings.ToLower(strings.TrimSpace(s))
	for _, e := range registry {
		if n == string(e.Algo) || slices.Contains(e.Aliases, n) {
			return e
		}
	}
	return nil
}

// ParseAlgo reads the name of an algorithm with a script (what eval, race
// and serve run); a few common spellings are accepted.
func ParseAlgo(s string) (Algo, error) {
	if e := find(s); e != nil && e.Script != nil {
		return e.Algo, nil
	}
	return "", exitcode.Usagef("unknown algorithm %q; use %s", s, algoList(Scripted()))
}

// String is the algorithm's name.
func (a Algo) String() string { return string(a) }

// StateType is the Redis type the algorithm's script keeps its state in:
// hash, zset or string ("" for an unknown algorithm).
func (a Algo) StateType() string {
	if e := Lookup(a); e != nil {
		return e.StateType
	}
	return ""
}

// Flags are the parameter words (eval's and serve's flags) the algorithm
// reads.
func (a Algo) Flags() []string {
	e := Lookup(a)
	if e == nil {
		return nil
	}
	out := make([]string, len(e.Params))
	for i, p := range e.Params {
		out[i] = p.Word
	}
	return out
}

// secs is f seconds rounded up to whole seconds, at least 1.
func secs(f float64) int64 { return max(1, int64(math.Ceil(f))) }

// windowPolicy is the policy of a windowed algorithm: limit per window.
func windowPolicy(p Params) Policy {
	return Policy{Quota: p.Limit, WindowSeconds: secs(p.Window.Seconds())}
}

// windowPerSecond is the long-run rate of limit per window.
func windowPerSecond(p Params) float64 { return float64(p.Limit) / p.Window.Seconds() }

// windowQuota is limit at once, restored after a window.
func windowQuota(p Params) (int64, time.Duration) { return p.Limit, p.Window }

// validateWindow checks limit and window of a windowed algorithm.
func validateWindow(p Params, maxLimit int64) error {
	if p.Limit <= 0 || p.Limit > maxLimit {
		return paramErr("limit", "%s needs {limit} from 1 to %d, got %d", p.Algo, maxLimit, p.Limit)
	}
	if p.Window < time.Millisecond || p.Window%time.Millisecond != 0 {
		return paramErr("window", "%s needs {window} of whole milliseconds, at least 1ms (e.g. 10s or 1m), got %s", p.Algo, p.Window)
	}
	if p.Window.Milliseconds() > MaxWindowMs {
		return paramErr("window", "%s {window} %s is too long; the most is %s (1e12 ms)", p.Algo, p.Window, time.Duration(MaxWindowMs)*time.Millisecond)
	}
	if max(p.Cost, 1) > p.Limit {
		return paramErr("cost", "{cost} %d exceeds {limit} %d: no call could ever pass", max(p.Cost, 1), p.Limit)
	}
	return nil
}

// describeWindow returns the words of a windowed algorithm: "sliding
// window 100 per 1m", and the options away from their defaults.
func describeWindow(words string) func(p Params) string {
	return func(p Params) string {
		return fmt.Sprintf("%s %d per %s", words, p.Limit, ShortDuration(p.Window)) + optionWords(p)
	}
}

// optionWords names the options of p away from the defaults:
// ", clock-aligned, refusals counted".
func optionWords(p Params) string {
	var w []string
	switch p.Align {
	case AlignClock:
		if p.Algo != SlidingWindowCounter {
			w = append(w, "clock-aligned")
		}
		if p.Offset != 0 {
			w = append(w, "offset "+ShortDuration(p.Offset))
		}
	case AlignFirst:
		if p.Algo == SlidingWindowCounter {
			w = append(w, "windows from each key's first request")
		}
	}
	if p.Round != "" && p.Round != RoundFloor {
		w = append(w, "rounded "+p.Round)
	}
	if p.CountRefused {
		w = append(w, "refusals counted")
	}
	if p.Align == AlignCreation {
		w = append(w, "windows ticking from each key's creation")
	}
	if p.Expiry == ExpiryElastic {
		w = append(w, "every request restarts the window")
	}
	if p.Timer == TimerSeconds {
		w = append(w, "whole-second timers")
	}
	if p.RefuseAt == RefuseLimit {
		w = append(w, "refused once the count reaches the limit")
	}
	if len(w) == 0 {
		return ""
	}
	return ", " + strings.Join(w, ", ")
}
