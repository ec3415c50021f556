// Package load runs an open-model, constant-arrival-rate load test against
// an HTTP target (k6's constant-arrival-rate executor, without its gaps),
// checks the rate limit headers of every response and judges the admitted
// count against the limiter's arithmetic (package limiter/model).
//
// The schedule is a pure function of the start and the iteration number
// (rate.Schedule, shared with eval --simulate); the dispatcher follows it on
// an injected Clock. Virtual users (VUs) are goroutines that each own their
// histograms and counters, merged when the run ends, so the hot path takes
// no lock. Requests go through a client: the lean HTTP/1.1 one or net/http
// (HTTPClient).
package load

import (
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/words"
)

// Defaults for the command's flags.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultPreAllocatedVUs = 10
	DefaultMaxVUs          = 100
	DefaultIdentityHeader  = "X-API-Key"

	// The --headers modes.
	HeadersFail      = tally.HeadersFail
	HeadersWarn      = tally.HeadersWarn
	HeadersOff       = tally.HeadersOff
	DefaultMaxFailed = 0.01
)

// Ceilings on one run, checked before anything is sent (exit 2), and
// documented in the README's "Safety" section. What the engine holds grows
// with them: at most 16 bytes of timeline per iteration, about 150 bytes per
// iteration kept for the replay of --expect, about 2 KB per prepared
// identity, one timeline entry per second of the run.
const (
	MaxPlanned       = 100_000_000
	MaxPlannedExpect = 20_000_000
	MaxIdentities    = tally.MaxIdentities
	MaxDuration      = tally.MaxDuration
	MaxTimeout       = tally.MaxTimeout
	MaxVUs           = 100_000
)

// DefaultExpectStatus are the statuses that do not count as failed.
var DefaultExpectStatus = tally.DefaultExpectStatus

// MaxLateness is how late an iteration may start before it is dropped
// instead: a generator that stalled (a GC pause, a starved CPU) must not
// fire the backlog in a burst that smooth traffic would not produce. Such
// drops are counted apart (dropped_late) and mark the generator as behind.
const MaxLateness = 250 * time.Millisecond

// Options configure one run. Zero values take the defaults above, except
// Target, Rate and Duration, which are required.
type Options struct {
	Target  string      // absolute http:// or https:// URL
	Method  string      // default GET
	Headers http.Header // sent on every request
	Body    []byte      // sent on every request (nil: none)

	Rate     rate.Rate
	Duration time.Duration

	PreAllocatedVUs int // VUs started before the clock
	MaxVUs          int // ceiling; an iteration with no idle VU beyond it is dropped
	Timeout         time.Duration

	// HTTPClient is the HTTP stack: HTTPClientAuto (""), HTTPClientLean or
	// HTTPClientStd (see client.go).
	HTTPClient string

	// Identities spreads iterations round-robin over N API keys
	// "load-<RunID>-<n>" sent in IdentityHeader; 0 sends no identity.
	Identities     int
	IdentityHeader string
	// HeaderMode decides what a broken rate limit header does: HeadersFail
	// (the default: a failed check, exit 1), HeadersWarn (reported, the
	// run still passes) or HeadersOff (not checked).
	HeaderMode string
	RunID      string

	ExpectStatus []int // statuses that are not failures
	// LimitedStatus are statuses besides 429 that are the limiter's
	// refusals (--limited-status 503 for nginx's default).
	LimitedStatus []int
	MaxFailed     float64 // threshold on failed/completed, 0..1
	NoMaxFailed   bool    // no MaxFailed check (a --threshold on failed replaces it)

	// Thresholds are checked when the run ends; with AbortOnFail the run
	// stops as soon as one of them can no longer be met.
	Thresholds  []judge.Threshold
	AbortOnFail bool

	Expect *judge.Expectation // nil: no verdict on the admitted count

	// Segment, when Count > 1, runs only segment Index (from 0) of Count
	// of the plan: the arrivals i with i mod Count == Index
	// (rate.Schedule.Segment); the documents of all segments merge into
	// the whole run (Merge).
	Segment Segment
	// StartAt, when set, is the wall-clock instant the clock starts
	// (--start-at), so that segments on several machines start together;
	// the run waits for it after connecting.
	StartAt time.Time

	// Faults, when set, are injected into the Redis behind the target
	// during the run, and each window is judged (fault.go); they need
	// Expect.
	Faults *Faults

	// Now is the wall clock, read once for started_at and as the base of the
	// model replay; default time.Now. Durations use the monotonic clock.
	Now func() time.Time
	// Live, when set, is updated as the run goes (for a progress bar).
	Live *Live
	// Transport replaces the tuned default (tests).
	Transport http.RoundTripper
	// saturated, when set, replaces the CPU watch's judgement (tests).
	saturated func() bool
}

