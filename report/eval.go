package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/eval/evaldoc"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/words"
)

// EvalText renders the result of `ratelimit eval`: what ran, one row per
// call, a summary line and, for --script, the keys left without a TTL.
func EvalText(w io.Writer, res evaldoc.Result, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	b.WriteString(ServerLine(serverOf(res.Header), st))
	b.WriteString(st.Title.Render(evalTitle(res)) + "\n")
	via := "EVALSHA (EVAL on NOSCRIPT)"
	if res.Script.Via == "fcall" {
		via = "FCALL " + res.Script.Function + " (FUNCTION LOAD)"
	}
	b.WriteString(st.Dim.Render(Printable(fmt.Sprintf("script %s sha1 %s via %s", res.Script.Name, short(res.Script.SHA1), via))) + "\n")
	if res.Algo == "script" {
		b.WriteString(st.Dim.Render(fmt.Sprintf("KEYS %s  ARGV %s", listOrNone(res.Script.Keys), listOrNone(res.Script.Args))) + "\n")
	}
	b.WriteString("\n")
	b.WriteString(evalCalls(res).text(st))
	b.WriteString("\n" + evalSummary(res) + "\n")
	if res.NoTTL != nil {
		b.WriteString("\n" + noTTLText(res.NoTTL, st))
	}
	b.WriteString("\n" + evalChecksText(res, st))
	_, err := io.WriteString(w, b.String())
	return err
}

// evalChecksText lists the run's checks (checkTable) and the verdict.
func evalChecksText(res evaldoc.Result, st Styles) string {
	return checkTable(res.CheckList()).text(st) + "verdict: " + st.Verdict(res.Pass()) + "  " + Printable(res.Scope()) + "\n"
}

// evalSpan writes a duration without zero units: 10s, 1m, 1h30m, 250ms.
func evalSpan(d time.Duration) string { return words.Span(d) }

// evalPer writes a window as a reader says it: per second, per minute,
// per hour, per day, else per 10s, per 1m30s.
func evalPer(d time.Duration) string { return words.Per(d) }

// limiterSettings is a limiter's parameters as its document carries them,
// in the registry's words: "capacity 10, rate 5/s".
func limiterSettings(algo string, d limiter.ParamsDoc) string {
	return d.Params(limiter.Algo(algo)).Settings()
}

func evalTitle(res evaldoc.Result) string {
	if res.Algo == "script" {
		return Printable(fmt.Sprintf("%s of %s", countNoun(len(res.Calls), "call", "calls"), res.Script.Name))
	}
	p := res.Params
	desc := fmt.Sprintf("%s, cost %d", limiterSettings(res.Algo, p.ParamsDoc), p.Cost)
	key := res.Key
	if res.IdentityHashed {
		key += " (identity hashed)"
	}
	return Printable(fmt.Sprintf("%s on %s: %s (policy q=%d w=%ds)", res.Algo, key, desc, p.PolicyQuota, p.PolicyWindowMs/1000))
}

// evalFields says which decision fields a script's calls carry, for its
// columns: allowed always, remaining, retry and reset when some call has
// them (the reply's elements, or --reply).
func evalFields(res evaldoc.Result) (remaining, retry, reset bool) {
	for _, c := range res.Calls {
		remaining = remaining || c.Remaining != nil
		retry = retry || c.RetryMs != nil
		reset = reset || c.ResetMs != nil
	}
	return remaining, retry, reset
}

func evalColumns(res evaldoc.Result) (headers []string, right []int) {
	switch {
	case res.Algo != "script":
		return []string{"n", "allowed", "remaining", "retry ms", "reset ms", "key ttl ms", "latency"}, []int{0, 2, 3, 4, 5, 6}
	case res.ReplyShape == "limiter":
		headers = []string{"n", "allowed"}
		right = []int{0}
		remaining, retry, reset := evalFields(res)
		for _, f := range []struct {
			has  bool
			name string
		}{{remaining, "remaining"}, {retry, "retry ms"}, {reset, "reset ms"}} {
			if f.has {
				right = append(right, len(headers))
				headers = append(headers, f.name)
			}
		}
		headers = append(headers, "reply", "key ttl ms", "latency")
		return headers, append(right, len(headers)-2, len(headers)-1)
	}
	return []string{"n", "reply", "key ttl ms", "latency"}, []int{0, 2, 3}
}

