package report

import (
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/eval/evaldoc"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// The eval kinds: a run of calls (eval), a simulation (simulate) and the
// catalogue of embedded scripts (scripts).

var evalKind = kind[evaldoc.Result]{
	name: evaldoc.Kind, version: evaldoc.Version,
	older:    map[int]func([]byte) (evaldoc.Result, error){1: evalFromV1},
	validate: validateEval,
	checks:   evaldoc.Result.CheckList,
	text:     EvalText,
	markdown: evalMarkdown,
	junit:    evalSuite,
	html:     evalHTML,
}

var simulateKind = kind[evaldoc.SimResult]{
	name: evaldoc.SimKind, version: evaldoc.SimVersion,
	older:    map[int]func([]byte) (evaldoc.SimResult, error){1: simulateFromV1},
	validate: validateSimulate,
	checks:   evaldoc.SimResult.CheckList,
	text:     EvalSimulateText,
	markdown: simulateMarkdown,
	junit:    simulateSuite,
	html:     simulateHTML,
}

var scriptsKind = kind[evaldoc.Catalog]{
	name: evaldoc.CatalogKind, version: evaldoc.CatalogVersion,
	older:    map[int]func([]byte) (evaldoc.Catalog, error){1: scriptsFromV1},
	validate: func(evaldoc.Catalog) error { return nil },
	checks:   func(evaldoc.Catalog) []doc.Check { return []doc.Check{} },
	text:     EvalScriptsText,
	markdown: scriptsMarkdown,
	junit:    scriptsSuite,
	html:     scriptsHTML,
}

// paramsFromV1 renames the limiter parameters of version 1.
func paramsFromV1(p jsonTree) {
	rename(p, "rate_per_sec", "rate_per_s")
	renameMs(p, "policy_window_seconds", "policy_window_ms", func(s float64) float64 { return s * 1000 })
}

// evalFromV1: latency_us becomes latency_ms; the checks, absent from
// documents written before eval had them, are derived from the calls.
func evalFromV1(data []byte) (evaldoc.Result, error) {
	res, err := upgradeTree[evaldoc.Result](data, func(t jsonTree) {
		t["version"] = evaldoc.Version
		if p := object(t, "params"); p != nil {
			paramsFromV1(p)
		}
		for _, c := range objects(t, "calls") {
			renameMs(c, "latency_us", "latency_ms", usToMs)
		}
	})
	if err != nil {
		return res, err
	}
	res.Checks = res.CheckList()
	res.Verdict = doc.Verdict(res.Checks)
	return res, nil
}

// simulateFromV1: for_ms becomes duration_ms, admitted allowed; the
// arrival rate per second is read from the arrival rate.
func simulateFromV1(data []byte) (evaldoc.SimResult, error) {
	return upgradeTree[evaldoc.SimResult](data, func(t jsonTree) {
		t["version"] = evaldoc.SimVersion
		if p := object(t, "params"); p != nil {
			paramsFromV1(p)
		}
		rename(t, "for_ms", "duration_ms")
		rename(t, "admitted", "allowed")
		rename(t, "per_second", "allowed_per_second")
		rename(t, "model_admitted", "model_allowed")
		if s, ok := t["arrival_rate"].(string); ok {
			if r, err := rate.Parse(strings.TrimSpace(s)); err == nil {
				t["arrival_rate_per_s"] = r.PerSecond()
			}
		}
	})
}

// scriptsFromV1: a catalogue checks nothing; version 2 says so.
func scriptsFromV1(data []byte) (evaldoc.Catalog, error) {
	c, err := upgradeTree[evaldoc.Catalog](data, func(t jsonTree) { t["version"] = evaldoc.CatalogVersion })
	if c.Checks == nil {
		c.Checks = []doc.Check{}
	}
	return c, err
}