// Segment is one of Count execution segments of a plan.
type Segment struct {
	Index, Count int
}

// MaxSegments bounds --segment's count.
const MaxSegments = 10_000

// MaxStartWait bounds how far ahead --start-at may be.
const MaxStartWait = 24 * time.Hour

// Validate checks o as Run would, without sending anything: every error is
// exit 2 and names the flag to fix. Commands call it before they create
// files for the run's output.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

// withDefaults fills zero values and validates; errors are exit-2 errors
// naming the flag to fix.
func (o Options) withDefaults() (Options, error) {
	if o.Method == "" {
		o.Method = http.MethodGet
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxVUs == 0 {
		o.MaxVUs = max(DefaultMaxVUs, o.PreAllocatedVUs)
	}
	if o.PreAllocatedVUs == 0 {
		o.PreAllocatedVUs = min(DefaultPreAllocatedVUs, o.MaxVUs)
	}
	if o.IdentityHeader == "" {
		o.IdentityHeader = DefaultIdentityHeader
	}
	switch o.HeaderMode {
	case "":
		o.HeaderMode = HeadersFail
	case HeadersFail, HeadersWarn, HeadersOff:
	default:
		return o, exitcode.Usagef("--headers %q: use fail (a broken rate limit header fails the run), warn or off", o.HeaderMode)
	}
	// -H that sets the identity header is the identity: the generator adds
	// no second copy of the field.
	if o.Identities > 0 && o.Headers.Get(o.IdentityHeader) != "" {
		if o.Identities > 1 {
			return o, exitcode.Usagef("-H sets %s, which --identities %d would set too; drop one", http.CanonicalHeaderKey(o.IdentityHeader), o.Identities)
		}
		o.Identities = 0
	}
	if len(o.ExpectStatus) == 0 {
		o.ExpectStatus = DefaultExpectStatus
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == "" {
		o.HTTPClient = HTTPClientAuto
	}
	if err := ValidateTarget(o.Target); err != nil {
		return o, err
	}
	u, _ := url.Parse(o.Target) // valid: ValidateTarget parsed it
	if _, err := chooseClient(&o, u); err != nil {
		return o, err
	}
	if !validMethod(o.Method) {
		return o, exitcode.Usagef("-X %q is not an HTTP method token", o.Method)
	}
	switch {
	case o.Duration <= 0:
		return o, exitcode.Usagef("--duration must be positive, e.g. 30s")
	case o.Duration > MaxDuration:
		return o, exitcode.Usagef("--duration %s is longer than the ceiling of %s (the timeline keeps every second); split the run", words.Span(o.Duration), words.Span(MaxDuration))
	case o.Timeout < 0:
		return o, exitcode.Usagef("--timeout must be positive, e.g. 10s")
	case o.Timeout > MaxTimeout:
		return o, exitcode.Usagef("--timeout %s is longer than the ceiling of %s", words.Span(o.Timeout), words.Span(MaxTimeout))
	case o.PreAllocatedVUs < 0 || o.MaxVUs < 0:
		return o, exitcode.Usagef("--pre-allocated-vus and --max-vus must not be negative")
	case o.MaxVUs < o.PreAllocatedVUs:
		return o, exitcode.Usagef("--max-vus %d is below --pre-allocated-vus %d; raise --max-vus", o.MaxVUs, o.PreAllocatedVUs)
	case o.MaxVUs > MaxVUs:
		return o, exitcode.Usagef("--max-vus %d is more than the ceiling of %s; a VU is a goroutine with its own histograms", o.MaxVUs, words.Commas(MaxVUs))
	case o.Identities < 0:
		return o, exitcode.Usagef("--identities must not be negative")
	case o.Identities > MaxIdentities:
		return o, exitcode.Usagef("--identities %d is more than the ceiling of %s (each is a request prepared in memory)", o.Identities, words.Commas(MaxIdentities))
	case o.MaxFailed < 0 || o.MaxFailed > 1 || o.MaxFailed != o.MaxFailed:
		return o, exitcode.Usagef("--max-failed must be between 0%% and 100%%")
	}
	if o.Identities > 0 && !header.IsToken(o.IdentityHeader) {
		return o, exitcode.Usagef("--identity-header %q is not a valid header name", o.IdentityHeader)
	}
	if o.Identities > 0 && framingFields[http.CanonicalHeaderKey(o.IdentityHeader)] {
		return o, exitcode.Usagef("--identity-header %s is written by the client itself; name another header, e.g. X-API-Key", o.IdentityHeader)
	}
	for name, vs := range o.Headers {
		if !header.IsToken(name) {
			return o, exitcode.Usagef("header name %q is not a token", name)
		}
		for _, v := range vs {
			if !validFieldValue(v) {
				return o, exitcode.Usagef("-H %s: the value must not contain CR, LF, NUL or other control characters", name)
			}
		}
	}
	if _, err := judge.NewRule(o.LimitedStatus); err != nil {
		return o, exitcode.Usagef("--limited-status %v", err)
	}
	for _, s := range o.ExpectStatus {
		if !tally.ValidStatus(s) {
			return o, exitcode.Usagef("--expect-status %d is not an HTTP status (100-999)", s)
		}
	}
	if sg := o.Segment; sg.Count != 0 || sg.Index != 0 {
		switch {
		case sg.Count < 1 || sg.Count > MaxSegments:
			return o, exitcode.Usagef("--segment: the count %d is out of range; use 1 to %s", sg.Count, words.Commas(MaxSegments))
		case sg.Index < 0 || sg.Index >= sg.Count:
			return o, exitcode.Usagef("--segment %d/%d: the index runs from 0 to %d (as JOB_COMPLETION_INDEX does)", sg.Index, sg.Count, sg.Count-1)
		case o.Faults != nil && sg.Count > 1:
			return o, exitcode.Usagef("--fault judges the whole run's windows; run it unsegmented")
		}
	}
	if !o.StartAt.IsZero() {
		if ahead := o.StartAt.Sub(o.Now()); ahead > MaxStartWait {
			return o, exitcode.Usagef("--start-at %s is more than %s ahead", o.StartAt.UTC().Format(time.RFC3339), words.Span(MaxStartWait))
		} else if ahead < -time.Second {
			return o, exitcode.Usagef("--start-at %s is %s in the past: the segments would not start together", o.StartAt.UTC().Format(time.RFC3339), words.Span(-ahead.Round(time.Second)))
		}
	}
	ceiling, why := int64(MaxPlanned), ""
	if o.Faults != nil {
		fc := *o.Faults
		if fc.During == "" {
			fc.During = judge.DuringAny
		}
		o.Faults = &fc
		if fc.Run == nil {
			return o, exitcode.Usagef("--fault: no fault to play")
		}
		if err := fc.Validate(o.Duration, o.Expect); err != nil {
			return o, err
		}
		ceiling, why = MaxPlannedExpect, " with --fault (every arrival is kept for the windows)"
	}
	if o.Expect != nil && o.Expect.Implicit {
		// judging the advertised policy by default keeps every arrival:
		// a plan too large for that is run without it
		if n, err := rate.PlannedCount(o.Rate, o.Duration); err == nil && n.Cmp(big.NewInt(MaxPlannedExpect)) > 0 {
			o.Expect = nil
		}
	}
	if o.Expect.Judges() {
		ceiling, why = MaxPlannedExpect, " with --expect (every arrival is kept for the replay)"
	}
	if _, err := Plan(o.Rate, o.Duration, ceiling); err != nil {
		if why != "" {
			err = exitcode.UsageError(fmt.Errorf("%w%s", err, why))
		}
		return o, err
	}
	return o, nil
}

// Plan returns the schedule of r over d, refusing one that plans more than
// ceiling iterations with an exit-2 error giving both numbers. The count is
// computed exactly, whatever r and d, so no product can overflow.
func Plan(r rate.Rate, d time.Duration, ceiling int64) (rate.Schedule, error) {
	n, err := rate.PlannedCount(r, d)
	if err != nil {
		return rate.Schedule{}, exitcode.Usagef("--rate/--duration: %v", err)
	}
	if n.Cmp(big.NewInt(ceiling)) > 0 {
		return rate.Schedule{}, exitcode.Usagef("--rate %s for %s plans %s iterations; the ceiling is %s: lower --rate or --duration",
			r, words.Span(d), words.Commas(n), words.Commas(ceiling))
	}
	return rate.NewSchedule(r, d)
}

// ValidateTarget checks that target is an absolute http or https URL with
// a host and a valid port. Errors are exit 2 and show the target with its
// password masked.
func ValidateTarget(target string) error {
	if target == "" {
		return exitcode.Usagef("no target; pass --target URL or set RATELIMIT_TARGET (e.g. http://127.0.0.1:8011/hello from 'ratelimit serve')")
	}
	shown := secret.URL(target)
	if !strings.Contains(target, "://") {
		return exitcode.Usagef("--target %q has no scheme; add http:// (e.g. http://%s)", shown, strings.TrimPrefix(shown, "//"))
	}
	u, err := url.Parse(target)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message quotes the URL, password and all
		}
		return exitcode.Usagef("--target %q is not a URL: %v", shown, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return exitcode.Usagef("--target %q: scheme %q is not supported; use http:// or https://", shown, u.Scheme)
	}
	if u.Hostname() == "" {
		return exitcode.Usagef("--target %q has no host; e.g. http://127.0.0.1:8011/hello", shown)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return exitcode.Usagef("--target %q: port %s is not 1-65535", shown, p)
		}
	}
	return nil
}

