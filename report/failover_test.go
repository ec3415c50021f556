package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/failover"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/schematest"
)

// failoverRunID names the keys of the failover fixtures.
const failoverRunID = "6f1d2c3b-9a8e-4f70-b1c2-d3e4f5a6b7c8"

// failoverStats are the minimum, median and maximum of xs, as package
// failover computes them.
func failoverStats(xs []float64) failover.Stats {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return failover.Stats{Min: s[0], Median: med, Max: s[n-1]}
}

// failoverVariant fills a variant's spread from its trials.
func failoverVariant(v failover.Variant) failover.Variant {
	var extra, lost, unav, p50, p99 []float64
	for _, t := range v.Trials {
		extra = append(extra, float64(t.ExtraAllowed))
		lost = append(lost, float64(t.LostWrites))
		unav = append(unav, t.UnavailableMs)
		p50 = append(p50, t.P50Ms)
		p99 = append(p99, t.P99Ms)
	}
	v.ExtraAllowed, v.LostWrites, v.UnavailableMs = failoverStats(extra), failoverStats(lost), failoverStats(unav)
	v.P50Ms, v.P99Ms = failoverStats(p50), failoverStats(p99)
	return v
}

// failoverMaxExtra is the check package failover makes of a variant's
// extra admissions.
func failoverMaxExtra(id string, v failover.Variant, maxExtra *int64) doc.Check {
	per := make([]string, len(v.Trials))
	worst := 0
	for i, t := range v.Trials {
		per[i] = fmt.Sprint(t.ExtraAllowed)
		if i == 0 || t.ExtraAllowed > worst {
			worst = t.ExtraAllowed
		}
	}
	list := strings.Join(per, ", ")
	if maxExtra == nil {
		return doc.Check{ID: id, Pass: true, Skipped: true,
			Message: fmt.Sprintf("%s: extra admissions per trial %s; report only (pass --max-extra N to judge)", v.Name, list)}
	}
	return doc.Check{ID: id, Pass: int64(worst) <= *maxExtra,
		Message: fmt.Sprintf("%s: extra admissions per trial %s (max %d), --max-extra %d", v.Name, list, worst, *maxExtra)}
}

