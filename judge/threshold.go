package judge

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/words"
)

// A Threshold is one --threshold, k6 style: a metric, an operator and a
// bound, checked when the run ends ("p99<50ms", "dropped==0",
// "failed<1%"). Latency metrics are taken from the due time
// (latency_from_due_ms: no coordinated omission).
type Threshold struct {
	Metric string  // p50 p90 p95 p99 min mean max dropped failed allowed refused rps
	Op     string  // < <= > >= == !=
	Value  float64 // ms for latency, a count, a percentage (Pct) or responses/s
	Pct    bool    // Value is a percentage of the metric's whole
	Unit   string  // as written, for display: "ms", "s", "us", "%", ""
}

// Threshold metric classes.
const (
	metricLatency = iota
	metricCount
	metricRate
)

var thresholdMetrics = map[string]int{
	"p50": metricLatency, "p90": metricLatency, "p95": metricLatency, "p99": metricLatency,
	"min": metricLatency, "mean": metricLatency, "max": metricLatency,
	"dropped": metricCount, "failed": metricCount, "allowed": metricCount, "refused": metricCount,
	"rps": metricRate,
}

// thresholdAliases are other names users already know for a metric.
var thresholdAliases = map[string]string{
	"p(50)": "p50", "p(90)": "p90", "p(95)": "p95", "p(99)": "p99", "med": "p50", "avg": "mean",
	"rate_limited": "refused", "limited": "refused",
}

// maxThresholdValue bounds a threshold's number: far beyond any count or
// latency a run can produce, small enough to stay exact in a float64.
const maxThresholdValue = 1e15

// thresholdHelp is what every parse error ends with.
const thresholdHelp = "want METRIC OP VALUE such as p99<50ms, dropped==0 or failed<1% (metrics p50 p90 p95 p99 min mean max dropped failed allowed refused rps; operators < <= > >= == !=)"

// ParseThreshold reads one --threshold. Errors are exit 2.
func ParseThreshold(s string) (Threshold, error) {
	bad := func(why string) (Threshold, error) {
		return Threshold{}, exitcode.Usagef("--threshold %q: %s; %s", words.Printable(s), why, thresholdHelp)
	}
	t := strings.TrimSpace(s)
	i := strings.IndexAny(t, "<>=!")
	if i < 0 {
		return bad("no operator")
	}
	metric := strings.ToLower(strings.TrimSpace(t[:i]))
	rest := t[i:]
	var th Threshold
	for _, op := range []string{"<=", ">=", "==", "!=", "<", ">"} {
		if strings.HasPrefix(rest, op) {
			th.Op, rest = op, rest[len(op):]
			break
		}
	}
	if th.Op == "" {
		return bad("no operator")
	}
	if a, ok := thresholdAliases[metric]; ok {
		metric = a
	}
	class, ok := thresholdMetrics[metric]
	if !ok {
		if metric == "" {
			return bad("no metric")
		}
		return bad(fmt.Sprintf("unknown metric %q", words.Printable(metric)))
	}
	th.Metric = metric
	rest = strings.TrimSpace(rest)
	j := 0
	for j < len(rest) && (rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
		j++
	}
	num, unit := rest[:j], strings.TrimSpace(rest[j:])
	if num == "" || strings.Count(num, ".") > 1 || num == "." {
		return bad("no number")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v > maxThresholdValue {
		return bad("the number is out of range")
	}
	th.Unit = unit
	switch class {
	case metricLatency:
		switch unit {
		case "", "ms":
		case "s":
			v *= 1000
		case "us", "µs":
			v /= 1000
		case "%":
			return bad("a latency takes a time unit (ms, s, us), not %")
		default:
			return bad(fmt.Sprintf("unknown unit %q for a latency (ms, s or us)", words.Printable(unit)))
		}
	case metricCount:
		switch unit {
		case "":
			if v != math.Trunc(v) {
				return bad("a count is a whole number")
			}
		case "%":
			if v > 100 {
				return bad("a percentage is at most 100%")
			}
			th.Pct = true
		default:
			return bad(fmt.Sprintf("unknown unit %q for a count (none, or %%)", words.Printable(unit)))
		}
	case metricRate:
		if unit != "" && unit != "/s" {
			return bad(fmt.Sprintf("unknown unit %q for rps (none, or /s)", words.Printable(unit)))
		}
	}
	th.Value = v
	return th, nil
}

// String is the threshold in its canonical form: "p99<50ms", "failed<1%".
func (t Threshold) String() string {
	return t.Metric + t.Op + t.bound()
}

// bound is the value as written, with its unit.
func (t Threshold) bound() string {
	v := t.Value
	switch {
	case t.Pct:
		return num(v) + "%"
	case thresholdMetrics[t.Metric] == metricLatency:
		switch t.Unit {
		case "s":
			return num(v/1000) + "s"
		case "us", "µs":
			return num(v*1000) + "us"
		}
		return num(v) + "ms"
	case t.Metric == "rps":
		return num(v) + "/s"
	}
	return num(v)
}

// num prints f with at most three decimals and no trailing zeros.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
}

// holds reports whether actual op value.
func holds(actual float64, op string, value float64) bool {
	switch op {
	case "<":
		return actual < value
	case "<=":
		return actual <= value
	case ">":
		return actual > value
	case ">=":
		return actual >= value
	case "==":
		return actual == value
	case "!=":
		return actual != value
	}
	return false
}

// Metrics are what thresholds are judged on: a finished run's counts and
// its latency from the due time (ms).
type Metrics struct {
	Planned, Dropped            int64
	Completed, Failed           int64
	Responses, Allowed, Refused int64
	ResponsesPerS               float64
	LatencyCount                int64
	P50, P90, P95, P99          float64
	Min, Mean, Max              float64
}

