package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/load"
)

// LoadJUnit renders a load result as JUnit XML: one testcase per
// threshold, one for the generator keeping up, one per header check, one
// for the verdict on the admitted count (with --expect) and one for the
// run's verdict.
func LoadJUnit(w io.Writer, res *load.Result) error {
	return writeJUnit(w, []junitSuite{loadSuite(res)})
}

func loadSuite(res *load.Result) junitSuite {
	s := junitSuite{Name: "ratelimit load", timeS: res.ElapsedS}
	if !res.StartedAt.IsZero() {
		s.Timestamp = res.StartedAt.UTC().Format(time.RFC3339)
	}
	for _, th := range res.Thresholds {
		c := newCase("load.thresholds", loadCheckName(th), 0)
		c.SystemOut = fmt.Sprintf("%s: %s (limit %s %s)\n", th.Name, th.Actual, cmpOr(th.Op, "<="), th.Limit)
		if loadHasLatencyCheck(&load.Result{Thresholds: []load.Check{th}}) {
			c.SystemOut += "judged on the latency from the due time\n"
		}
		if !th.Pass {
			// the message is the verdict's: the verdict testcase does not
			// fail a second time for it
			c.fail("threshold", loadCheckMessage(th), c.SystemOut)
			c.SystemOut = ""
		}
		s.Cases = append(s.Cases, c)
	}

	gen := newCase("load.generator", "generator kept up", 0)
	if res.Generator.FellBehind {
		msg := "the load generator fell behind; the counts do not measure the target"
		if len(res.Generator.Reasons) > 0 {
			msg = res.Generator.Reasons[0]
		}
		gen.fail("generator", msg, strings.Join(res.Generator.Reasons, "\n")+"\n")
	} else {
		gen.SystemOut = fmt.Sprintf("%d sent of %d planned, nothing dropped, lateness p99 %s ms\n", res.Sent, res.Planned, loadNum(res.Lateness.P99))
	}
	s.Cases = append(s.Cases, gen)

	for _, hc := range loadHeaderChecks(res) {
		c := newCase("load.headers", hc.name, 0)
		switch {
		case hc.skip != "":
			c.Skipped = &junitSkipped{Message: hc.skip}
		case !hc.pass:
			c.fail("header", hc.message, hc.detail+"\n")
		default:
			c.SystemOut = hc.detail + "\n"
		}
		s.Cases = append(s.Cases, c)
	}

	if j := res.Expect; j != nil {
		name := "admitted count"
		if j.Description != "" {
			name += ": " + j.Description
		}
		c := newCase("load.verdict", name, 0)
		var d strings.Builder
		d.WriteString(j.Line() + "\n")
		for _, r := range j.Readings {
			fit := "does not fit"
			if r.Fits {
				fit = "fits"
			}
			fmt.Fprintf(&d, "reading %s expects %d ±%d: %s\n", r.Description, r.Expected, r.Tolerance, fit)
		}
		if j.Note != "" {
			d.WriteString(j.Note + "\n")
		}
		if j.Pass {
			c.SystemOut = d.String()
		} else {
			c.fail("verdict", j.Line(), d.String())
		}
		s.Cases = append(s.Cases, c)
	}

	v := newCase("load.verdict", "verdict", res.ElapsedS)
	switch res.Verdict {
	case "pass":
		counts, warn := loadSummary(res)
		v.SystemOut = counts + "\n"
		if warn != "" {
			v.SystemOut += warn + "\n"
		}
		for _, n := range res.Notes {
			v.SystemOut += "note: " + n + "\n"
		}
	case "fail":
		// Each reason of a failed verdict is a threshold or the admitted
		// count, which fail testcases of their own: failing this one too
		// would count one failure twice. It fails only for reasons no
		// testcase above carries.
		failed := map[string]bool{}
		for _, c := range s.Cases {
			if c.Failure != nil {
				failed[c.Failure.Message] = true
			}
		}
		var rest []string
		for _, m := range res.VerdictMessages {
			if !failed[m] {
				rest = append(rest, m)
			}
		}
		counts, warn := loadSummary(res)
		summary := counts + "\n"
		if warn != "" {
			summary += warn + "\n"
		}
		if res.Aborted {
			summary += "aborted: " + res.AbortReason + "\n"
		}
		if len(rest) > 0 || len(res.VerdictMessages) == 0 {
			v.fail("verdict", strings.Join(rest, "; "), strings.Join(rest, "\n")+"\n"+summary)
		} else {
			v.SystemOut = "fail, from the failed testcases above: " + strings.Join(res.VerdictMessages, "; ") + "\n" + summary
		}
	default:
		v.Error = &junitFailure{Type: "interrupted", Message: fmt.Sprintf("interrupted after %ss: no verdict", loadNum(res.ElapsedS))}
	}
	s.Cases = append(s.Cases, v)
	return s
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// headerCheck is one header rule over all responses of a load run.
type headerCheck struct {
	name    string
	pass    bool
	skip    string // why the check does not apply; empty when it does
	message string // why it failed
	detail  string // counts
}

// loadHeaderChecks turns the header counts into checks: values present
// must be valid (a target that sends no RateLimit fields at all is
// skipped, not failed), every 429 needs a valid Retry-After, and no 429
// may be storable by a cache.
func loadHeaderChecks(res *load.Result) []headerCheck {
	h := res.Headers
	field := func(name string, f load.FieldStat, of int64, what string) headerCheck {
		c := headerCheck{name: name, detail: fmt.Sprintf("present on %s of %s, valid on %s", loadShare(f.Present, of), countNoun(int(of), what, what+"s"), loadShare(f.Valid, f.Present))}
		switch {
		case of == 0:
			c.skip = "no " + what + " to check"
		case f.Present == 0:
			c.skip = "the target sends no " + strings.TrimSuffix(name, " valid") + " header"
		case f.Valid < f.Present:
			c.message = fmt.Sprintf("%d of %d values invalid", f.Present-f.Valid, f.Present)
			if f.Example != "" {
				c.message += ": " + f.Example
			}
		default:
			c.pass = true
		}
		return c
	}
	checks := []headerCheck{
		field("RateLimit valid", h.RateLimit, h.Responses, "response"),
		field("RateLimit-Policy valid", h.Policy, h.Responses, "response"),
	}
	ra := headerCheck{name: "Retry-After on every 429",
		detail: fmt.Sprintf("present on %s of 429s, valid on %s", loadShare(h.RetryAfter.Present, res.RateLimited), loadShare(h.RetryAfter.Valid, res.RateLimited))}
	switch {
	case res.RateLimited == 0:
		ra.skip = "no 429 responses"
	case h.RetryAfter.Valid < res.RateLimited:
		ra.message = fmt.Sprintf("%d of %d 429 responses lack a valid Retry-After", res.RateLimited-h.RetryAfter.Valid, res.RateLimited)
		if h.RetryAfter.Example != "" {
			ra.message += ": " + h.RetryAfter.Example
		}
	default:
		ra.pass = true
	}
	st := headerCheck{name: "429 not storable by caches", detail: fmt.Sprintf("%s of 429s storable", loadShare(h.Storable429, res.RateLimited))}
	switch {
	case res.RateLimited == 0:
		st.skip = "no 429 responses"
	case h.Storable429 > 0:
		st.message = fmt.Sprintf("%d of %d 429 responses may be stored by a cache", h.Storable429, res.RateLimited)
		if h.StorableWhy != "" {
			st.message += ": " + h.StorableWhy
		}
	default:
		st.pass = true
	}
	return append(checks, ra, st)
}