// evalCalls is the table of calls every format draws: one row per call.
func evalCalls(res evaldoc.Result) table {
	headers, right := evalColumns(res)
	t := table{headers: headers, right: right}
	remaining, retry, reset := evalFields(res)
	if res.Algo != "script" {
		remaining, retry, reset = true, true, true
	}
	for _, c := range res.Calls {
		row := []cell{textCell(strconv.Itoa(c.N))}
		if res.ReplyShape == "limiter" {
			row = append(row, decisionCell(c.Allowed != nil && *c.Allowed))
			if remaining {
				row = append(row, textCell(intOrDash(c.Remaining)))
			}
			if retry {
				r := msOrDash(c.RetryMs)
				if c.Allowed != nil && *c.Allowed && c.RetryMs != nil && *c.RetryMs < 0 {
					r = "-" // no retry for an allowed call (redis_rate answers -1)
				}
				row = append(row, textCell(r))
			}
			if reset {
				row = append(row, textCell(msOrDash(c.ResetMs)))
			}
		}
		if res.Algo == "script" {
			row = append(row, codeCell(compactJSON(c.Reply)))
		}
		t.rows = append(t.rows, append(row, textCell(ttlText(c.TTLMs)), textCell(Latency(c.LatencyMs))))
	}
	return t
}

func intOrDash(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}

func msOrDash(v *int64) string {
	switch {
	case v == nil:
		return "-"
	case *v < 0:
		return "never"
	}
	return strconv.FormatInt(*v, 10)
}

func ttlText(ms int64) string {
	switch ms {
	case -1:
		return "none"
	case -2:
		return "no key"
	}
	return strconv.FormatInt(ms, 10)
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "(none)"
	}
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = quoted(x)
	}
	return strings.Join(q, " ")
}

func evalSummary(res evaldoc.Result) string {
	switch {
	case len(res.OtherShape) > 0:
		return countNoun(len(res.Calls), "call", "calls") + "; some replies look like a limiter's {allowed 0/1, remaining, ...} and some do not"
	case res.ReplyShape != "limiter" && res.Reply != "":
		return countNoun(len(res.Calls), "call", "calls") + "; the replies do not read as --reply " + res.Reply
	case res.ReplyShape != "limiter":
		return countNoun(len(res.Calls), "call", "calls") + "; the replies do not look like a limiter's {allowed 0/1, remaining, ...} (describe them with --reply)"
	}
	s := res.Summary
	line := fmt.Sprintf("%d allowed, %d refused", s.Allowed, s.Refused)
	if s.RetryMs != nil {
		if *s.RetryMs < 0 {
			line += "; the cost can never pass"
		} else {
			line += fmt.Sprintf("; retry in ~%d ms", *s.RetryMs)
		}
	}
	return line
}

func neverExpires(n int) string { return plural(n, "it never expires", "they never expire") }

// noTTLHeadline says how many keys were left without a TTL, and whether
// --allow-no-ttl accepted them; pass is whether that passes.
func noTTLHeadline(c *evaldoc.TTLCheck) (line string, pass bool) {
	keys := countNoun(len(c.Keys), "key", "keys")
	if c.Allowed {
		return fmt.Sprintf("%s without a TTL: %s (accepted with --allow-no-ttl)", keys, neverExpires(len(c.Keys))), true
	}
	return fmt.Sprintf("%s without a TTL: %s", keys, neverExpires(len(c.Keys))), false
}

// noTTLChecked says what the TTL check looked at.
func noTTLChecked(c *evaldoc.TTLCheck) string {
	checked := "checked the KEYS passed"
	if len(c.Patterns) > 0 {
		checked += " and SCAN MATCH " + strings.Join(c.Patterns, ", ")
	}
	if c.Truncated {
		checked += " (scan stopped early on a large keyspace)"
	}
	return checked
}

// noTTLKeys is the table of the keys left without a TTL: how each was
// found and whether it was there before the run.
func noTTLKeys(c *evaldoc.TTLCheck) table {
	t := table{headers: []string{"key", "type", "how it was found"}}
	for _, k := range c.Keys {
		how := "passed in KEYS"
		if k.Found == "scan" {
			how = "found by SCAN"
		}
		switch {
		case k.ExistedBefore && k.Found == "keys":
			how += ", existed before the run"
		case k.ExistedBefore:
			how += ", changed or lost its TTL during the run"
		case k.Found == "keys":
			how += ", created by the run"
		default:
			how += ", created during the run (by the script or another client)"
		}
		t.rows = append(t.rows, []cell{keyCell(k.Key), textCell(k.Type), textCell(how)})
	}
	return t
}

// noTTLFix is what to do about keys without a TTL.
const noTTLFix = "set a TTL on every write (PEXPIRE in the same script)"

