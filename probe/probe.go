// Package probe audits one HTTP endpoint's rate limiter against what goes
// wrong in production: the wrong status when limiting, a missing, zero or
// dishonest Retry-After, a cacheable 429, RateLimit headers that do not
// parse or lie about the reset or the policy, identities that share quota,
// and client-IP headers that hand out fresh quota to anyone who rotates
// them. It sends a bounded number of requests (Options.Budget) within the
// policy's window plus a few seconds, and returns one Check per audit with
// its evidence and the fix. It knows nothing of cobra or of rendering.
//
// # Identities
//
// Each phase uses its own fresh identity, probe-<run>-<letter>, in the
// identity header (X-API-Key by default), so phases do not disturb one
// another: A measures the burst and the refill, E the Retry-After, B the
// isolation, C and D the reset time; requests without an identity (keyed by
// the probe's own address) test client-IP spoofing. The timed phases each
// run at their own time, whatever the others do. A limiter that keys only
// by the client's address (express-rate-limit's default, nginx's usual
// $binary_remote_addr) gives every identity one shared quota: the probe
// sees it (a fresh identity refused right after another ran out) and then
// runs the remaining phases one after another, each after a full reset, so
// no phase judges what another one spent. The target's limiter keeps its
// buckets; they expire by its own rules.
package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// Kind and Version identify a probe result document.
const (
	Kind    = "probe"
	Version = 1
)

// The checks, by id (--skip ID, --warn-only ID).
const (
	CheckLimitedStatus    = "limited-status"
	CheckRetryAfter       = "retry-after"
	CheckRetryAfterHonest = "retry-after-honest"
	CheckHeaders          = "ratelimit-headers"
	CheckReset            = "reset"
	CheckPolicy           = "policy"
	CheckCacheable        = "cacheable-429"
	CheckIsolation        = "identity-isolation"
	CheckSpoofing         = "ip-spoofing"
	CheckHeadersOnSuccess = "headers-on-success"
)

// CheckIDs lists every check in report order.
func CheckIDs() []string {
	return []string{CheckLimitedStatus, CheckRetryAfter, CheckRetryAfterHonest, CheckHeaders, CheckReset,
		CheckPolicy, CheckCacheable, CheckIsolation, CheckSpoofing, CheckHeadersOnSuccess}
}

// Statuses of a check.
const (
	Pass = "pass"
	Fail = "fail"
	Warn = "warn"
	Skip = "skip"
	// Undecided is the status of the decided check an undecided run
	// carries (doc.CheckDecided): the run saw too little to judge.
	Undecided = "undecided"
)

// Defaults.
const (
	DefaultIdentityHeader = "X-API-Key"
	DefaultTimeout        = 5 * time.Second
	// DefaultMaxWait bounds the waits for a window to pass (the refill and
	// reset checks): a policy with a longer window skips those checks
	// rather than keep the probe running for it.
	DefaultMaxWait = 70 * time.Second
	// unknownQuotaCap bounds one exhaustion when the quota is unknown.
	unknownQuotaCap = 200
	// MaxBudget is the most requests --budget may allow, and the default
	// budget's ceiling: a target that advertises q=1000000 is not worth a
	// million requests; its checks that need more are skipped, saying so.
	MaxBudget = 20_000
	// MaxQuotaExhausted is the largest quota the probe spends: above it
	// the phases that run a quota dry are skipped.
	MaxQuotaExhausted = 2_000
	// MaxMaxTime bounds --max-time.
	MaxMaxTime = time.Hour
	// MaxHeaderBytes caps a response's headers; MaxBodyBytes the body read
	// of each response (the rest is dropped with the connection).
	MaxHeaderBytes = 64 << 10
	MaxBodyBytes   = 64 << 10
)

// DefaultBudget is the request budget for a quota q (0: unknown): enough
// to exhaust it six times (the burst, the refill, the Retry-After, the
// client-IP and two reset phases), plus polling and spoofing attempts,
// at most MaxBudget.
func DefaultBudget(q int64) int {
	if q <= 0 {
		return 6*unknownQuotaCap + 100
	}
	return int(min(7*q+100, MaxBudget))
}

