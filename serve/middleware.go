package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// FailMode says what the middleware does when the limiter gives no answer
// in time: serve the request anyway (open) or refuse it with 503 (closed).
type FailMode string

// The failure policies.
const (
	FailOpen   FailMode = "open"
	FailClosed FailMode = "closed"
)

// ParseFailMode reads "open" or "closed" (exit-2 error otherwise).
func ParseFailMode(s string) (FailMode, error) {
	switch FailMode(strings.ToLower(strings.TrimSpace(s))) {
	case FailOpen:
		return FailOpen, nil
	case FailClosed:
		return FailClosed, nil
	}
	return "", exitcode.Usagef("--fail %q: use open (serve requests when Redis is in trouble) or closed (refuse them with 503)", s)
}

// Defaults for the zero values of Config.
const (
	DefaultIdentityHeader = "X-API-Key"
	DefaultRedisTimeout   = 50 * time.Millisecond
	// WaitForever as RedisTimeout makes the middleware wait for Redis as
	// long as it takes (serve --limiter-timeout 0): a service that stalls
	// when Redis does, for load --fault to recognise. Its client must
	// not time out either (redisconn.Conn.NewWaitingClient).
	WaitForever       time.Duration = -1
	DefaultKeyPrefix                = "rl"
	DefaultPolicyName               = "default"
	// FailRetryAfter is the Retry-After of a 503 when failing closed.
	FailRetryAfter = time.Second

	// Defaults of the HTTP server's limits (Start and Run), chosen so that a
	// client that trickles its headers or body, or holds connections open,
	// cannot keep the server's sockets and goroutines for long.
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultMaxBody           = 1 << 20
	DefaultMaxConns          = 1024
)

// Config configures the middleware (and New's handler). Zero values mean
// the defaults above: identity header X-API-Key, a 50 ms Redis deadline,
// fail open, keys under "rl", policy name "default".
type Config struct {
	// Store runs the limiter's decisions: redislimit.NewStore on a Redis
	// client (standalone, cluster or embedded). Required.
	Store Store
	// Params are the limiter's algorithm and parameters, validated by
	// limiter.NewLimiter (bad values are exit-2 limiter.ParamErrors).
	Params limiter.Params
	// IdentityHeader carries the API key; requests without it (or with an
	// empty value) are counted against the client IP.
	IdentityHeader string
	// TrustProxy is the number of proxies in front of the server whose
	// X-Forwarded-For entries are trusted; 0 ignores the header.
	TrustProxy int
	// RedisTimeout bounds the limiter's Redis round trip for one request;
	// past it Fail decides. The middleware enforces it itself, so it holds
	// even for a client whose read timeout is longer.
	RedisTimeout time.Duration
	// Fail is the policy when Redis does not answer in time or fails.
	Fail FailMode
	// KeyPrefix starts every bucket key; it must not contain '{' or '}'
	// (the identity is the key's hash tag). Tests use a unique prefix.
	KeyPrefix string
	// PolicyName is the policy identifier in RateLimit-Policy and RateLimit.
	PolicyName string
	// Break makes the server wrong on purpose in one way (see Break); the
	// zero value is the correct reference server.
	Break Break
	// Delay makes New's /hello handler take this long (to make a slow
	// target for load tests). The middleware ignores it.
	Delay time.Duration
	// Log receives at most one line per second about Redis trouble, with
	// the number of failures since the last line, and one line the first
	// time the ACL refuses the limiter (NOPERM) or the script refuses a
	// bucket (an error reply: a key holding foreign data); nil discards it.
	// Control bytes in every line are escaped.
	Log io.Writer

	// The HTTP server's limits, read by Start and Run (MaxBody also by New's
	// handler). Zero means the default above; negative values are refused.

	// ReadHeaderTimeout bounds reading a request's line and headers (zero:
	// the default, or ReadTimeout if that is shorter).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response, counted from the end of the
	// request headers; Delay is added to it.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers (431 past it).
	MaxHeaderBytes int
	// MaxBody caps a request body (413 past it). No endpoint takes a body;
	// one within the cap is read and dropped.
	MaxBody int64
	// MaxConns caps the connections served at once; further ones wait in
	// the kernel's accept queue until a connection closes.
	MaxConns int
}