// failoverWith is three trials of CLUSTER FAILOVER FORCE on the key's
// primary of a 3-primary cluster with a replica each (127.0.0.1:7102 and
// its replica 127.0.0.1:7105 swap roles with every failover), a token
// bucket of 20 at 250/s under 500 decisions/s, without WAIT and with
// WAIT 1, judged against maxExtra (nil: report only). Without WAIT the old
// primary acknowledged a few admissions after the promotion that the new
// primary never saw; with WAIT 1 none was lost, one admission was refused
// as not durable, and each call took longer.
func failoverWith(maxExtra *int64) failover.Result {
	const oldP, newP = "127.0.0.1:7102", "127.0.0.1:7105"
	trial := func(n int, wait bool, decisions, allowed, model, lost, lostDecisions, notDurable int, unav, p50, p99, maxMs float64) failover.Trial {
		t := failover.Trial{
			Trial: n, Key: fmt.Sprintf("failover:{%s}:%d", failoverRunID, n), OldPrimary: oldP, NewPrimary: newP,
			Decisions: decisions, Allowed: allowed, ModelAllowed: model, ExtraAllowed: allowed - model,
			LostDecisions: lostDecisions, LostWrites: lost, LostExact: true, NotDurable: notDurable,
			Errors:       []failover.ErrorCount{{Class: "moved", Count: 1}},
			Recoveries:   []failover.Recovery{{Action: "followed the MOVED redirect", Count: 1}},
			ErrorSample:  "MOVED 9189 127.0.0.1:7105",
			FailoverAtMs: 1000.412, DurationMs: 2000 + unav + 31.5,
			FailoverMs: 41.877, StalePrimaryMs: unav - 12.3, UnavailableMs: unav, RecoveryMs: unav - 0.6,
			P50Ms: p50, P99Ms: p99, MaxMs: maxMs,
		}
		if wait {
			t.Key += ":wait"
			t.OldPrimary, t.NewPrimary = newP, oldP
			t.Errors = []failover.ErrorCount{{Class: "unreachable", Count: 1}}
			t.Recoveries = []failover.Recovery{{Action: "asked the cluster for the slot's primary and retried", Count: 1}}
			t.ErrorSample = "read tcp 127.0.0.1:53122->127.0.0.1:7105: read: connection reset by peer"
		}
		return t
	}
	noWait := failoverVariant(failover.Variant{Name: failover.VariantNoWait, Trials: []failover.Trial{
		trial(1, false, 1066, 558, 554, 5, 61, 0, 131.406, 0.212, 1.904, 152.3),
		trial(2, false, 1059, 556, 549, 8, 58, 0, 118.911, 0.205, 1.732, 140.8),
		trial(3, false, 1071, 560, 557, 3, 66, 0, 142.62, 0.219, 2.118, 163.5),
	}})
	noWait.Trials[2].LostExact = false
	noWait.Trials[1].Errors = []failover.ErrorCount{{Class: "moved", Count: 1}, {Class: "readonly", Count: 2}}
	wait := failoverVariant(failover.Variant{Name: failover.VariantWait, WaitReplicas: 1, WaitTimeoutMs: 100, Trials: []failover.Trial{
		trial(1, true, 1052, 551, 551, 0, 0, 0, 150.204, 0.418, 3.102, 171.9),
		trial(2, true, 1048, 548, 549, 0, 1, 1, 139.7, 0.431, 3.377, 158.2),
		trial(3, true, 1055, 553, 553, 0, 0, 0, 161.305, 0.409, 2.951, 180.4),
	}})
	round3 := func(f float64) float64 { return math.Round(f*1000) / 1000 }
	var notDurable []float64
	for _, t := range wait.Trials {
		notDurable = append(notDurable, float64(t.NotDurable))
	}
	args := []string{"--redis", "redis://127.0.0.1:7101", "--trials", "3", "--wait", "1", "--out", "failover.json"}
	if maxExtra != nil {
		args = append(args, "--max-extra", fmt.Sprint(*maxExtra))
	}
	res := failover.Result{
		Header: testHeader(failover.Kind, failover.Version,
			&redisconn.Server{Product: "redis", Version: "7.0.15", Mode: "cluster", Primaries: 3, Addr: "redis://127.0.0.1:7101"}, args...),
		RunID: failoverRunID, KeyPattern: "failover:{" + failoverRunID + "}:*",
		Algo: "token-bucket", Params: failover.Params{Capacity: 20, Rate: "250/s", RatePerS: 250, Cost: 1},
		RatePerS: 500, Clients: 1, Trials: 3, Mode: "force", BeforeMs: 1000, AfterMs: 1000, MaxExtra: maxExtra,
		Variants: []failover.Variant{noWait, wait},
		Tradeoff: &failover.Tradeoff{
			LostWritesSaved:   noWait.LostWrites.Median - wait.LostWrites.Median,
			ExtraAllowedSaved: failover.ExtraSaved(noWait.ExtraAllowed.Median, wait.ExtraAllowed.Median),
			P50CostMs:         round3(wait.P50Ms.Median - noWait.P50Ms.Median),
			P99CostMs:         round3(wait.P99Ms.Median - noWait.P99Ms.Median),
			NotDurable:        failoverStats(notDurable).Median,
		},
		ClusterOK: true, KeysDeleted: true,
		Checks: []doc.Check{
			failoverMaxExtra(failover.CheckMaxExtra, noWait, maxExtra),
			failoverMaxExtra(failover.CheckMaxExtraWait, wait, maxExtra),
			{ID: failover.CheckClusterOK, Pass: true, Message: "every node reports cluster_state:ok"},
			{ID: failover.CheckKeysDeleted, Pass: true, Message: fmt.Sprintf("all 6 keys of the run deleted (failover:{%s}:*)", failoverRunID)},
		},
		Notes: []string{
			"each call passes now_ms from the client's clock, so the model replays the very times the script saw",
			"lost writes are read back from the new primary: its answers are replayed through the model after each prefix of the old primary's answers, and the longest prefix that explains them all is what was replicated",
			"wait: every call is followed by WAIT 1 100 on its connection; an admission fewer replicas confirmed is refused (fail closed)",
		},
	}
	res.Verdict = doc.Verdict(res.Checks)
	return res
}