func noTTLText(c *evaldoc.TTLCheck, st Styles) string {
	var b strings.Builder
	if len(c.Keys) == 0 {
		b.WriteString(st.Pass.Render("no key without a TTL") + st.Dim.Render("; "+Printable(noTTLChecked(c))) + "\n")
		return b.String()
	}
	line, pass := noTTLHeadline(c)
	if pass {
		b.WriteString(st.Warn.Render(line) + "\n")
	} else {
		b.WriteString(st.Fail.Render("FAIL: "+line) + "\n")
	}
	b.WriteString(noTTLKeys(c).text(st))
	b.WriteString(st.Dim.Render(Printable(noTTLChecked(c))+"; "+noTTLFix) + "\n")
	return b.String()
}

// EvalSimulateText renders `ratelimit eval --simulate`.
func EvalSimulateText(w io.Writer, res evaldoc.SimResult, o Options) error {
	st := NewStyles(w, o)
	var b strings.Builder
	b.WriteString(ServerLine(serverOf(res.Header), st))
	p := res.Params
	desc := limiterSettings(res.Algo, p.ParamsDoc)
	dur := evalSpan(time.Duration(res.ForMs) * time.Millisecond)
	b.WriteString(st.Title.Render(Printable(fmt.Sprintf("simulate %s (%s, cost %d) under %s arrivals for %s", res.Algo, desc, p.Cost, res.Rate, dur))) + "\n")
	b.WriteString(st.Dim.Render("the real script on the server, in virtual time (now_ms), on a temporary key that is deleted afterwards") + "\n\n")
	pct := 0.0
	if res.Arrivals > 0 {
		pct = 100 * float64(res.Admitted) / float64(res.Arrivals)
	}
	fmt.Fprintf(&b, "%d arrivals: %s admitted (%.1f%%), %d refused", res.Arrivals, st.Title.Render(strconv.Itoa(res.Admitted)), pct, res.Refused)
	if res.FirstRefMs >= 0 {
		fmt.Fprintf(&b, "; first refusal at %s", evalSpan(time.Duration(res.FirstRefMs)*time.Millisecond))
	}
	b.WriteString("\n")
	if len(res.PerSecond) > 0 {
		b.WriteString("\nadmitted per virtual second\n")
		b.WriteString(simulatePerSecond(res).text(st))
	}
	b.WriteString("\n")
	if res.Agrees {
		fmt.Fprintf(&b, "Go model: %d admitted, %s\n", res.Model, st.Pass.Render("same decisions as the script"))
	} else {
		fmt.Fprintf(&b, "Go model: %d admitted, %s\n", res.Model, st.Fail.Render("DIFFERENT decisions from the script"))
	}
	b.WriteString(st.Dim.Render(fmt.Sprintf("%s in %s, %s wall time", countNoun(res.Arrivals, "script call", "script calls"),
		countNoun(res.Pipelines, "pipeline", "pipelines"), Latency(res.WallMs))) + "\n")
	b.WriteString("verdict: " + st.Verdict(res.Agrees) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// simulatePerSecond is the admissions of each virtual second, ten to a
// row.
func simulatePerSecond(res evaldoc.SimResult) table {
	t := table{headers: []string{"seconds"}}
	for i := range min(10, len(res.PerSecond)) {
		t.headers = append(t.headers, "+"+strconv.Itoa(i))
		t.right = append(t.right, i+1)
	}
	for i := 0; i < len(res.PerSecond); i += 10 {
		end := min(i+10, len(res.PerSecond))
		row := []cell{textCell(fmt.Sprintf("%d-%d", i, end-1))}
		for _, n := range res.PerSecond[i:end] {
			row = append(row, textCell(strconv.Itoa(n)))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// scriptsExported reports whether the catalogue was written to files.
func scriptsExported(c evaldoc.Catalog) bool {
	for _, s := range c.Scripts {
		if s.Path != "" {
			return true
		}
	}
	return false
}

// scriptsTable is the catalogue: one row per embedded script.
func scriptsTable(c evaldoc.Catalog) table {
	exported := scriptsExported(c)
	t := table{headers: []string{"name", "file", "sha1", "what it does"}}
	if exported {
		t.headers = append(t.headers, "written to")
	}
	for _, s := range c.Scripts {
		row := []cell{codeCell(s.Name), codeCell(s.File), codeCell(short(s.SHA1)), textCell(s.Summary)}
		if exported {
			row = append(row, codeCell(s.Path))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// EvalScriptsText lists the embedded scripts.
func EvalScriptsText(w io.Writer, c evaldoc.Catalog, o Options) error {
	st := NewStyles(w, o)
	out := scriptsTable(c).text(st)
	if !scriptsExported(c) {
		out += "\n" + st.Dim.Render("print one: ratelimit scripts NAME; write them all: ratelimit scripts --export DIR") + "\n"
	}
	_, err := io.WriteString(w, out)
	return err
}
