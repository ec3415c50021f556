package limiter

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/words"
)

// Limits on parameters, the same the scripts check, so every ms, µs and
// micro-token quantity stays exact in Lua's doubles (below 2^53) and every
// TTL is a valid PEXPIRE.
const (
	MaxCapacity    = 1_000_000_000 // token-bucket tokens, gcra burst; micro-tokens stay below 2^53
	MaxRatePerSec  = 1_000_000_000 // token-bucket refill rate
	MaxFillMs      = 1e12          // token bucket: capacity / rate, ms to fill from empty (~31.7 years)
	MaxGCRARate    = 1_000_000     // the emission interval must be at least 1 µs
	MaxGCRATolUs   = 1e15          // gcra: emission interval x burst, µs (~31.7 years)
	MaxWindowLimit = 1_000_000     // sliding-window entries in one sorted set
	MaxFixedLimit  = 1e15          // fixed-window units per window
	MaxWindowMs    = 1e12          // sliding and fixed window length, ms (~31.7 years)
)

// Params configure a limiter. Only the fields its algorithm reads
// (Algorithm.Params) matter: token-bucket Capacity, Rate; sliding-window
// and fixed-window Limit, Window; gcra Rate, Burst. Cost 0 means 1.
type Params struct {
	Algo     Algo
	Capacity int64
	Rate     rate.Rate
	Cost     int64
	Limit    int64
	Window   time.Duration
	Burst    int64
	// Force lets the script replace a key it did not write (another type,
	// other fields, no TTL: see ForeignKeyError). The zero value refuses
	// such a key before anything is written.
	Force bool

	// The options of the windowed models (Algorithm.Options); the zero
	// values are each algorithm's defaults.
	//
	// Align is where windows start: AlignFirst (a key's first request)
	// or AlignClock (floor((t - Offset) / Window)); "" is the algorithm's
	// default (fixed-window: first; sliding-window-counter: clock).
	Align  string
	Offset time.Duration
	// Round is how a sliding window counter rounds its weighted count:
	// RoundFloor (the default), RoundNearest or RoundNone.
	Round string
	// CountRefused: refused requests count too (a log or counter that
	// adds before it checks, haproxy's sc_http_req_rate).
	CountRefused bool
	// Delay is leaky-bucket's delay=N: the requests of the burst served
	// at once, the rest delayed (DelaySet false: nodelay, all at once).
	Delay    int64
	DelaySet bool

	// Block is block=D, an option of every model: the refusal that
	// exceeds the limit starts a block of D during which every request
	// is refused and none counted; the key starts clean after it.
	Block time.Duration
	// Expiry is fixed-window's expiry=: ExpiryFixed (the default) or
	// ExpiryElastic (every request, refused ones too, restarts the
	// window).
	Expiry string
	// Timer is fixed-window's and slowdown's timer=: TimerMs (the
	// default) or TimerSeconds (whole-second timers: a window starts at
	// its first request's whole second s and ends once s + window < now
	// in whole seconds).
	Timer string
	// RefuseAt is fixed-window's refuse-at=: RefuseOver (the default: the
	// request that would exceed the limit) or RefuseLimit (the count,
	// this request included, reaching the limit: limit - 1 admitted).
	RefuseAt string
	// Refill is token-bucket's refill=: RefillExact (the default) or
	// RefillWhole (whole tokens from the last admission, the fraction
	// dropped).
	Refill string
	// Step and MaxDelay are slowdown's step= and max=: each request
	// over the limit is held step longer than the one before, at most
	// MaxDelay (0: no cap). Step 0 is the default, 1s.
	Step     time.Duration
	MaxDelay time.Duration
}

// The option values.
const (
	AlignFirst   = "first"
	AlignClock   = "clock"
	RoundFloor   = "floor"
	RoundNearest = "nearest"
	RoundNone    = "none"
	// AlignCreation: fixed windows of W from a key's first request, for
	// ever, never re-anchored by a later request.
	AlignCreation = "creation"
	ExpiryFixed   = "fixed"
	ExpiryElastic = "elastic"
	TimerMs       = "ms"
	TimerSeconds  = "seconds"
	RefuseOver    = "over"
	RefuseLimit   = "limit"
	RefillExact   = "exact"
	RefillWhole   = "whole"
)