// fixtureFailover reports only (no --max-extra): it passes.
func fixtureFailover() failover.Result { return failoverWith(nil) }

// fixtureFailoverFail is the same run with --max-extra 5: trial 2 of
// no-wait allowed 7 extra, so max-extra fails; the wait variant passes.
func fixtureFailoverFail() failover.Result {
	n := int64(5)
	return failoverWith(&n)
}

func TestFailoverFixtures(t *testing.T) {
	pass, fail := fixtureFailover(), fixtureFailoverFail()
	if pass.Verdict != "pass" || fail.Verdict != "fail" {
		t.Fatalf("verdicts %s and %s, want pass and fail", pass.Verdict, fail.Verdict)
	}
	if c := fail.Checks[0]; c.ID != failover.CheckMaxExtra || c.Pass || !fail.Checks[1].Pass {
		t.Errorf("failing fixture checks %+v, want only max-extra failed", fail.Checks)
	}
	for _, res := range []failover.Result{pass, fail} {
		if err := validateFailover(res); err != nil {
			t.Errorf("validateFailover(fixture) = %v", err)
		}
	}
}

// TestFailoverText pins what the text report says beyond the goldens:
// the trade-off line, a flagged trial, a partial run's title.
func TestFailoverText(t *testing.T) {
	render := func(res failover.Result) string {
		t.Helper()
		var b bytes.Buffer
		if err := FailoverText(&b, res, Options{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	out := render(fixtureFailover())
	for _, want := range []string{
		"failover force of the key's primary: 3 trials, without WAIT and with WAIT 1\n",
		"WAIT 1 saved (medians over trials): lost writes 5, extra admissions 4 of the 4 without WAIT\n",
		"WAIT 1 cost (medians over trials): p50 +0.206 ms, p99 +1.198 ms; admissions refused as not durable 0; legitimate admissions refused (allowed below the model) 0\n",
		"127.0.0.1:7102 -> 127.0.0.1:7105",
		"~3",
		"verdict: PASS  no check failed (4 checks, 2 report only)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("passing text says FAIL:\n%s", out)
	}
	out = render(fixtureFailoverFail())
	if !strings.Contains(out, "verdict: FAIL  1 check failed: max-extra\n") {
		t.Errorf("failing text verdict:\n%s", out)
	}

	partial := fixtureFailover()
	partial.Trials = 5
	partial.Variants[1].Trials = partial.Variants[1].Trials[:2]
	partial.Tradeoff = nil
	if out := render(partial); !strings.HasPrefix(out, "failover force of the key's primary: 3 of 5 trials measured,") || strings.Contains(out, "WAIT 1 saved") {
		t.Errorf("partial run:\n%s", out)
	}
	noWait := fixtureFailover()
	noWait.Variants, noWait.Tradeoff, noWait.Checks = noWait.Variants[:1], nil, append(noWait.Checks[:1:1], noWait.Checks[2:]...)
	if out := render(noWait); !strings.Contains(out, "3 trials, without WAIT\n") || strings.Contains(out, "not durable") {
		t.Errorf("run without --wait:\n%s", out)
	}
}

// TestFailoverDocumentRefused: documents that break the failover rules in
// one place are refused by Decode, and by the schema where it can tell.
func TestFailoverDocumentRefused(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown variant", mutated(t, "failover.json", "variants.1.name", "wait-2"), `variants[1].name is "wait-2", want one of no-wait, wait`},
		{"variant twice", mutated(t, "failover.json", "variants.1.name", "no-wait"), `variants[1].name is "no-wait" again`},
		{"negative decisions", mutated(t, "failover.json", "variants.0.trials.1.decisions", -1), "variants[0].trials[1].decisions is -1, want >= 0"},
		{"allowed over decisions", mutated(t, "failover.json", "variants.0.trials.0.allowed", 5000), "variants[0].trials[0].allowed is 5000, want at most decisions (1066)"},
		{"lost writes over lost decisions", mutated(t, "failover.json", "variants.0.trials.0.lost_writes", 99), "variants[0].trials[0].lost_writes is 99, want at most lost_decisions (61)"},
		{"p50 over p99", mutated(t, "failover.json", "variants.1.trials.2.p50_ms", 50), "variants[1].trials[2]: p50_ms 50, p99_ms 2.951, max_ms 180.4 are out of order"},
		{"stats out of order", mutated(t, "failover.json", "variants.0.lost_writes.min", 9), "variants[0].lost_writes: min 9, median 5, max 8 are out of order"},
		{"trial 0", mutated(t, "failover.json", "variants.0.trials.0.trial", 0), "variants[0].trials[0].trial is 0, want >= 1"},
		{"unknown algo", mutated(t, "failover.json", "algo", "leaky-bucket"), `algo is "leaky-bucket"`},
		{"negative max extra", mutated(t, "failover_fail.json", "max_extra", -5), "max_extra is -5, want >= 0"},
		{"absurd cost", mutated(t, "failover.json", "tradeoff.p99_cost_ms", -1e300), "tradeoff.p99_cost_ms is -1e+300"},
		{"verdict", mutated(t, "failover.json", "verdict", "ok"), `verdict is "ok", want one of pass, fail`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.data)
			if err == nil || !errors.Is(err, ErrDocument) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode = %v, want ErrDocument with %q", err, tt.want)
			}
		})
	}
	for _, path := range []string{"variants.0.trials.0.severity", "tradeoff.cost", "checks.0.severity", "failover_mode", "variants.0.trials.0.errors.0.class"} {
		v := any(1)
		if path == "failover_mode" {
			v = "graceful"
		}
		if err := schematest.Check(mutated(t, "failover.json", path, v)); err == nil {
			t.Errorf("failover.json with %s = %v fits the schema", path, v)
		}
	}
	// a wait variant that refused more than the model: a negative count
	// of extra admissions is a measurement, not a broken document
	if _, err := Decode(mutated(t, "failover.json", "variants.1.trials.1.extra_allowed", -3)); err != nil {
		t.Errorf("negative extra_allowed refused: %v", err)
	}
}

