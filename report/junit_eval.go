package report

import (
	"fmt"

	"github.com/ratelimit-dev/ratelimit/eval/evaldoc"
)

// evalSuite is an eval run as JUnit: one testcase per check (reply shape,
// TTL), failed when the check failed. The suite's time is the calls' round
// trips.
func evalSuite(res evaldoc.Result) junitSuite {
	s := junitSuite{Name: "ratelimit eval"}
	for _, c := range res.Calls {
		s.timeS += c.LatencyMs / 1e3
	}
	subject := res.Script.Name
	if res.Key != "" {
		subject += " on " + res.Key
	}
	for _, ch := range res.CheckList() {
		c := newCase("eval.checks", ch.ID+": "+subject, 0)
		if ch.Pass {
			c.SystemOut = ch.Message + "\n" + evalFailureDetail(res, ch)
		} else {
			c.fail(ch.ID, ch.Message, evalFailureDetail(res, ch))
		}
		s.Cases = append(s.Cases, c)
	}
	return s
}

// evalFailureDetail lists what a check looked at: the keys without a TTL,
// or each call's reply.
func evalFailureDetail(res evaldoc.Result, ch evaldoc.Check) string {
	var d string
	switch ch.ID {
	case evaldoc.CheckTTL:
		if res.NoTTL != nil {
			for _, k := range res.NoTTL.Keys {
				d += fmt.Sprintf("%s (%s, found by %s)\n", k.Key, k.Type, k.Found)
			}
		}
	case evaldoc.CheckReplyShape:
		for _, c := range res.Calls {
			d += fmt.Sprintf("call %d: %s\n", c.N, compactJSON(c.Reply))
		}
	}
	return d
}

// simulateSuite is a simulation as JUnit: one testcase, the Go model
// against the script.
func simulateSuite(res evaldoc.SimResult) junitSuite {
	s := junitSuite{Name: "ratelimit eval --simulate", timeS: res.WallMs / 1000}
	detail := fmt.Sprintf("%d arrivals: script admitted %d, model %d\n", res.Arrivals, res.Admitted, res.Model)
	for _, ch := range res.CheckList() {
		c := checkCase("simulate.model", fmt.Sprintf("Go model agrees with %s under %s arrivals", res.Algo, res.Rate), ch, "model-disagreement", detail)
		c.Time = junitTime(res.WallMs / 1000)
		s.Cases = append(s.Cases, c)
	}
	return s
}

// scriptsSuite is the catalog of embedded scripts: it checks nothing, so
// its suite is empty.
func scriptsSuite(evaldoc.Catalog) junitSuite {
	return junitSuite{Name: "ratelimit scripts"}
}