// Validate checks p against its algorithm's rules. Bad parameters are
// exit-2 ParamErrors naming the parameter by word.
func (p Params) Validate() error {
	e := Lookup(p.Algo)
	if e == nil {
		return paramErr("", "unknown algorithm %q; use %s", p.Algo, algoList(Algos()))
	}
	if p.Cost < 0 {
		return paramErr("cost", "{cost} %d must be at least 1", p.Cost)
	}
	if p.Block < 0 || p.Block%time.Millisecond != 0 || p.Block.Milliseconds() > MaxWindowMs {
		return paramErr("", "block=%s must be whole milliseconds, at most %s", p.Block, time.Duration(MaxWindowMs)*time.Millisecond)
	}
	err := e.validate(p)
	if pe, ok := AsParamError(err); ok {
		pe.Algo = p.Algo
	}
	return err
}

// Describe names the limiter in words: "token bucket 10 + 5/s",
// "sliding window 100 per 1m", "gcra 5/s burst 10". It is the one spelling
// of a limiter in prose, in every command and format.
func (p Params) Describe() string {
	if e := Lookup(p.Algo); e != nil {
		s := e.describe(p)
		if p.Block > 0 {
			s += ", blocked " + ShortDuration(p.Block) + " after a refusal"
		}
		return s
	}
	return string(p.Algo)
}

// Settings lists the parameters as "capacity 10, rate 5/s", in the
// algorithm's order (the cost is the caller's to add).
func (p Params) Settings() string {
	e := Lookup(p.Algo)
	if e == nil {
		return ""
	}
	var parts []string
	reads := p.Algo.Flags()
	for _, q := range e.Params {
		switch {
		case q.Word == "window" && slices.Contains(reads, "limit"):
			continue // said with the limit: "limit 100 per minute"
		case q.Word == "limit" && slices.Contains(reads, "window"):
			parts = append(parts, fmt.Sprintf("limit %d %s", p.Limit, words.Per(p.Window)))
		default:
			parts = append(parts, q.Word+" "+p.value(q.Word))
		}
	}
	return strings.Join(parts, ", ")
}

// Spec is p as a model spec: "token-bucket:burst=10,rate=5/s". ParseSpec
// reads it back.
func (p Params) Spec() string {
	e := Lookup(p.Algo)
	if e == nil {
		return string(p.Algo)
	}
	parts := make([]string, len(e.Params))
	for i, q := range e.Params {
		parts[i] = q.Key + "=" + p.value(q.Word)
	}
	for _, o := range e.Options {
		if v := p.option(o.Key); v != "" && v != o.Default {
			parts = append(parts, o.Key+"="+v)
		}
	}
	return string(p.Algo) + ":" + strings.Join(parts, ",")
}

// option is an option's value as a spec shows it ("" when unset).
func (p Params) option(key string) string {
	switch key {
	case "align":
		return p.Align
	case "offset":
		if p.Offset == 0 {
			return ""
		}
		return ShortDuration(p.Offset)
	case "round":
		return p.Round
	case "count-refused":
		return strconv.FormatBool(p.CountRefused)
	case "delay":
		if !p.DelaySet {
			return ""
		}
		return strconv.FormatInt(p.Delay, 10)
	case "block":
		return durationOption(p.Block)
	case "expiry":
		return p.Expiry
	case "timer":
		return p.Timer
	case "refuse-at":
		return p.RefuseAt
	case "refill":
		return p.Refill
	case "step":
		return durationOption(p.Step)
	case "max":
		return durationOption(p.MaxDelay)
	}
	return ""
}

// durationOption is a duration option's value as a spec shows it ("" for 0).
func durationOption(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return ShortDuration(d)
}

// parseDurationOption reads a duration option: whole milliseconds, more
// than 0 and at most MaxWindowMs.
func parseDurationOption(key, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Millisecond || d%time.Millisecond != 0 || d.Milliseconds() > MaxWindowMs {
		return 0, fmt.Errorf("%s=%s: want a duration of whole milliseconds, at least 1ms, such as 250ms or 2s", key, v)
	}
	return d, nil
}