// TestFailoverTradeoffArithmetic: the run (no-wait median 10
// extra admissions, wait median -8, WAIT timing out and most decisions
// dropped): the saving is the no-wait median, 10, never 10 - (-8); the 8
// legitimate admissions WAIT refused are a cost line of their own; text
// and Markdown say that most decisions were dropped and that WAIT timed
// out, and the tables tell the server's takeover from the clients' gap.
func TestFailoverTradeoffArithmetic(t *testing.T) {
	res := fixtureFailover()
	nw, w := &res.Variants[0], &res.Variants[1]
	for i := range nw.Trials {
		nw.Trials[i].ExtraAllowed = 10
		nw.Trials[i].ModelAllowed = nw.Trials[i].Allowed - 10
	}
	for i := range w.Trials {
		tr := &w.Trials[i]
		tr.ExtraAllowed, tr.ModelAllowed = -8, tr.Allowed+8
		tr.NotDurable = 8
		if i < 2 { // trials 1 and 2: 60% of the plan dropped
			tr.Dropped = tr.Decisions * 3 / 2
		}
	}
	*nw, *w = failoverVariant(*nw), failoverVariant(*w)
	res.Tradeoff.ExtraAllowedSaved = failover.ExtraSaved(nw.ExtraAllowed.Median, w.ExtraAllowed.Median)
	res.Tradeoff.NotDurable = 8
	if got := res.Tradeoff.ExtraAllowedSaved; got != 10 {
		t.Fatalf("ExtraSaved(10, -8) = %v, want 10", got)
	}
	var text bytes.Buffer
	if err := FailoverText(&text, res, Options{}); err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	failoverMarkdown(&md, res)
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		for _, want := range []string{
			"extra admissions 10 of the 10 without WAIT",
			"legitimate admissions refused (allowed below the model) 8",
			"admissions refused as not durable 8",
			"most decisions were dropped in 2 of 3 trials (trial 1 1578 of 2630, trial 2 1572 of 2620): WAIT timed out",
			"caution: the wait variant dropped most of its decisions in 2 of 3 trials",
			"takeover: the failover acknowledged until the replica reported itself primary (the server",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "extra admissions 18") {
			t.Errorf("%s adds the refusals to the saving:\n%s", name, out)
		}
	}
}