// actual returns the threshold's metric in m, in the unit of Value, and
// how to show it; ok is false when the metric has no value (a latency
// without samples).
func (t Threshold) actual(m Metrics) (v float64, shown string, ok bool) {
	ratio := func(n, of int64, what string) (float64, string, bool) {
		if !t.Pct {
			return float64(n), strconv.FormatInt(n, 10), true
		}
		if of == 0 {
			return 0, fmt.Sprintf("0%% (no %s)", what), true
		}
		p := 100 * float64(n) / float64(of)
		return p, fmt.Sprintf("%s%% (%d of %d %s)", strconv.FormatFloat(p, 'f', 2, 64), n, of, what), true
	}
	switch t.Metric {
	case "dropped":
		return ratio(m.Dropped, m.Planned, "planned")
	case "failed":
		return ratio(m.Failed, m.Completed, "completed")
	case "allowed":
		return ratio(m.Allowed, m.Responses, "responses")
	case "refused":
		return ratio(m.Refused, m.Responses, "responses")
	case "rps":
		return m.ResponsesPerS, num(m.ResponsesPerS) + "/s", true
	}
	if m.LatencyCount == 0 {
		return 0, "no completed request", false
	}
	ms := map[string]float64{"p50": m.P50, "p90": m.P90, "p95": m.P95, "p99": m.P99, "min": m.Min, "mean": m.Mean, "max": m.Max}[t.Metric]
	t.Value = ms
	return ms, t.bound(), true
}

// ThresholdCheck is one threshold's verdict: --max-failed, or a --threshold.
type ThresholdCheck struct {
	ID      string `json:"id"`   // the threshold in canonical form: "p99<50ms", "failed<=1%"
	Name    string `json:"name"` // the metric: "failed", "p99", ...
	Op      string `json:"op"`   // < <= > >= == !=
	Limit   string `json:"limit"`
	Actual  string `json:"actual"`
	Pass    bool   `json:"pass"`
	Message string `json:"message"`
	Aborted bool   `json:"aborted,omitempty"` // this threshold stopped the run (--abort-on-fail)
}

// Expr is the check as an expression: "p99<50ms". Documents written
// before the op field existed read as "<=".
func (c ThresholdCheck) Expr() string {
	if c.ID != "" {
		return c.ID
	}
	op := c.Op
	if op == "" {
		op = "<="
	}
	return c.Name + op + c.Limit
}

// MaxFailed is --max-failed as a threshold: failed <= share (0..1) of the
// completed requests.
func MaxFailed(share float64) Threshold {
	return Threshold{Metric: "failed", Op: "<=", Value: share * 100, Pct: true, Unit: "%"}
}

// Check judges t on a finished run's metrics.
func (t Threshold) Check(m Metrics) ThresholdCheck {
	v, shown, ok := t.actual(m)
	c := ThresholdCheck{ID: t.String(), Name: t.Metric, Op: t.Op, Limit: t.bound(), Actual: shown, Pass: ok && holds(v, t.Op, t.Value)}
	if c.Pass {
		c.Message = fmt.Sprintf("%s: %s", c.ID, shown)
	} else {
		c.Message = fmt.Sprintf("threshold %s: %s", c.ID, shown)
	}
	return c
}

// Progress is what an abort watch reads while the run goes: counts only
// grow (the min latency only falls).
type Progress struct {
	Planned                           int64
	Dropped, Failed, Allowed, Limited int64
	MaxDueUs, MinDueUs                int64 // -1: no sample yet
}

// Lost reports, while the run goes, whether t can no longer be met
// whatever the rest of the run does, and why. Counts only grow and their
// final denominators (completed, responses) are at most planned, so a
// count already past its bound, or already past its share of planned,
// stays past it. Percentiles, the mean, rps and lower bounds on counts are
// only known at the end and never abort.
func (t Threshold) Lost(w Progress) (bool, string) {
	if t.Op != "<" && t.Op != "<=" && t.Op != "==" && t.Metric != "min" {
		return false, ""
	}
	over := func(n int64, what string) (bool, string) {
		bound, of := t.Value, t.bound()
		if t.Pct {
			if w.Planned == 0 {
				return false, ""
			}
			bound = t.Value / 100 * float64(w.Planned)
			of = fmt.Sprintf("%s of %d planned", t.bound(), w.Planned)
		}
		past := float64(n) > bound || t.Op == "<" && float64(n) >= bound
		if !past {
			return false, ""
		}
		return true, fmt.Sprintf("%d %s, past %s", n, what, of)
	}
	switch t.Metric {
	case "dropped":
		return over(w.Dropped, "dropped")
	case "failed":
		return over(w.Failed, "failed")
	case "allowed":
		return over(w.Allowed, "allowed")
	case "refused":
		return over(w.Limited, "refused")
	case "max":
		if w.MaxDueUs < 0 {
			return false, ""
		}
		ms := float64(w.MaxDueUs) / 1000
		if !holds(ms, t.Op, t.Value) && (t.Op != "==" || ms > t.Value) {
			return true, fmt.Sprintf("a request took %sms from its due time", num(ms))
		}
	case "min":
		if w.MinDueUs < 0 {
			return false, ""
		}
		ms := float64(w.MinDueUs) / 1000
		if (t.Op == ">" || t.Op == ">=" || t.Op == "==") && !holds(ms, t.Op, t.Value) && (t.Op != "==" || ms < t.Value) {
			return true, fmt.Sprintf("a request took only %sms from its due time", num(ms))
		}
	}
	return false, ""
}