// setOption sets an option from its spec text.
func (p *Params) setOption(o Option, v string) error {
	if len(o.Values) > 0 && !slices.Contains(o.Values, v) {
		return fmt.Errorf("%s=%s: use %s", o.Key, v, strings.Join(o.Values, " or "))
	}
	switch o.Key {
	case "align":
		p.Align = v
	case "round":
		p.Round = v
	case "offset":
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("offset=%s: want a duration such as 250ms", v)
		}
		p.Offset = d
	case "count-refused":
		p.CountRefused = v == "true"
	case "delay":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("delay=%s must be a whole number of requests, 0 or more", v)
		}
		p.Delay, p.DelaySet = n, true
	case "block", "step", "max":
		d, err := parseDurationOption(o.Key, v)
		if err != nil {
			return err
		}
		switch o.Key {
		case "block":
			p.Block = d
		case "step":
			p.Step = d
		default:
			p.MaxDelay = d
		}
	case "expiry":
		p.Expiry = v
	case "timer":
		p.Timer = v
	case "refuse-at":
		p.RefuseAt = v
	case "refill":
		p.Refill = v
	default:
		return fmt.Errorf("unknown option %q", o.Key)
	}
	return nil
}

// optionOf finds an option of the algorithm by its key.
func (e *Algorithm) optionOf(key string) (Option, bool) {
	for _, o := range e.Options {
		if o.Key == key {
			return o, true
		}
	}
	return Option{}, false
}

// defaultOptions reports whether p sets no option away from its default:
// only then does an algorithm with a script stand for that script.
func (e *Algorithm) defaultOptions(p Params) bool {
	for _, o := range e.Options {
		if v := p.option(o.Key); v != "" && v != o.Default {
			return false
		}
	}
	return true
}

// PerSecond is the long-run rate at which one key admits, per second.
func (p Params) PerSecond() float64 {
	if e := Lookup(p.Algo); e != nil {
		return e.perSecond(p)
	}
	return 0
}

// Quota is the most a fresh key admits at once and the time it takes to
// restore that quota from empty.
func (p Params) Quota() (int64, time.Duration) {
	if e := Lookup(p.Algo); e != nil {
		return e.quota(p)
	}
	return 0, 0
}

// value is the parameter word's value as a spec and a settings list show it.
func (p Params) value(word string) string {
	switch word {
	case "capacity":
		return strconv.FormatInt(p.Capacity, 10)
	case "burst":
		return strconv.FormatInt(p.Burst, 10)
	case "limit":
		return strconv.FormatInt(p.Limit, 10)
	case "rate":
		return p.Rate.String()
	case "window":
		return ShortDuration(p.Window)
	}
	return ""
}

// Set sets the parameter word from text, as a spec or a flag gives it.
func (p *Params) Set(word, v string) error {
	switch word {
	case "capacity", "burst", "limit":
		n, err := strconv.ParseInt(v, 10, 64)
		// a burst may be 0 (leaky-bucket: nginx's default); its
		// algorithm's validation says whether it may here
		if err != nil || n < 0 || n == 0 && word != "burst" {
			return fmt.Errorf("%s=%s must be a positive integer", word, v)
		}
		switch word {
		case "capacity":
			p.Capacity = n
		case "burst":
			p.Burst = n
		default:
			p.Limit = n
		}
	case "rate":
		r, err := rate.Parse(v)
		if err != nil {
			return err
		}
		p.Rate = r
	case "window":
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("window=%s: want a duration such as 60s", v)
		}
		p.Window = d
	default:
		return fmt.Errorf("unknown parameter %q", word)
	}
	return nil
}

