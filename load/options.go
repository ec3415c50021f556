// Package load runs an open-model, constant-arrival-rate load test against
// an HTTP target (k6's constant-arrival-rate executor, without its gaps),
// checks the rate limit headers of every response and judges the admitted
// count against the limiter's arithmetic (package eval/model).
//
// The schedule is a pure function of the start and the iteration number
// (Schedule); virtual users (VUs) are goroutines that each own their
// histograms and counters, merged when the run ends, so the hot path takes
// no lock.
package load

import (
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// Defaults for the command's flags.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultPreAllocatedVUs = 10
	DefaultMaxVUs          = 100
	DefaultIdentityHeader  = "X-API-Key"
	DefaultMaxFailed       = 0.01
)

// DefaultExpectStatus are the statuses that do not count as failed.
var DefaultExpectStatus = []int{200, 429}

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

	// Identities spreads iterations round-robin over N API keys
	// "load-<RunID>-<n>" sent in IdentityHeader; 0 sends no identity.
	Identities     int
	IdentityHeader string
	RunID          string

	ExpectStatus []int   // statuses that are not failures
	MaxFailed    float64 // threshold on failed/completed, 0..1

	Expect *Expectation // nil: no verdict on the admitted count

	// Now is the wall clock, read once for started_at and as the base of the
	// model replay; default time.Now. Durations use the monotonic clock.
	Now func() time.Time
	// Live, when set, is updated as the run goes (for a progress bar).
	Live *Live
	// Transport replaces the tuned default (tests).
	Transport http.RoundTripper
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
	if len(o.ExpectStatus) == 0 {
		o.ExpectStatus = DefaultExpectStatus
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := ValidateTarget(o.Target); err != nil {
		return o, err
	}
	if !validMethod(o.Method) {
		return o, exitcode.Usagef("-X %q is not an HTTP method token", o.Method)
	}
	switch {
	case o.Duration <= 0:
		return o, exitcode.Usagef("--duration must be positive, e.g. 30s")
	case o.Timeout < 0:
		return o, exitcode.Usagef("--timeout must be positive, e.g. 10s")
	case o.PreAllocatedVUs < 0 || o.MaxVUs < 0:
		return o, exitcode.Usagef("--pre-allocated-vus and --max-vus must not be negative")
	case o.MaxVUs < o.PreAllocatedVUs:
		return o, exitcode.Usagef("--max-vus %d is below --pre-allocated-vus %d; raise --max-vus", o.MaxVUs, o.PreAllocatedVUs)
	case o.MaxVUs > 100_000:
		return o, exitcode.Usagef("--max-vus %d is more than 100000; a VU is a goroutine with its own histograms", o.MaxVUs)
	case o.Identities < 0:
		return o, exitcode.Usagef("--identities must not be negative")
	case o.MaxFailed < 0 || o.MaxFailed > 1:
		return o, exitcode.Usagef("--max-failed must be between 0%% and 100%%")
	}
	if o.Identities > 0 && !header.IsToken(o.IdentityHeader) {
		return o, exitcode.Usagef("--identity-header %q is not a valid header name", o.IdentityHeader)
	}
	for _, s := range o.ExpectStatus {
		if s < 100 || s > 599 {
			return o, exitcode.Usagef("--expect-status %d is not an HTTP status (100-599)", s)
		}
	}
	if _, err := NewSchedule(o.Rate, o.Duration); err != nil {
		return o, exitcode.Usagef("--rate/--duration: %v", err)
	}
	return o, nil
}

// ValidateTarget checks that target is an absolute http or https URL.
func ValidateTarget(target string) error {
	if target == "" {
		return exitcode.Usagef("no target; pass --target URL or set RATELIMIT_TARGET (e.g. http://127.0.0.1:8011/hello from 'ratelimit serve')")
	}
	u, err := url.Parse(target)
	if err != nil {
		return exitcode.Usagef("--target %q is not a URL: %v", target, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return exitcode.Usagef("--target %q must be an absolute http:// or https:// URL", target)
	}
	return nil
}

func validMethod(m string) bool { return header.IsToken(m) }

// ParseHeaders reads -H values of the form "Name: value" (curl's syntax).
func ParseHeaders(lines []string) (http.Header, error) {
	h := http.Header{}
	for _, l := range lines {
		name, value, ok := strings.Cut(l, ":")
		name = strings.TrimSpace(name)
		if !ok || !header.IsToken(name) {
			return nil, exitcode.Usagef("-H %q: want 'Name: value'", l)
		}
		value = strings.TrimSpace(value)
		if strings.ContainsAny(value, "\r\n\x00") {
			return nil, exitcode.Usagef("-H %q: the value must not contain CR, LF or NUL", l)
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
		if len(f) == 3 && (f[1] == 'x' || f[1] == 'X') && (f[2] == 'x' || f[2] == 'X') && f[0] >= '1' && f[0] <= '5' {
			base := int(f[0]-'0') * 100
			for c := base; c < base+100; c++ {
				out = append(out, c)
			}
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 100 || n > 599 {
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