func (c Config) withDefaults() Config {
	if c.IdentityHeader == "" {
		c.IdentityHeader = DefaultIdentityHeader
	}
	if c.RedisTimeout == 0 {
		c.RedisTimeout = DefaultRedisTimeout
	}
	if c.Fail == "" {
		c.Fail = FailOpen
	} else if f, err := ParseFailMode(string(c.Fail)); err == nil {
		c.Fail = f // " Closed " means closed, not open
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.PolicyName == "" {
		c.PolicyName = DefaultPolicyName
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	c.ReadTimeout = orDefault(c.ReadTimeout, DefaultReadTimeout)
	c.ReadHeaderTimeout = orDefault(c.ReadHeaderTimeout, min(DefaultReadHeaderTimeout, c.ReadTimeout))
	c.WriteTimeout = orDefault(c.WriteTimeout, DefaultWriteTimeout)
	c.IdleTimeout = orDefault(c.IdleTimeout, DefaultIdleTimeout)
	c.MaxHeaderBytes = orDefault(c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	c.MaxBody = orDefault(c.MaxBody, DefaultMaxBody)
	c.MaxConns = orDefault(c.MaxConns, DefaultMaxConns)
	return c
}

func orDefault[T time.Duration | int | int64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Validate checks everything but the client, with defaults applied, so a
// command can reject bad flags (exit 2) before it connects to Redis.
func (c Config) Validate() error {
	c = c.withDefaults()
	l, err := limiter.NewLimiter(c.Params)
	if err != nil {
		return err
	}
	if !l.HasScript() {
		return exitcode.Usagef("%s has no script to serve with; use %s", c.Params.Algo, strings.Join(algoNames(limiter.Scripted()), ", "))
	}
	return c.validate()
}

func (c Config) validate() error {
	if !header.IsToken(c.IdentityHeader) {
		return exitcode.Usagef("--identity-header %q is not a valid header name", c.IdentityHeader)
	}
	if c.TrustProxy < 0 {
		return exitcode.Usagef("--trust-proxy %d must be 0 (ignore X-Forwarded-For) or the number of proxies in front", c.TrustProxy)
	}
	if c.RedisTimeout < 0 && c.RedisTimeout != WaitForever {
		return exitcode.Usagef("--limiter-timeout %s must be positive (or 0: wait for ever)", c.RedisTimeout)
	}
	if c.Fail != FailOpen && c.Fail != FailClosed {
		return exitcode.Usagef("--fail %q: use open (serve requests when Redis is in trouble) or closed (refuse them with 503)", c.Fail)
	}
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		return exitcode.Usagef("--key-prefix %q must not contain '{' or '}': the identity is the key's hash tag", c.KeyPrefix)
	}
	if c.Delay < 0 {
		return exitcode.Usagef("--delay %s must not be negative", c.Delay)
	}
	if _, err := ParseBreak(string(c.Break)); err != nil {
		return err
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--read-header-timeout", c.ReadHeaderTimeout}, {"--read-timeout", c.ReadTimeout}, {"--write-timeout", c.WriteTimeout}, {"--idle-timeout", c.IdleTimeout}} {
		if d.v < 0 {
			return exitcode.Usagef("%s %s must be positive", d.flag, d.v)
		}
	}
	if c.ReadHeaderTimeout > c.ReadTimeout {
		return exitcode.Usagef("--read-header-timeout %s exceeds --read-timeout %s, which bounds the headers too; lower it or raise --read-timeout", c.ReadHeaderTimeout, c.ReadTimeout)
	}
	if c.MaxHeaderBytes < 0 {
		return exitcode.Usagef("--max-header-bytes %d must be positive", c.MaxHeaderBytes)
	}
	if c.MaxBody < 0 {
		return exitcode.Usagef("--max-body %d must be positive", c.MaxBody)
	}
	if c.MaxConns < 0 {
		return exitcode.Usagef("--max-conns %d must be positive", c.MaxConns)
	}
	return nil
}

// Store is where the limiter's decisions run: the limiter's script on a
// Redis server (limiter/redislimit.Store), so this package needs no Redis
// client of its own.
type Store interface {
	// Allow decides one request for key.
	Allow(ctx context.Context, l *limiter.Limiter, key string) (limiter.Decision, error)
	// Probe runs the limiter on key, a key of its own, the way every
	// request will, and deletes it; what names the probe in errors and
	// acl is the minimal ACL to suggest when the server refuses it.
	Probe(ctx context.Context, l *limiter.Limiter, key, what, acl string) error
	// Reason sorts a failed decision.
	Reason(err error) limiter.Failure
	// Hint names the ACL rule to add when the ACL refused the limiter.
	Hint(l *limiter.Limiter, err error) string
}

// Counts are the middleware's decisions since it was made.
type Counts struct {
	Allowed    int64 `json:"allowed"`     // the limiter admitted the request
	Limited    int64 `json:"limited"`     // refused with 429
	FailOpen   int64 `json:"fail_open"`   // Redis failed or was late; served anyway
	FailClosed int64 `json:"fail_closed"` // Redis failed or was late; refused with 503
}

// Middleware limits requests with one of the eval package's scripts: one
// EVALSHA round trip per request, against the bucket of the request's
// identity. It is safe for concurrent use.
type Middleware struct {
	cfg     Config
	limiter *limiter.Limiter
	policy  header.Policy
	// policyValue is the RateLimit-Policy field value, the same on every response.
	policyValue string

	allowed, limited, failOpen, failClosed atomic.Int64
	// failures counts the failed decisions by reason.
	failures [limiter.NumFailures]atomic.Int64

	logMu     sync.Mutex
	logLast   time.Time
	logMissed int64
	// loggedOnce marks the reasons logged once and never again.
	loggedOnce [limiter.NumFailures]bool
}

// Failures are the failed decisions (fail open plus fail closed) by reason.
type Failures struct {
	Timeout     int64 `json:"timeout"`     // Redis did not answer within the deadline
	Unreachable int64 `json:"unreachable"` // connection trouble, BUSY, READONLY and the like
	NoPerm      int64 `json:"noperm"`      // the ACL user may not run the script or touch the key
	Script      int64 `json:"script"`      // the script refused (e.g. a bucket key holding foreign data)
}

// Failures returns the failed decisions so far, by reason.
func (m *Middleware) Failures() Failures {
	return Failures{
		Timeout:     m.failures[limiter.FailTimeout].Load(),
		Unreachable: m.failures[limiter.FailUnreachable].Load(),
		NoPerm:      m.failures[limiter.FailNoPerm].Load(),
		Script:      m.failures[limiter.FailScript].Load(),
	}
}

// NewMiddleware validates cfg and returns its middleware.
func NewMiddleware(cfg Config) (*Middleware, error) {
	if cfg.Store == nil {
		return nil, errors.New("serve: Config.Store is nil; pass redislimit.NewStore(client)")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	advertised, err := limiter.NewLimiter(cfg.Params)
	if err != nil {
		return nil, err
	}
	l, err := limiter.NewLimiter(cfg.Break.enforced(cfg.Params))
	if err != nil {
		return nil, err
	}
	if !l.HasScript() {
		return nil, exitcode.Usagef("%s has no script to serve with; use %s", cfg.Params.Algo, strings.Join(algoNames(limiter.Scripted()), ", "))
	}
	m := &Middleware{cfg: cfg, limiter: l}
	p := advertised.Policy()
	m.policy = header.Policy{Name: cfg.PolicyName, Quota: p.Quota, Window: p.WindowSeconds}
	if m.policyValue, err = header.FormatPolicies(m.policy); err != nil {
		return nil, exitcode.Usagef("policy name %q: %v", cfg.PolicyName, err)
	}
	return m, nil
}

// Config returns the configuration in effect (defaults filled in).
func (m *Middleware) Config() Config { return m.cfg }

// Limiter returns the limiter the middleware runs.
func (m *Middleware) Limiter() *limiter.Limiter { return m.limiter }

// Policy returns the policy advertised in RateLimit-Policy.
func (m *Middleware) Policy() header.Policy { return m.policy }

// Counts returns the decisions so far.
func (m *Middleware) Counts() Counts {
	return Counts{
		Allowed:    m.allowed.Load(),
		Limited:    m.limited.Load(),
		FailOpen:   m.failOpen.Load(),
		FailClosed: m.failClosed.Load(),
	}
}

// Identify returns whom r is counted against: the API key in the identity
// header if the request carries a non-empty one, else the client IP (see
// ClientIP for X-Forwarded-For).
func (m *Middleware) Identify(r *http.Request) Identity {
	if k := r.Header.Get(m.cfg.IdentityHeader); k != "" {
		return APIKey(k)
	}
	if m.cfg.Break == BreakTrustXFF {
		if a, ok := xffClient(r); ok {
			return Identity{Kind: KindIP, Value: a}
		}
	}
	if a, ok := ClientIP(r, m.cfg.TrustProxy); ok {
		return IP(a)
	}
	// No address at all (not host:port): such requests share one bucket.
	return Identity{Kind: KindIP, Value: "unknown"}
}

// KeyFor returns the Redis key of r's bucket.
func (m *Middleware) KeyFor(r *http.Request) string {
	return m.Identify(r).Key(m.cfg.KeyPrefix, m.limiter.Params().Algo)
}

// Wrap returns next behind the limiter. Every request gets RateLimit-Policy;
// a decided one gets RateLimit; an allowed one goes to next; a refused one
// gets 429, Retry-After, Cache-Control: no-store and a JSON body. When Redis
// fails or is late, FailOpen passes the request to next without RateLimit,
// FailClosed answers 503 with Retry-After.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := m.KeyFor(r)
		d, err := m.decide(r.Context(), key)
		h := w.Header()
		h.Set(header.NamePolicy, m.policyValue)
		if err != nil {
			if r.Context().Err() != nil {
				return // the client went away; there is no one to answer
			}
			if m.cfg.Fail == FailClosed {
				m.failClosed.Add(1)
				m.logFailure(err, key, "failing closed (503)")
				refuse(w, http.StatusServiceUnavailable, "limiter_unavailable", FailRetryAfter.Milliseconds())
				return
			}
			m.failOpen.Add(1)
			m.logFailure(err, key, "failing open (serving)")
			next.ServeHTTP(w, r)
			return
		}
		h.Set(header.NameRateLimit, m.limitValue(d))
		if d.Allowed {
			m.allowed.Add(1)
			next.ServeHTTP(w, r)
			return
		}
		m.limited.Add(1)
		retryMs := d.RetryMs
		if retryMs < 0 { // the cost can never pass; NewLimiter rules it out
			retryMs = m.policy.Window * 1000
		}
		status := http.StatusTooManyRequests
		if m.cfg.Break == BreakStatus503 {
			status = http.StatusServiceUnavailable
		}
		refuseAs(w, status, "rate_limited", retryMs, m.cfg.Break)
	})
}

// decide runs the limiter within the Redis deadline. go-redis bounds a
// read by its own ReadTimeout unless the client was built with
// ContextTimeoutEnabled, so the call runs in its own goroutine and the
// request stops waiting at the deadline either way; the abandoned call ends
// when the client gives up and its answer is dropped.
func (m *Middleware) decide(ctx context.Context, key string) (limiter.Decision, error) {
	if m.cfg.RedisTimeout == WaitForever {
		return m.cfg.Store.Allow(ctx, m.limiter, key)
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.RedisTimeout)
	defer cancel()
	type result struct {
		d   limiter.Decision
		err error
	}
	ch := make(chan result, 1)
	go func() {
		d, err := m.cfg.Store.Allow(ctx, m.limiter, key)
		ch <- result{d, err}
	}()
	select {
	case res := <-ch:
		return res.d, res.err
	case <-ctx.Done():
		return limiter.Decision{}, fmt.Errorf("limiter on %s: no answer within %s: %w", key, m.cfg.RedisTimeout, ctx.Err())
	}
}

// limitValue is the RateLimit field of a decision: remaining quota and the
// seconds (rounded up) until the full quota is back.
func (m *Middleware) limitValue(d limiter.Decision) string {
	switch m.cfg.Break {
	case BreakConstantReset:
		d.ResetMs = m.policy.Window * 1000
	case BreakOverAdmit:
		// the real bucket is twice the advertised one: scale what the
		// headers say to the advertised policy, so they look consistent
		d.Remaining /= 2
	}
	return limitField(m.policy.Name, d)
}

func limitField(name string, d limiter.Decision) string {
	l := header.Limit{Name: name, Remaining: max(d.Remaining, 0), Reset: ceilSeconds(d.ResetMs)}
	s, err := header.FormatLimits(l)
	if err != nil { // only for values out of range; the name was checked by NewMiddleware
		return header.Limit{Name: name, Remaining: 0, Reset: header.NoReset}.String()
	}
	return s
}

func ceilSeconds(ms int64) int64 {
	if ms <= 0 {
		return 0
	}
	return (ms + 999) / 1000
}

// refusal is the JSON body of a 429 or 503.
type refusal struct {
	Error        string `json:"error"`
	RetryAfterMs int64  `json:"retry_after_ms"`
}

func refuse(w http.ResponseWriter, status int, code string, retryMs int64) {
	refuseAs(w, status, code, retryMs, "")
}

// refuseAs refuses as a server broken with b does (no break: correctly).
func refuseAs(w http.ResponseWriter, status int, code string, retryMs int64, b Break) {
	h := w.Header()
	switch b {
	case BreakRetryAfterZero:
		h.Set(header.NameRetryAfter, "0")
	case BreakNoRetryAfter:
	default:
		h.Set(header.NameRetryAfter, header.FormatRetryAfterMs(retryMs))
	}
	if b == BreakCacheable429 {
		h.Set("Cache-Control", "public, max-age=60")
		h.Set("ETag", `"rate-limited"`)
	} else {
		h.Set("Cache-Control", "no-store")
	}
	h.Set("Content-Type", "application/json")
	body, _ := json.Marshal(refusal{Error: code, RetryAfterMs: retryMs})
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// logFailure counts a failed decision by reason and logs it: a NOPERM or a
// script's refusal once (with the ACL rule to add, or the key refused),
// since every later request would say the same; Redis trouble at most once
// a second.
func (m *Middleware) logFailure(err error, key, action string) {
	reason := m.cfg.Store.Reason(err)
	if errors.Is(err, context.DeadlineExceeded) {
		reason = limiter.FailTimeout
	}
	m.failures[reason].Add(1)
	if reason != limiter.FailNoPerm && reason != limiter.FailScript {
		m.logTrouble(err, action)
		return
	}
	m.logMu.Lock()
	defer m.logMu.Unlock()
	if m.loggedOnce[reason] {
		return
	}
	m.loggedOnce[reason] = true
	later := fmt.Sprintf("later ones are counted in ratelimit_limiter_failures_total{reason=%q}, not logged", reason)
	if reason == limiter.FailNoPerm {
		m.logf("serve: limiter refused by the Redis ACL, %s: %v; %s; %s", action, err, m.cfg.Store.Hint(m.limiter, err), later)
		return
	}
	m.logf("serve: limiter script refused bucket %s, %s; the key is left as it is: %v; %s", key, action, err, later)
}

// logf writes one line to the log with its control bytes escaped: an error
// may quote what a client or the server sent.
func (m *Middleware) logf(format string, args ...any) {
	_, _ = io.WriteString(m.cfg.Log, Escape(fmt.Sprintf(format, args...))+"\n")
}

// logTrouble writes at most one line per second about Redis failures.
func (m *Middleware) logTrouble(err error, action string) {
	m.logMu.Lock()
	defer m.logMu.Unlock()
	now := time.Now()
	if now.Sub(m.logLast) < time.Second {
		m.logMissed++
		return
	}
	more := ""
	if m.logMissed > 0 {
		more = fmt.Sprintf(" (and %d more failures since the last line)", m.logMissed)
	}
	m.logLast, m.logMissed = now, 0
	m.logf("serve: limiter unavailable, %s: %v%s", action, err, more)
}

func algoNames(as []limiter.Algo) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return out
}