func validMethod(m string) bool { return header.IsToken(m) }

// validFieldValue reports whether v may be sent as a header value: no
// control character but HTAB (RFC 9110 field-value), so no CR or LF that
// would start a header (or a request) of its own.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// framingFields are headers the client writes itself: an identity sent in
// one of them would corrupt the request.
var framingFields = map[string]bool{"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Te": true, "Trailer": true, "Upgrade": true}

// ParseHeaders reads -H values of the form "Name: value" (curl's syntax).
func ParseHeaders(lines []string) (http.Header, error) {
	h := http.Header{}
	for _, l := range lines {
		name, value, ok := strings.Cut(l, ":")
		name = strings.TrimSpace(name)
		if !ok || !header.IsToken(name) {
			return nil, exitcode.Usagef("-H %q: want 'Name: value'", secret.Redact(l))
		}
		value = strings.TrimSpace(value)
		if !validFieldValue(value) {
			// quote the name only: the value may be a credential
			return nil, exitcode.Usagef("-H %s: the value must not contain CR, LF, NUL or other control characters", name)
		}
		h.Add(textproto.CanonicalMIMEHeaderKey(name), value)
	}
	return h, nil
}

// ParseStatuses reads --expect-status "200,429" (also "2xx" for 200-299).
func ParseStatuses(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if len(f) == 3 && (f[1] == 'x' || f[1] == 'X') && (f[2] == 'x' || f[2] == 'X') && f[0] >= '1' && f[0] <= '9' {
			base := int(f[0]-'0') * 100
			for c := base; c < base+100; c++ {
				out = append(out, c)
			}
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || len(f) != 3 || !tally.ValidStatus(n) {
			return nil, exitcode.Usagef("--expect-status %q: want status codes such as 200,429 or 2xx", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, exitcode.Usagef("--expect-status is empty; want e.g. 200,429")
	}
	return out, nil
}

// ParsePercent reads --max-failed "1%", "0.5%" or a fraction "0.01".
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v < 0 || v != v {
		return 0, exitcode.Usagef("--max-failed %q: want a percentage such as 1%% or 0.5%%", s)
	}
	if pct {
		v /= 100
	}
	if v > 1 {
		return 0, exitcode.Usagef("--max-failed %q is above 100%%", s)
	}
	return v, nil
}

// IdentityValue is the API key of identity n in run runID.
func IdentityValue(runID string, n int) string { return fmt.Sprintf("load-%s-%d", runID, n) }

// Live counters for a progress display, updated atomically as the run goes.
type Live struct {
	Sent, Done, OK, Limited, Failed, Dropped, ActiveVUs atomic.Int64
}