// ParseSpec reads one model spec, "token-bucket:burst=10,rate=5/s",
// "sliding-window:limit=100,window=60s", "fixed-window:limit=100,window=60s"
// or "gcra:rate=5/s,burst=10": the algorithm, then every parameter it
// reads as key=value. Errors are exit 2, in the spec's own words.
func ParseSpec(spec string) (Params, error) {
	spec = strings.TrimSpace(spec)
	name, args, _ := strings.Cut(spec, ":")
	e := find(name)
	if e == nil {
		return Params{}, exitcode.Usagef("unknown model %q; use %s", name, specExamples())
	}
	p := Params{Algo: e.Algo, Cost: 1}
	seen := map[string]bool{}
	for kv := range strings.SplitSeq(args, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || v == "" {
			return Params{}, exitcode.Usagef("%q is not key=value", kv)
		}
		q, ok := e.param(k)
		if !ok {
			if o, isOpt := e.optionOf(k); isOpt {
				if seen[o.Key] {
					return Params{}, exitcode.Usagef("%s given twice", o.Key)
				}
				seen[o.Key] = true
				if err := p.setOption(o, v); err != nil {
					return Params{}, exitcode.Usagef("%v", err)
				}
				continue
			}
			return Params{}, exitcode.Usagef("%s takes %s, not %s", e.Algo, e.keyList(), k)
		}
		if seen[q.Word] {
			return Params{}, exitcode.Usagef("%s given twice", q.Key)
		}
		seen[q.Word] = true
		if err := p.Set(q.Word, v); err != nil {
			return Params{}, exitcode.Usagef("%v", err)
		}
	}
	for _, q := range e.Params {
		if !seen[q.Word] {
			return Params{}, exitcode.Usagef("%s needs %s (e.g. %s)", e.Algo, q.Key, e.Example())
		}
	}
	if err := p.Validate(); err != nil {
		return Params{}, exitcode.Usagef("%s", SpecNamed(err))
	}
	return p, nil
}

// param finds the parameter a spec key names.
func (e *Algorithm) param(key string) (Param, bool) {
	for _, q := range e.Params {
		if key == q.Key || slices.Contains(q.Aliases, key) {
			return q, true
		}
	}
	return Param{}, false
}

func (e *Algorithm) keyList() string {
	keys := make([]string, len(e.Params))
	for i, q := range e.Params {
		keys[i] = q.Key
	}
	s := strings.Join(keys, " and ")
	if len(e.Options) > 0 {
		var opts []string
		for _, o := range e.Options {
			opts = append(opts, o.Key)
		}
		s += " (options " + strings.Join(opts, ", ") + ")"
	}
	return s
}

// Example is a spec of the algorithm with typical values.
func (e *Algorithm) Example() string {
	parts := make([]string, len(e.Params))
	for i, q := range e.Params {
		v := map[string]string{"capacity": "10", "burst": "10", "limit": "100", "rate": "5/s", "window": "60s"}[q.Word]
		parts[i] = q.Key + "=" + v
	}
	return string(e.Algo) + ":" + strings.Join(parts, ",")
}

// SpecSyntax lists the spec forms: "token-bucket:burst=N,rate=R, ...".
func SpecSyntax() string {
	var forms []string
	for _, e := range registry {
		parts := make([]string, len(e.Params))
		for i, q := range e.Params {
			v := map[string]string{"capacity": "N", "burst": "N", "limit": "N", "rate": "R", "window": "D"}[q.Word]
			parts[i] = q.Key + "=" + v
		}
		forms = append(forms, string(e.Algo)+":"+strings.Join(parts, ","))
	}
	return strings.Join(forms, ", ")
}

func specExamples() string { return SpecSyntax() }

// SpecNamed spells the parameters of a ParamError as spec keys (burst=
// for token-bucket's capacity); other errors pass unchanged.
func SpecNamed(err error) string {
	pe, ok := AsParamError(err)
	if !ok {
		return err.Error()
	}
	e := Lookup(pe.Algo)
	return pe.Named(func(word string) string {
		if e != nil {
			for _, q := range e.Params {
				if q.Word == word {
					return q.Key + "="
				}
			}
		}
		return word + "="
	})
}