// DefaultMaxTime is the probe's time bound for a window w (0: unknown):
// a few windows, for the phases that wait for a reset, at least a minute.
func DefaultMaxTime(w time.Duration) time.Duration {
	return min(max(time.Minute, 8*w+30*time.Second), MaxMaxTime)
}

// Options configure a probe.
type Options struct {
	URL    string
	Method string      // GET when empty
	Header http.Header // sent with every request (-H)
	// IdentityHeader carries the probe's identities.
	IdentityHeader string
	// Budget bounds the requests sent; 0 means DefaultBudget of the quota
	// learnt from the first response (or Quota).
	Budget int
	// Quota and Window override the advertised policy (--expect); 0 means
	// read RateLimit-Policy (or the legacy X-RateLimit-Limit, without a
	// window).
	Quota  int64
	Window time.Duration
	// Model and ModelWords name the --expect model in its own terms.
	Model, ModelWords string
	// Skip lists checks not to run; WarnOnly lists checks whose failure is
	// a warning.
	Skip, WarnOnly []string
	Timeout        time.Duration // each request; DefaultTimeout when 0
	MaxWait        time.Duration // DefaultMaxWait when 0
	// MaxTime bounds the whole probe; 0 means DefaultMaxTime of the
	// window. Phases that cannot finish within it are skipped, saying so.
	MaxTime time.Duration
	// Limited are statuses besides 429 the user declared the limiter's
	// refusals (--limited-status): limited-status is then a warning.
	Limited []int
	RunID   string // names the identities; required
	// Client sends the requests; nil means a client of a few keep-alive
	// connections, response headers capped at MaxHeaderBytes.
	Client *http.Client
	// Progress, when set, gets one short line per phase.
	Progress io.Writer
}

// Result is the probe document (kind "probe").
type Result struct {
	doc.Header
	Target string `json:"target"` // the URL, userinfo masked
	Method string `json:"method"`
	// ElapsedMs is from the first request to the last response.
	ElapsedMs float64 `json:"elapsed_ms"`
	// Peer is the probe's address as the target sees it (the local end of
	// the connection): spoofing findings hold for clients reaching the
	// target this way.
	Peer   string `json:"peer,omitempty"`
	Policy Policy `json:"policy"`
	// Requests were sent of Budget.
	Requests int `json:"requests"`
	Budget   int `json:"budget"`
	// Shared: the identities shared one quota (a limiter keyed by address
	// or global), so the phases ran one after another, each after a reset.
	Shared bool `json:"shared,omitempty"`
	// Notes say what the probe did that a reader should know: a wait for
	// a reset before it started, a phase cut by --max-time.
	Notes  []string `json:"notes,omitempty"`
	Checks []Check  `json:"checks"`
	// Verdict is pass (no check failed), fail, or undecided (no check
	// failed, but nothing was refused, the budget or time cut the run
	// before the evidence existed, or most requests got no answer; the
	// decided check says why)
	Verdict string `json:"verdict"`
}

// Policy is what the probe judged against.
type Policy struct {
	Quota    int64   `json:"quota"`     // 0: unknown
	WindowMs float64 `json:"window_ms"` // 0: unknown
	// Source is "RateLimit-Policy", "--expect", "X-RateLimit-Limit" or "".
	Source string `json:"source"`
	// Model and ModelWords are the model --expect gave, in its own terms
	// (leaky-bucket:rate=5/s,burst=10), which Quota and Window restate
	// (q=11 per 3s); absent otherwise.
	Model      string `json:"model,omitempty"`
	ModelWords string `json:"model_words,omitempty"`
}

// Check is one audit's outcome: a doc.Check (a warning is a failure that
// does not fail the run; a skipped check passes) with the probe's status
// word, the evidence and the fix.
type Check struct {
	doc.Check
	Status   string   `json:"status"` // pass, fail, warn or skip
	Evidence []string `json:"evidence,omitempty"`
	Fix      string   `json:"fix,omitempty"`
}

// Pass reports whether no check failed and the run decided.
func (r Result) Pass() bool { return r.Verdict == Pass }

// Undecided reports whether the run decided nothing.
func (r Result) Undecided() bool { return r.Verdict == doc.VerdictUndecided }

