package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ratelimit-dev/ratelimit/doc"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/eval/evaldoc"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/race/racedoc"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// A document that parses may still be unfit to render: a key given twice
// (JSON decoders keep the last one, so {"kind":"race","kind":"load"} reads
// as an empty load run), a negative count or second, percentiles out of
// order, a slot out of range. Decode checks all of that before any
// renderer sees the document, so renderers may index by document data and
// divide by counts without checking again; each check names the field.

// fieldError is a document that decodes but holds a value it must not. It
// wraps ErrDocument so callers treat it as any other unreadable document.
type fieldError struct{ msg string }

func (e *fieldError) Error() string        { return e.msg }
func (e *fieldError) Is(target error) bool { return target == ErrDocument }

func fieldf(format string, args ...any) error {
	return &fieldError{msg: fmt.Sprintf(format, args...)}
}

// Bounds of the values a renderer may draw. A real run stays far below:
// a week of seconds, a million years of milliseconds, a thousand
// thresholds.
const (
	maxFloat      = 1e15
	maxSeconds    = 7 * 24 * 3600
	maxThresholds = 1_000
)

// secondsText writes a document's seconds for an error: 3s, 1h0m0s.
func secondsText(s float64) string {
	if s > 1e9 || s != s {
		return fmt.Sprintf("%gs", s)
	}
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

// jsonKey names an object key in a path: as is when it is a plain word,
// else quoted.
func jsonKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// foldKey maps every rune of k to the smallest rune of its case-folding
// orbit, so two keys that encoding/json would match to the same field
// ("kind", "Kind", "KIND") fold to the same string.
func foldKey(k string) string {
	ascii := true
	for i := 0; i < len(k); i++ {
		if k[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(k)
	}
	var b strings.Builder
	for _, r := range k {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// typeError turns encoding/json's type errors into the one-line form of
// the field checks: `rate_per_s is a string, want a number`.
func typeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		want := te.Type.String()
		switch te.Type.Kind().String() {
		case "int", "int64", "int32", "uint", "uint64":
			want = "an integer"
		case "float64", "float32":
			want = "a number"
		case "string":
			want = "a string"
		case "bool":
			want = "true or false"
		case "slice", "array":
			want = "an array"
		case "map", "struct", "ptr":
			want = "an object"
		}
		got := te.Value
		switch got {
		case "string", "number":
			got = "a " + got
		case "array", "object":
			got = "an " + got
		case "bool":
			got = "true or false"
		default:
			if strings.HasPrefix(got, "number ") {
				got = "a " + got
			}
		}
		return fieldf("%s is %s, want %s", Printable(te.Field), Printable(got), want)
	}
	return nil
}

type number interface {
	~int | ~int64 | ~float64
}

// nonNeg fails when v < 0 or, for floats, above maxFloat.
func nonNeg[T number](path string, v T) error {
	if v < 0 {
		return fieldf("%s is %v, want >= 0", path, v)
	}
	if float64(v) > maxFloat {
		return fieldf("%s is %v, want at most %g", path, v, maxFloat)
	}
	return nil
}

// atLeast fails when v < lo.
func atLeast[T number](path string, v, lo T) error {
	if v < lo {
		return fieldf("%s is %v, want >= %v", path, v, lo)
	}
	return nil
}

func oneOf(path, v string, allowed ...string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	return fieldf("%s is %s, want one of %s", path, Printable(strconv.Quote(v)), strings.Join(allowed, ", "))
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

var evalAlgos = []string{"script", string(limiter.TokenBucket), string(limiter.SlidingWindow), string(limiter.FixedWindow), string(limiter.GCRA)}

func validateParams(path string, p evaldoc.ParamsDoc) error {
	return firstErr(
		nonNeg(path+".capacity", p.Capacity), nonNeg(path+".rate_per_s", p.RatePerS), nonNeg(path+".cost", p.Cost),
		nonNeg(path+".limit", p.Limit), nonNeg(path+".window_ms", p.WindowMs), nonNeg(path+".burst", p.Burst),
		nonNeg(path+".policy_quota", p.PolicyQuota), nonNeg(path+".policy_window_ms", p.PolicyWindowMs),
	)
}

func validateEval(res evaldoc.Result) error {
	if err := firstErr(
		oneOf("algo", res.Algo, evalAlgos...),
		oneOf("reply_shape", res.ReplyShape, "limiter", "raw"),
		nonNeg("summary.allowed", res.Summary.Allowed), nonNeg("summary.refused", res.Summary.Refused),
	); err != nil {
		return err
	}
	if res.Algo != "script" {
		if res.Params == nil {
			return fieldf("params is missing, want the %s parameters", res.Algo)
		}
		if res.ReplyShape != "limiter" {
			return fieldf("reply_shape is %q, want \"limiter\" for algo %s", res.ReplyShape, res.Algo)
		}
	}
	if res.Params != nil {
		if err := validateParams("params", *res.Params); err != nil {
			return err
		}
	}
	for i, c := range res.Calls {
		if res.ReplyShape == "limiter" && (c.Allowed == nil || c.Remaining == nil && res.Reply == "") {
			return fieldf("calls[%d] has no allowed and remaining, want both for reply_shape \"limiter\"", i)
		}
		if err := firstErr(
			nonNeg(fmt.Sprintf("calls[%d].n", i), c.N),
			atLeast(fmt.Sprintf("calls[%d].ttl_ms", i), c.TTLMs, -2),
			nonNeg(fmt.Sprintf("calls[%d].latency_ms", i), c.LatencyMs),
		); err != nil {
			return err
		}
	}
	return nil
}

func validateSimulate(res evaldoc.SimResult) error {
	if err := firstErr(
		oneOf("algo", res.Algo, evalAlgos[1:]...),
		validateParams("params", res.Params),
		nonNeg("duration_ms", res.ForMs), nonNeg("arrivals", res.Arrivals), nonNeg("allowed", res.Admitted),
		nonNeg("refused", res.Refused), nonNeg("model_allowed", res.Model), nonNeg("wall_ms", res.WallMs),
		nonNeg("arrival_rate_per_s", res.RatePerS),
		nonNeg("pipelines", res.Pipelines), atLeast("first_refused_ms", res.FirstRefMs, -1),
	); err != nil {
		return err
	}
	if res.Admitted > res.Arrivals {
		return fieldf("allowed is %d, want at most arrivals (%d)", res.Admitted, res.Arrivals)
	}
	for i, n := range res.PerSecond {
		if n < 0 {
			return fieldf("allowed_per_second[%d] is %d, want >= 0", i, n)
		}
	}
	return nil
}

func validateRace(res racedoc.Result) error {
	if err := firstErr(
		oneOf("verdict", res.Verdict, "pass", "fail"),
		nonNeg("concurrency", res.Concurrency), nonNeg("limit", res.Limit), nonNeg("trials", res.Trials),
		nonNeg("watch_attempts", res.WatchAttempts),
	); err != nil {
		return err
	}
	for i, s := range res.Strategies {
		p := fmt.Sprintf("strategies[%d]", i)
		for _, a := range []struct {
			name string
			xs   []int
		}{{"allowed", s.Allowed}, {"over_limit", s.OverLimit}, {"retries", s.Retries}, {"give_ups", s.GiveUps}, {"errors", s.Errors}} {
			for t, x := range a.xs {
				if x < 0 {
					return fieldf("%s.%s[%d] is %d, want >= 0", p, a.name, t, x)
				}
			}
		}
		for _, a := range []struct {
			name string
			xs   []float64
		}{{"trial_p50_ms", s.TrialP50Ms}, {"trial_p99_ms", s.TrialP99Ms}, {"wall_ms", s.WallMs}} {
			for t, x := range a.xs {
				if err := nonNeg(fmt.Sprintf("%s.%s[%d]", p, a.name, t), x); err != nil {
					return err
				}
			}
		}
		for t := range min(len(s.TrialP50Ms), len(s.TrialP99Ms)) {
			if s.TrialP50Ms[t] > s.TrialP99Ms[t] {
				return fieldf("%s.trial_p50_ms[%d] is %v, more than trial_p99_ms[%d] (%v); want percentiles in order", p, t, s.TrialP50Ms[t], t, s.TrialP99Ms[t])
			}
		}
		if err := firstErr(
			nonNeg(p+".p50_ms", s.P50Ms), nonNeg(p+".p99_ms", s.P99Ms),
			nonNeg(p+".allowed_min", s.AllowedMin), nonNeg(p+".allowed_median", s.AllowedMedian), nonNeg(p+".allowed_max", s.AllowedMax),
		); err != nil {
			return err
		}
		if s.P50Ms > s.P99Ms {
			return fieldf("%s.p50_ms is %v, more than p99_ms (%v); want percentiles in order", p, s.P50Ms, s.P99Ms)
		}
		if float64(s.AllowedMin) > s.AllowedMedian || s.AllowedMedian > float64(s.AllowedMax) {
			return fieldf("%s: allowed_min %d, allowed_median %v, allowed_max %d are out of order", p, s.AllowedMin, s.AllowedMedian, s.AllowedMax)
		}
	}
	return nil
}

func validateLatency(path string, l tally.Latency) error {
	if err := firstErr(
		nonNeg(path+".count", l.Count), nonNeg(path+".min", l.Min), nonNeg(path+".mean", l.Mean), nonNeg(path+".p50", l.P50),
		nonNeg(path+".p90", l.P90), nonNeg(path+".p99", l.P99), nonNeg(path+".max", l.Max),
	); err != nil {
		return err
	}
	if l.Count == 0 {
		return nil
	}
	names := []string{"min", "p50", "p90", "p99", "max"}
	vals := []float64{l.Min, l.P50, l.P90, l.P99, l.Max}
	for k := 1; k < len(vals); k++ {
		if vals[k] < vals[k-1] {
			return fieldf("%s.%s is %v, less than %s (%v); want percentiles in order", path, names[k], vals[k], names[k-1], vals[k-1])
		}
	}
	return nil
}

func validateCounts(path string, m map[string]int64) error {
	for _, k := range loadSortedKeys(m) {
		if m[k] < 0 {
			return fieldf("%s[%s] is %d, want >= 0", path, Printable(strconv.Quote(k)), m[k])
		}
	}
	return nil
}

func validateLoad(res *tally.Result) error {
	if err := firstErr(
		oneOf("verdict", res.Verdict, "pass", "fail", "interrupted", doc.VerdictUndecided),
		nonNeg("arrival_rate_per_s", res.RatePerS), nonNeg("duration_ms", res.DurationS*1000), nonNeg("elapsed_ms", res.ElapsedS*1000),
		nonNeg("timeout_ms", res.TimeoutS*1000), nonNeg("identities", res.Identities),
		nonNeg("planned", res.Planned), nonNeg("sent", res.Sent), nonNeg("dropped", res.Dropped),
		nonNeg("dropped_no_vu", res.DroppedNoVU), nonNeg("dropped_late", res.DroppedLate), nonNeg("not_started", res.NotStarted),
		nonNeg("completed", res.Completed), nonNeg("responses", res.Responses), nonNeg("achieved_rate_per_s", res.AchievedRate),
		nonNeg("allowed", res.Allowed), nonNeg("refused", res.RateLimited), nonNeg("refused_pct", res.RateLimitedPct),
		nonNeg("failed", res.Failed), nonNeg("failed_pct", res.FailedPct),
		validateCounts("status", res.Status), validateCounts("errors", res.Errors),
		validateLatency("latency_ms", res.Latency), validateLatency("latency_from_due_ms", res.LatencyFromDue),
		validateLatency("lateness_ms", res.Lateness),
		nonNeg("vus.pre_allocated", res.VUs.PreAllocated), nonNeg("vus.max", res.VUs.Max), nonNeg("vus.peak", res.VUs.Peak),
		nonNeg("vus.added", res.VUs.Added), nonNeg("vus.max_busy", res.VUs.MaxBusy),
	); err != nil {
		return err
	}
	if res.RateLimitedPct > 100 {
		return fieldf("refused_pct is %v, want at most 100", res.RateLimitedPct)
	}
	if res.FailedPct > 100 {
		return fieldf("failed_pct is %v, want at most 100", res.FailedPct)
	}
	if len(res.Timeline) > maxSeconds {
		return fieldf("timeline has %d seconds, want at most %d", len(res.Timeline), maxSeconds)
	}
	// issue 26: every array is bounded by the run's own plan, so a forged
	// document cannot make a renderer or a merge fill years of seconds
	span := res.SpanSeconds()
	if float64(len(res.Timeline)) > span {
		return fieldf("timeline has %d seconds, more than a run of %s (timeout %s) can fill (%g): the document is inconsistent",
			len(res.Timeline), secondsText(res.DurationS), secondsText(res.TimeoutS), span)
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"status", len(res.Status)}, {"errors", len(res.Errors)}} {
		if c.n > tally.MaxKeys {
			return fieldf("%s has %d entries, want at most %d", c.name, c.n, tally.MaxKeys)
		}
	}
	if len(res.Notes) > tally.MaxNotes {
		return fieldf("notes has %d entries, want at most %d", len(res.Notes), tally.MaxNotes)
	}
	if len(res.Generator.Reasons) > tally.MaxReasons {
		return fieldf("generator.reasons has %d entries, want at most %d", len(res.Generator.Reasons), tally.MaxReasons)
	}
	if len(res.Thresholds) > maxThresholds {
		return fieldf("thresholds has %d entries, want at most %d", len(res.Thresholds), maxThresholds)
	}
	for i, s := range res.Timeline {
		if s.Second < 0 {
			return fieldf("timeline[%d].second is %d, want >= 0", i, s.Second)
		}
		if s.Second != i {
			return fieldf("timeline[%d].second is %d, want %d (the timeline has every second of the run, in order)", i, s.Second, i)
		}
		if err := validateCounts(fmt.Sprintf("timeline[%d].status", i), s.Status); err != nil {
			return err
		}
		if len(s.Status) > tally.MaxKeys {
			return fieldf("timeline[%d].status has %d entries, want at most %d", i, len(s.Status), tally.MaxKeys)
		}
	}
	for _, hh := range []struct {
		name string
		h    *tally.Histogram
	}{{"latency_histogram", res.LatencyHistogram}, {"latency_from_due_histogram", res.LatencyFromDueHistogram}} {
		name, h := hh.name, hh.h
		if h == nil {
			continue
		}
		for i, bk := range h.Buckets {
			if err := firstErr(nonNeg(fmt.Sprintf("%s.buckets[%d].le_ms", name, i), bk.LeMs), nonNeg(fmt.Sprintf("%s.buckets[%d].count", name, i), bk.Count)); err != nil {
				return err
			}
			if i > 0 && bk.LeMs <= h.Buckets[i-1].LeMs {
				return fieldf("%s.buckets[%d].le_ms is %v, not above the bucket before (%v); want bounds in increasing order", name, i, bk.LeMs, h.Buckets[i-1].LeMs)
			}
		}
	}
	h := res.Headers
	if err := firstErr(
		nonNeg("headers.responses", h.Responses), nonNeg("headers.storable_429", h.Storable429), nonNeg("headers.legacy", h.Legacy),
	); err != nil {
		return err
	}
	for _, ff := range []struct {
		name string
		f    tally.FieldStat
	}{{"ratelimit", h.RateLimit}, {"ratelimit_policy", h.Policy}, {"retry_after", h.RetryAfter}} {
		p, f := "headers."+ff.name, ff.f
		if err := firstErr(nonNeg(p+".checked", f.Checked), nonNeg(p+".present", f.Present), nonNeg(p+".valid", f.Valid)); err != nil {
			return err
		}
		if f.Valid > f.Present {
			return fieldf("%s.valid is %d, more than present (%d)", p, f.Valid, f.Present)
		}
	}
	if j := res.Expect; j != nil {
		if err := firstErr(
			nonNeg("expect.expected", j.Expected), nonNeg("expect.observed", j.Observed), nonNeg("expect.of", j.Of),
			nonNeg("expect.tolerance", j.Tolerance), nonNeg("expect.over_ms", j.OverMs),
			nonNeg("expect.tolerance_parts.jitter", j.Tol.Jitter), nonNeg("expect.tolerance_parts.shift", j.Tol.Shift),
			nonNeg("expect.tolerance_parts.rounding", j.Tol.Rounding), nonNeg("expect.tolerance_parts.unknown", j.Tol.Unknown),
		); err != nil {
			return err
		}
		if len(j.ExpectedPerSecond) > maxSeconds || float64(len(j.ExpectedPerSecond)) > span {
			return fieldf("expect.expected_per_second has %d seconds, more than a run of %s (timeout %s) can fill (%g): the document is inconsistent",
				len(j.ExpectedPerSecond), secondsText(res.DurationS), secondsText(res.TimeoutS), min(span, maxSeconds))
		}
		for i, n := range j.ExpectedPerSecond {
			if err := nonNeg(fmt.Sprintf("expect.expected_per_second[%d]", i), n); err != nil {
				return err
			}
		}
		for i, r := range j.Readings {
			if err := firstErr(nonNeg(fmt.Sprintf("expect.readings[%d].expected", i), r.Expected), nonNeg(fmt.Sprintf("expect.readings[%d].tolerance", i), r.Tolerance)); err != nil {
				return err
			}
		}
	}
	return nil
}

// slot fails unless s is a cluster slot, 0 to 16383.
func slot(path string, s int) error {
	if s < 0 || s >= cluster.Slots {
		return fieldf("%s is %d, want a slot from 0 to %d", path, s, cluster.Slots-1)
	}
	return nil
}

func share(path string, f float64) error {
	if f < 0 || f > 1 {
		return fieldf("%s is %v, want a share from 0 to 1", path, f)
	}
	return nil
}

func validateKeyslot(res cluster.Result) error {
	if err := oneOf("verdict", res.Verdict, "pass", "fail"); err != nil {
		return err
	}
	for i, k := range res.Keys {
		if err := slot(fmt.Sprintf("keys[%d].slot", i), k.Slot); err != nil {
			return err
		}
		if k.ServerSlot != nil {
			if err := slot(fmt.Sprintf("keys[%d].server_slot", i), *k.ServerSlot); err != nil {
				return err
			}
		}
	}
	for i, g := range res.Groups {
		for j, s := range g.Slots {
			if err := slot(fmt.Sprintf("groups[%d].slots[%d]", i, j), s); err != nil {
				return err
			}
		}
		for j, sk := range g.BySlot {
			if err := slot(fmt.Sprintf("groups[%d].by_slot[%d].slot", i, j), sk.Slot); err != nil {
				return err
			}
		}
		if err := nonNeg(fmt.Sprintf("groups[%d].line", i), g.Line); err != nil {
			return err
		}
	}
	for i, s := range res.Scripts {
		if err := nonNeg(fmt.Sprintf("scripts[%d].calls", i), s.Calls); err != nil {
			return err
		}
	}
	for i, f := range res.Findings {
		if err := firstErr(nonNeg(fmt.Sprintf("findings[%d].line", i), f.Line), nonNeg(fmt.Sprintf("findings[%d].arg", i), f.Arg)); err != nil {
			return err
		}
	}
	if t := res.Topology; t != nil {
		for i, sh := range t.Shards {
			for j, r := range sh.Ranges {
				p := fmt.Sprintf("topology.shards[%d].ranges[%d]", i, j)
				if err := firstErr(slot(p+"[0]", r[0]), slot(p+"[1]", r[1])); err != nil {
					return err
				}
				if r[0] > r[1] {
					return fieldf("%s is [%d, %d], want the first slot at most the last", p, r[0], r[1])
				}
			}
		}
	}
	if v := res.Verify; v != nil {
		if err := firstErr(nonNeg("verify.checked", v.Checked), nonNeg("verify.mismatches", v.Mismatches)); err != nil {
			return err
		}
	}
	if sp := res.Spread; sp != nil {
		if err := firstErr(
			nonNeg("spread.key_count", sp.Keys), nonNeg("spread.slots_used", sp.SlotsUsed), nonNeg("spread.busiest_slot_keys", sp.BusiestSlotKeys),
			slot("spread.busiest_slot", sp.BusiestSlot), share("spread.busiest_slot_share", sp.BusiestSlotShare),
			share("spread.busiest_primary_share", sp.BusiestShare),
		); err != nil {
			return err
		}
		if sp.SlotsUsed > cluster.Slots {
			return fieldf("spread.slots_used is %d, want at most %d", sp.SlotsUsed, cluster.Slots)
		}
		for i, p := range sp.Primaries {
			if err := firstErr(nonNeg(fmt.Sprintf("spread.primaries[%d].key_count", i), p.Keys), nonNeg(fmt.Sprintf("spread.primaries[%d].slot_count", i), p.Slots),
				share(fmt.Sprintf("spread.primaries[%d].share", i), p.Share)); err != nil {
				return err
			}
		}
	}
	if sp := res.Split; sp != nil {
		if err := nonNeg("split.into", sp.Into); err != nil {
			return err
		}
		for i, s := range sp.SubKeys {
			if err := slot(fmt.Sprintf("split.sub_keys[%d].slot", i), s.Slot); err != nil {
				return err
			}
		}
	}
	return nil
}