// A ParamError is a bad limiter parameter. Param is the parameter at
// fault ("capacity", "rate", "limit", "window", "burst", "cost"; "" for
// the algorithm); the message names parameters by these words. Commands
// show them as their own spelling with Named: eval and serve as flags
// (--capacity), load --expect as its spec keys (burst=). Error names
// them as plain words. Every ParamError is bad input (exit 2).
type ParamError struct {
	Param string
	Algo  Algo
	tmpl  string // the message with {param} where a parameter is named
}

func paramErr(param, format string, args ...any) error {
	return exitcode.UsageError(&ParamError{Param: param, tmpl: fmt.Sprintf(format, args...)})
}

// AsParamError finds a ParamError in err's chain.
func AsParamError(err error) (*ParamError, bool) {
	for err != nil {
		if pe, ok := err.(*ParamError); ok {
			return pe, true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return nil, false
		}
		err = u.Unwrap()
	}
	return nil, false
}

func (e *ParamError) Error() string { return e.Named(func(p string) string { return p }) }

// Named is the message with each parameter spelled by name(param).
func (e *ParamError) Named(name func(param string) string) string {
	return paramRef.ReplaceAllStringFunc(e.tmpl, func(ref string) string { return name(ref[1 : len(ref)-1]) })
}

var paramRef = regexp.MustCompile(`\{(capacity|rate|limit|window|burst|cost)\}`)

// ShowRate prints a rate for a message: as given, unless that takes more
// than a few digits (1e-300/s), then in per-second scientific notation.
func ShowRate(r rate.Rate) string {
	if s := r.String(); len(s) <= 24 {
		return s
	}
	return strconv.FormatFloat(r.PerSecond(), 'g', 4, 64) + "/s"
}

// ShortDuration prints a window: "60s" for whole seconds, else as
// time.Duration does ("1.5s", "500ms").
func ShortDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// longDuration prints ms for a message, in years when it is that long.
func longDuration(ms float64) string {
	const year = 365.25 * 24 * 3600 * 1000
	if math.IsInf(ms, 0) || ms > 1e6*year {
		return "more than a million years"
	}
	if ms >= year {
		return strconv.FormatFloat(ms/year, 'f', 1, 64) + " years"
	}
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Second).String()
}

// formatFloat prints f as a plain decimal ("1000000", "0.00001", never
// "1e+06") with the fewest digits that read back as the same double: real
// Redis's Lua reads exponents, but the embedded miniredis's tonumber does
// not. The limits keep rates between 1e-9 and 1e9, so the digits are few.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// ParamsDoc is a limiter's parameters as every document carries them:
// only the fields its algorithm reads are set (the others are omitted).
type ParamsDoc struct {
	Capacity int64   `json:"capacity,omitempty"`
	Rate     string  `json:"rate,omitempty"`
	RatePerS float64 `json:"rate_per_s,omitempty"`
	Cost     int64   `json:"cost"`
	Limit    int64   `json:"limit,omitempty"`
	WindowMs int64   `json:"window_ms,omitempty"`
	Burst    int64   `json:"burst,omitempty"`
}

// Doc returns p's document form.
func (p Params) Doc() ParamsDoc {
	d := ParamsDoc{Cost: max(p.Cost, 1)}
	for _, w := range p.Algo.Flags() {
		switch w {
		case "capacity":
			d.Capacity = p.Capacity
		case "burst":
			d.Burst = p.Burst
		case "limit":
			d.Limit = p.Limit
		case "window":
			d.WindowMs = p.Window.Milliseconds()
		case "rate":
			d.Rate, d.RatePerS = p.Rate.String(), p.Rate.PerSecond()
		}
	}
	return d
}

// Params reads a document's parameters back for algorithm a. A rate that
// no longer parses is taken from RatePerS.
func (d ParamsDoc) Params(a Algo) Params {
	p := Params{Algo: a, Capacity: d.Capacity, Cost: d.Cost, Limit: d.Limit, Burst: d.Burst,
		Window: time.Duration(d.WindowMs) * time.Millisecond}
	if r, err := rate.Parse(d.Rate); err == nil {
		p.Rate = r
	} else if d.RatePerS > 0 {
		p.Rate = rate.Rate{Count: d.RatePerS, Per: time.Second}
	}
	return p
}