// CheckList is the checks as every document kind spells them.
func (r Result) CheckList() []doc.Check {
	out := make([]doc.Check, len(r.Checks))
	for i, c := range r.Checks {
		out[i] = c.Check
	}
	return out
}

// Validate checks o before anything is sent: every error is exit 2.
func (o Options) Validate() error {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return exitcode.Usagef("probe URL %q: want http://host[:port]/path or https://...", secret.URL(o.URL))
	}
	for _, id := range append(slices.Clone(o.Skip), o.WarnOnly...) {
		if !slices.Contains(CheckIDs(), id) {
			return exitcode.Usagef("unknown check %q; the checks are %s", id, strings.Join(CheckIDs(), ", "))
		}
	}
	if o.Budget < 0 {
		return exitcode.Usagef("--budget %d must be positive", o.Budget)
	}
	if o.Budget > MaxBudget {
		return exitcode.Usagef("--budget %d is above the ceiling of %d requests", o.Budget, MaxBudget)
	}
	if o.MaxTime < 0 || o.MaxTime > MaxMaxTime {
		return exitcode.Usagef("--max-time %s: want a positive duration of at most %s", o.MaxTime, MaxMaxTime)
	}
	for _, s := range o.Limited {
		if s < 400 || s > 599 {
			return exitcode.Usagef("--limited-status %d: a refusal is a 4xx or 5xx status", s)
		}
	}
	if o.Quota < 0 || o.Window < 0 {
		return exitcode.Usagef("the expected quota and window must be positive")
	}
	if !header.IsToken(o.identityHeader()) {
		return exitcode.Usagef("--identity-header %q is not a valid header name", o.IdentityHeader)
	}
	if o.RunID == "" {
		return errors.New("probe: Options.RunID is empty")
	}
	return nil
}

// identityName is the identity header as the user spelt it.
func (o Options) identityName() string {
	if o.IdentityHeader == "" {
		return DefaultIdentityHeader
	}
	return o.IdentityHeader
}

func (o Options) identityHeader() string {
	if o.IdentityHeader == "" {
		return DefaultIdentityHeader
	}
	return http.CanonicalHeaderKey(o.IdentityHeader)
}

// obs is one request and what came back.
type obs struct {
	Identity string // "" when sent without one
	Spoof    string // "Header: value" of a spoofing attempt
	Sent     time.Time
	Done     time.Time
	Status   int // 0 on a transport error
	// Batch numbers the burst the request went out in (requests released
	// together by one barrier); 0 for a request sent on its own
	Batch  int
	Header http.Header
	Err    error
}

// admitted and refused follow the one allowed rule (judge.Allowed); a
// transport error (status 0) is neither.
func (o obs) admitted() bool { return judge.Allowed(o.Status) }
func (o obs) refused() bool  { return o.Status >= 400 }

// count is how many of os were admitted.
func count(os []obs) int {
	n := 0
	for _, o := range os {
		if o.admitted() {
			n++
		}
	}
	return n
}

// errBudget stops a phase when the request budget is spent.
var errBudget = errors.New("request budget spent")

// prober sends the requests of one run; the timed phases send from
// goroutines of their own, so it is safe for concurrent use.
type prober struct {
	o        Options
	client   *http.Client
	mu       sync.Mutex
	sent     int
	budget   int
	peer     string
	deadline time.Time // --max-time
	batches  int       // bursts sent so far (obs.Batch)
}

// errTime stops a phase when --max-time has passed.
var errTime = errors.New("--max-time passed")

// reserve takes up to n requests from the budget: how many may be sent,
// and, when fewer than n, why not (errBudget, errTime).
func (p *prober) reserve(n int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.deadline.IsZero() && time.Now().After(p.deadline) {
		return 0, errTime
	}
	left := p.budget - p.sent
	if left <= 0 {
		return 0, errBudget
	}
	if n > left {
		p.sent += left
		return left, errBudget
	}
	p.sent += n
	return n, nil
}

// send sends one request as identity (none when ""), with extra headers.
func (p *prober) send(ctx context.Context, identity string, extra ...string) (obs, error) {
	if _, err := p.reserve(1); err != nil {
		return obs{}, err
	}
	return p.do(ctx, identity, extra...)
}

