package load

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/header"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/model"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// Expectation is the limiter a run is judged against (--expect).
type Expectation struct {
	Spec   string         // as given, e.g. "token-bucket:burst=10,rate=5/s"
	Auto   bool           // read the policy from RateLimit-Policy
	Params limiter.Params // the model when !Auto
}

// ParseExpect reads --expect: "auto", "token-bucket:burst=10,rate=5/s"
// (capacity= is a synonym of burst=), "sliding-window:limit=100,window=60s",
// "fixed-window:limit=100,window=60s" or "gcra:rate=5/s,burst=10".
func ParseExpect(s string) (*Expectation, error) {
	spec := strings.TrimSpace(s)
	if strings.EqualFold(spec, "auto") {
		return &Expectation{Spec: "auto", Auto: true}, nil
	}
	name, args, _ := strings.Cut(spec, ":")
	algo, err := limiter.ParseAlgo(name)
	if err != nil {
		return nil, exitcode.Usagef("--expect %q: unknown model %q; use token-bucket:burst=N,rate=R, sliding-window:limit=N,window=D, fixed-window:limit=N,window=D, gcra:rate=R,burst=N or auto", s, name)
	}
	p := limiter.Params{Algo: algo, Cost: 1}
	seen := map[string]bool{}
	for kv := range strings.SplitSeq(args, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, exitcode.Usagef("--expect %q: %q is not key=value", s, kv)
		}
		if k == "capacity" {
			k = "burst"
		}
		if seen[k] {
			return nil, exitcode.Usagef("--expect %q: %s given twice", s, k)
		}
		seen[k] = true
		if err := setParam(&p, k, v); err != nil {
			return nil, exitcode.Usagef("--expect %q: %v", s, err)
		}
	}
	var need []string
	switch algo {
	case limiter.TokenBucket:
		need = []string{"burst", "rate"}
	case limiter.GCRA:
		need = []string{"rate", "burst"}
	default:
		need = []string{"limit", "window"}
	}
	for k := range seen {
		if !contains(need, k) {
			return nil, exitcode.Usagef("--expect %q: %s takes %s, not %s", s, algo, strings.Join(need, " and "), k)
		}
	}
	for _, k := range need {
		if !seen[k] {
			return nil, exitcode.Usagef("--expect %q: %s needs %s (e.g. %s)", s, algo, k, exampleSpec(algo))
		}
	}
	x := &Expectation{Spec: spec, Params: p}
	if err := x.validate(); err != nil {
		return nil, exitcode.Usagef("--expect %q: %v", s, err)
	}
	return x, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func exampleSpec(a limiter.Algo) string {
	switch a {
	case limiter.TokenBucket:
		return "token-bucket:burst=10,rate=5/s"
	case limiter.GCRA:
		return "gcra:rate=5/s,burst=10"
	default:
		return string(a) + ":limit=100,window=60s"
	}
}

func setParam(p *limiter.Params, k, v string) error {
	switch k {
	case "burst", "limit":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("%s=%s must be a positive integer", k, v)
		}
		if p.Algo == limiter.TokenBucket {
			p.Capacity = n
		} else if k == "burst" {
			p.Burst = n
		} else {
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
		return fmt.Errorf("unknown parameter %q", k)
	}
	return nil
}

func (x Expectation) validate() error {
	if x.Auto {
		return nil
	}
	if _, err := limiter.NewLimiter(x.Params); err != nil {
		var pe *limiter.ParamError
		if errors.As(err, &pe) {
			// name the parameters by the model's keys (token-bucket's
			// capacity is burst=), not by eval's flags
			return exitcode.Usagef("%s", pe.Named(func(p string) string {
				if p == "capacity" {
					p = "burst"
				}
				return p + "="
			}))
		}
		return exitcode.UsageError(err)
	}
	return nil
}

// newModel returns a fresh model of p (validated).
func newModel(p limiter.Params) model.Limiter {
	l, err := limiter.NewLimiter(p)
	if err != nil {
		return nil
	}
	return l.Model()
}

// admissionRate is the long-run admitted rate of p per identity, per second.
func admissionRate(p limiter.Params) float64 {
	switch p.Algo {
	case limiter.SlidingWindow, limiter.FixedWindow:
		return float64(p.Limit) / p.Window.Seconds()
	default:
		return p.Rate.PerSecond()
	}
}

// Describe names the model in words: "token bucket 10 + 5/s".
func Describe(p limiter.Params) string {
	switch p.Algo {
	case limiter.TokenBucket:
		return fmt.Sprintf("token bucket %d + %s", p.Capacity, p.Rate)
	case limiter.SlidingWindow:
		return fmt.Sprintf("sliding window %d per %s", p.Limit, shortDur(p.Window))
	case limiter.FixedWindow:
		return fmt.Sprintf("fixed window %d per %s", p.Limit, shortDur(p.Window))
	default:
		return fmt.Sprintf("gcra %s burst %d", p.Rate, p.Burst)
	}
}