// do sends one request reserved from the budget.
func (p *prober) do(ctx context.Context, identity string, extra ...string) (obs, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	method := p.o.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, p.o.URL, nil)
	if err != nil {
		return obs{}, exitcode.Usagef("probe URL: %v", err)
	}
	for k, vs := range p.o.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	ob := obs{Identity: identity}
	if identity != "" {
		req.Header.Set(p.o.identityHeader(), identity)
	} else {
		req.Header.Del(p.o.identityHeader())
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
		ob.Spoof = extra[i] + ": " + extra[i+1]
	}
	// the last 1xx status read before the final one: written by the
	// transport's goroutine, which may still read a flood of them after
	// Do returned on the timeout
	var informational atomic.Int32
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if info.Conn != nil {
				p.mu.Lock()
				p.peer = info.Conn.LocalAddr().String()
				p.mu.Unlock()
			}
		},
		Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
			informational.Store(int32(code))
			return nil
		},
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	ob.Sent = time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		ob.Done, ob.Err = time.Now(), p.transportError(ctx, int(informational.Load()), err)
		return ob, nil
	}
	// The body counts as part of the answer: one that does not end within
	// the timeout (a body dripped byte by byte) is a transport error, not
	// an admission. At most MaxBodyBytes are read; the rest is dropped
	// with the connection.
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, MaxBodyBytes))
	resp.Body.Close()
	ob.Done = time.Now()
	if err != nil {
		ob.Err = &bodyError{status: resp.StatusCode, read: n, timeout: p.o.Timeout, timedOut: timedOut(ctx, err), err: err}
		return ob, nil
	}
	ob.Status, ob.Header = resp.StatusCode, resp.Header
	return ob, nil
}

// transportError says what the target did when a request got no final
// response: an informational (1xx) status and nothing after it, no answer
// within the timeout, or net/http's own words.
func (p *prober) transportError(ctx context.Context, informational int, err error) error {
	switch {
	case informational != 0:
		return &informationalError{Status: informational, err: err}
	case timedOut(ctx, err):
		return &answerError{msg: fmt.Sprintf("no complete response within --timeout %s", p.o.Timeout), err: err}
	case strings.Contains(err.Error(), "server response headers exceeded"):
		return &answerError{msg: fmt.Sprintf("the response headers are larger than the %d KiB the probe reads", MaxHeaderBytes>>10), err: err}
	case strings.Contains(err.Error(), "malformed HTTP"):
		return &answerError{msg: "the answer is not HTTP/1.x (a malformed status line or header)", err: err}
	}
	return err
}

// answerError says what went wrong in words of its own, keeping the cause
// for errors.Is.
type answerError struct {
	msg string
	err error
}

func (e *answerError) Error() string { return e.msg }
func (e *answerError) Unwrap() error { return e.err }

// timedOut reports whether a request failed because its timeout passed
// (the context's or the client's), not because the probe was cancelled.
func timedOut(ctx context.Context, err error) bool {
	var ne net.Error
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// informationalError is a target that answered an informational status
// (1xx, such as "HTTP/1.1 199") as its final response: no final status
// (200 to 599) followed it. The target is reached but speaks no HTTP a
// client can act on, so the probe stops (exit 3) saying so.
type informationalError struct {
	Status int
	err    error
}

func (e *informationalError) Error() string {
	return fmt.Sprintf("the target answered %d, an informational (1xx) status, as its final response: no final status (200 to 599) followed; fix the server to end every response with one", e.Status)
}

func (e *informationalError) Unwrap() error { return e.err }

// bodyError is a response whose body did not arrive whole.
type bodyError struct {
	status   int
	read     int64
	timeout  time.Duration
	timedOut bool
	err      error
}

func (e *bodyError) Error() string {
	if e.timedOut {
		return fmt.Sprintf("the response (%d) came, but its body did not end within --timeout %s (%d bytes read): a body dripped this slowly ties clients up", e.status, e.timeout, e.read)
	}
	return fmt.Sprintf("the response (%d) came, but its body was cut after %d bytes: %v", e.status, e.read, e.err)
}

func (e *bodyError) Unwrap() error { return e.err }

// maxInFlight bounds the requests one burst keeps in flight at once (and
// so the connections it opens): a quota of 1000 is spent by one burst.
const maxInFlight = 1500

// firstWave is the size of the first wave of an exhaustion when the
// quota is unknown; each later wave doubles it.
const firstWave = 10

// exhaust spends identity's quota: waves of requests, each all in flight
// at once, until a wave holds a refusal or max requests (limit) were sent. The
// first wave is the quota and a margin when it is known (one wave spends
// it whatever the latency: requests sent one after another let the
// refill keep up when latency x rate >= 1), else firstWave, doubling.
// The observations are in send order.
func (p *prober) exhaust(ctx context.Context, identity string, q int64, limit int, extra ...string) ([]obs, error) {
	var out []obs
	wave := firstWave
	if q > 0 {
		wave = int(q + min(max(2, q/5), 50))
	}
	for len(out) < limit {
		n := min(wave, limit-len(out))
		os, _, err := p.burst(ctx, identity, n, extra...)
		out = append(out, os...)
		if err != nil {
			return out, err
		}
		for _, o := range os {
			if o.refused() {
				return out, nil
			}
		}
		if unanswered(os) > len(os)/2 {
			return out, nil // most got no answer: the caller says so
		}
		wave *= 2
	}
	return out, nil
}

// unanswered counts the requests that got no answer.
func unanswered(os []obs) int {
	n := 0
	for _, o := range os {
		if o.Err != nil {
			n++
		}
	}
	return n
}

// burst sends n requests as identity all at once (at most maxInFlight in
// flight; a barrier releases them together) and counts admissions. The
// observations are in send order. When the budget or --max-time allows
// fewer, those are sent and the error says why the rest were not.
func (p *prober) burst(ctx context.Context, identity string, n int, extra ...string) ([]obs, int, error) {
	return p.burstEach(ctx, identity, n, func(int) []string { return extra })
}

// burstEach is burst with the extra headers of each request: extra(i)
// for the i-th (controls and spoofed attempts in one burst).
func (p *prober) burstEach(ctx context.Context, identity string, n int, extra func(i int) []string) ([]obs, int, error) {
	if n <= 0 {
		return nil, 0, nil
	}
	n, stop := p.reserve(n)
	if n == 0 {
		return nil, 0, stop
	}
	p.mu.Lock()
	p.batches++
	batch := p.batches
	p.mu.Unlock()
	out := make([]obs, n)
	errs := make([]error, n)
	sem := make(chan struct{}, min(n, maxInFlight))
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-gate
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = p.do(ctx, identity, extra(i)...)
			out[i].Batch = batch
		})
	}
	close(gate)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	slices.SortStableFunc(out, func(a, b obs) int { return a.Sent.Compare(b.Sent) })
	return out, count(out), stop
}

// lastRefusal is the refusal answered last among os, when there is one:
// what a client waits from.
func lastRefusal(os []obs) (obs, bool) {
	var r obs
	ok := false
	for _, o := range os {
		if o.refused() && o.Err == nil && (!ok || o.Done.After(r.Done)) {
			r, ok = o, true
		}
	}
	return r, ok
}

// refusedAny reports whether any of os was refused.
func refusedAny(os []obs) bool {
	_, ok := lastRefusal(os)
	return ok
}

func newClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:       nil, // the probe judges the target as it reaches it, not through a proxy
		DialContext: (&net.Dialer{Timeout: timeout}).DialContext,
		// a burst keeps up to maxInFlight requests in flight at once;
		// a few dozen connections stay open between phases
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    64,
		MaxConnsPerHost:        maxInFlight,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: MaxHeaderBytes,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

func (p *prober) progress(format string, args ...any) {
	if p.o.Progress != nil {
		fmt.Fprintf(p.o.Progress, "probe: "+format+"\n", args...)
	}
}

// sleepUntil waits until t, or until --max-time passes when t is later:
// a phase due after the probe's time is up is cut (errTime), so the whole
// probe ends within --max-time and the requests then in flight.
func (p *prober) sleepUntil(ctx context.Context, t time.Time) error {
	if !p.deadline.IsZero() && t.After(p.deadline) {
		if err := sleepUntil(ctx, p.deadline); err != nil {
			return err
		}
		return errTime
	}
	return sleepUntil(ctx, t)
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