func shortDur(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// Arrival is one sent request as the verdict sees it.
type Arrival struct {
	Identity int
	DueNs    int64 // offset of the due time from the start
	SendNs   int64 // offset of the send from the start
	DoneNs   int64 // offset of the end of the response (or error)
	Status   int   // 0: transport error, outcome unknown
}

// JudgeInput is what Judge needs from a run.
type JudgeInput struct {
	Arrivals   []Arrival // sorted by SendNs
	Identities int       // >= 1
	StartMs    int64     // wall clock of the start, ms (the replay's time base)
	JitterMs   float64   // p99 latency from send, ms
	Policy     string    // the RateLimit-Policy value seen (for auto)
}

// Judged is the verdict on the admitted count.
type Judged struct {
	Model       string   `json:"model"`       // the --expect value
	Description string   `json:"description"` // the model in words
	Expected    int64    `json:"expected"`
	Observed    int64    `json:"observed"` // 2xx and 3xx responses
	Of          int64    `json:"of"`       // requests judged (sent and completed)
	Tolerance   int64    `json:"tolerance"`
	Tol         TolParts `json:"tolerance_parts"`
	OverMs      float64  `json:"over_ms"` // first to last arrival
	// ExpectedPerSecond is Expected spread over the seconds of the run
	// (by the second of the send, as the timeline): the admissions the
	// verdict's own replay expects in each.
	ExpectedPerSecond []int64   `json:"expected_per_second,omitempty"`
	Pass              bool      `json:"pass"`
	Readings          []Reading `json:"readings,omitempty"` // auto: each reading of the policy
	Fits              string    `json:"fits,omitempty"`     // auto: the reading that fits best
	Note              string    `json:"note,omitempty"`

	params *limiter.Params // the model judged against (the best reading under auto)
}

// TolParts explain the tolerance: Tolerance = max(Jitter, Shift) + Rounding + Unknown.
type TolParts struct {
	// Jitter is ceil(admission rate x identities x p99 latency): how many
	// admissions the spread of network time can move across a refill or a
	// window edge.
	Jitter int64 `json:"jitter"`
	// Shift is |expected over response-end times - expected over send
	// times|: the server decided somewhere between the two.
	Shift int64 `json:"shift"`
	// Rounding is 1 for the server's and the replay's millisecond clocks.
	Rounding int64 `json:"rounding"`
	// Unknown counts requests that failed without a status: each may or
	// may not have consumed quota.
	Unknown int64 `json:"unknown"`
}

// Reading is one interpretation of RateLimit-Policy under --expect auto.
type Reading struct {
	Model       string `json:"model"`
	Description string `json:"description"`
	Expected    int64  `json:"expected"`
	Tolerance   int64  `json:"tolerance"`
	Fits        bool   `json:"fits"`
}

// Line is the report line: "allowed 159 of 600; expected 159 (token bucket
// 10 + 5/s over 29.95 s) ±2: pass".
func (j Judged) Line() string {
	verdict := "fail"
	if j.Pass {
		verdict = "pass"
	}
	if j.Description == "" {
		return fmt.Sprintf("allowed %d of %d; %s: %s", j.Observed, j.Of, j.Note, verdict)
	}
	return fmt.Sprintf("allowed %d of %d; expected %d (%s over %s s) ±%d: %s",
		j.Observed, j.Of, j.Expected, j.Description, strconv.FormatFloat(j.OverMs/1000, 'f', 2, 64), j.Tolerance, verdict)
}

// Judge replays the arrivals through the model, one model per identity,
// and compares the admitted count with what the target allowed. It is a
// pure function of its input.
func Judge(x Expectation, in JudgeInput) Judged {
	j := Judged{Model: x.Spec}
	var known []Arrival
	for _, a := range in.Arrivals {
		if a.Status == 0 {
			j.Tol.Unknown++
			continue
		}
		known = append(known, a)
		if a.Status >= 200 && a.Status < 400 {
			j.Observed++
		}
	}
	j.Of = int64(len(in.Arrivals))
	if n := len(in.Arrivals); n > 0 {
		j.OverMs = float64((in.Arrivals[n-1].SendNs-in.Arrivals[0].SendNs)/1e3) / 1e3
	}
	if !x.Auto {
		e, tol, parts, perSec := expect(x.Params, known, in)
		j.Description = Describe(x.Params)
		j.ExpectedPerSecond = perSec
		if in.Identities > 1 {
			j.Description += fmt.Sprintf(" x %d identities", in.Identities)
		}
		j.Expected, j.Tolerance, j.Tol = e, tol, parts
		j.params = &x.Params
		j.Pass = abs(j.Observed-e) <= tol
		return j
	}

	ps, err := header.ParsePolicies([]string{in.Policy})
	if in.Policy == "" || err != nil || len(ps) == 0 || ps[0].Quota <= 0 || ps[0].Window <= 0 {
		j.Note = "no RateLimit-Policy with q > 0 and w > 0 to read; pass --expect MODEL:params"
		return j
	}
	q, w := ps[0].Quota, ps[0].Window
	window := time.Duration(w) * time.Second
	refill := rate.Rate{Count: float64(q), Per: window}
	if q%w == 0 {
		refill = rate.Rate{Count: float64(q / w), Per: time.Second}
	}
	readings := []limiter.Params{
		{Algo: limiter.TokenBucket, Capacity: q, Rate: refill, Cost: 1},
		{Algo: limiter.SlidingWindow, Limit: q, Window: window, Cost: 1},
		{Algo: limiter.FixedWindow, Limit: q, Window: window, Cost: 1},
	}
	best := -1
	var bestDiff int64
	for i, p := range readings {
		if _, err := limiter.NewLimiter(p); err != nil {
			continue
		}
		e, tol, parts, perSec := expect(p, known, in)
		r := Reading{Model: specOf(p), Description: Describe(p), Expected: e, Tolerance: tol}
		d := abs(j.Observed - e)
		r.Fits = d <= tol
		j.Readings = append(j.Readings, r)
		if best < 0 || d < bestDiff {
			best, bestDiff = i, d
			j.params = &readings[i]
			j.Expected, j.Tolerance, j.Tol, j.ExpectedPerSecond = e, tol, parts, perSec
			j.Description = fmt.Sprintf("RateLimit-Policy q=%d;w=%d read as %s", q, w, r.Description)
		}
	}
	var fits []string
	for _, r := range j.Readings {
		if r.Fits {
			fits = append(fits, r.Model)
		}
	}
	if best >= 0 && len(fits) > 0 {
		j.Pass = true
		j.Fits = specOf(readings[best])
		if len(fits) > 1 {
			j.Note = "more than one reading fits: " + strings.Join(fits, ", ")
		}
	} else {
		j.Note = "no reading of the policy fits the observation"
	}
	return j
}

func specOf(p limiter.Params) string {
	switch p.Algo {
	case limiter.TokenBucket:
		return fmt.Sprintf("token-bucket:burst=%d,rate=%s", p.Capacity, p.Rate)
	case limiter.GCRA:
		return fmt.Sprintf("gcra:rate=%s,burst=%d", p.Rate, p.Burst)
	default:
		return fmt.Sprintf("%s:limit=%d,window=%s", p.Algo, p.Limit, shortDur(p.Window))
	}
}

// expect computes the expected admitted count over the arrivals' send
// times, the tolerance (see TolParts) and the expected admissions in each
// second of the sends.
func expect(p limiter.Params, known []Arrival, in JudgeInput) (int64, int64, TolParts, []int64) {
	bySend, perSec := replay(p, known, in, func(a Arrival) int64 { return a.SendNs })
	byDone, _ := replay(p, known, in, func(a Arrival) int64 { return a.DoneNs })
	parts := TolParts{Rounding: 1}
	parts.Jitter = int64(math.Ceil(admissionRate(p) * float64(in.Identities) * in.JitterMs / 1000))
	parts.Shift = abs(byDone - bySend)
	parts.Unknown = int64(len(in.Arrivals) - len(known))
	tol := max(parts.Jitter, parts.Shift) + parts.Rounding + parts.Unknown
	return bySend, tol, parts, perSec
}

// replay runs one model per identity over the arrivals at time at(a) and
// counts the admitted, in all and by the second of at(a) from the start
// (seconds up to the last arrival's, empty ones included).
func replay(p limiter.Params, arrivals []Arrival, in JudgeInput, at func(Arrival) int64) (int64, []int64) {
	per := make([][]int64, max(in.Identities, 1)) // offsets in ns
	last := int64(-1)
	for _, a := range arrivals {
		k := a.Identity % len(per)
		per[k] = append(per[k], at(a))
		last = max(last, at(a)/1e9)
	}
	perSec := make([]int64, last+1)
	var admitted int64
	for _, offs := range per {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		m := newModel(p)
		if m == nil {
			return 0, perSec
		}
		for _, off := range offs {
			if m.Allow(in.StartMs+off/1e6, 1).Allowed {
				admitted++
				if off >= 0 {
					perSec[off/1e9]++
				}
			}
		}
	}
	return admitted, perSec
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
