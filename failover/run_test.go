package failover

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/fault"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

// startCluster starts the test's own cluster of 3 primaries with a
// replica each, stopped at cleanup. Full syncs skip the 5 s diskless
// delay, so a failed-over primary is a replica in sync again quickly,
// and a node timeout of 1 s lets one replica run an election every
// 4.25 s (see awaitElection) instead of every 20 s.
func startCluster(t *testing.T) (*sandbox.Sandbox, *redisconn.Conn) {
	t.Helper()
	redistest.Require(t)
	ctx := context.Background()
	logs := &redistest.Buffer{}
	sb, err := sandbox.Start(ctx, sandbox.Config{Primaries: 3, Replicas: 1, Args: []string{"--repl-diskless-sync-delay", "0", "--cluster-node-timeout", "1000"}, Log: logs})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
		if err := sb.Stop(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	conn, err := redisconn.Open(ctx, redisconn.Options{URL: sb.URL})
	if err != nil {
		t.Fatalf("connect to cluster: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if !conn.IsCluster() {
		t.Fatal("sandbox cluster opened as a standalone client")
	}
	return sb, conn
}

// TestFailoverTrials is the acceptance run: 5 trials on a cluster with
// replicas, with and without WAIT 1. Without WAIT the old primary keeps
// acknowledging writes after the replica took over, and the new primary
// forgets them: lost writes and extra admissions. WAIT 1 refuses what no
// replica confirmed, so it loses fewer, at a measured latency cost. The
// run ends with a healthy cluster in its first topology and no key left.
func TestFailoverTrials(t *testing.T) {
	sb, conn := startCluster(t)
	ctx := context.Background()
	runID := uuid.NewString()
	probe := "failover:{" + runID + "}:1"
	seed := redis.NewClient(&redis.Options{Addr: sb.Addrs[0]})
	defer seed.Close()
	before, err := fault.FindShard(ctx, seed, probe)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, conn.Client, Options{
		URL: sb.URL, Sandboxes: []*sandbox.Sandbox{sb}, Trials: 5, Wait: 1,
		Before: 600 * time.Millisecond, After: 600 * time.Millisecond, RunID: runID,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Variants) != 2 || res.Variants[0].Name != VariantNoWait || res.Variants[1].Name != VariantWait {
		t.Fatalf("variants = %+v, want no-wait and wait", res.Variants)
	}
	var lost [2]int
	for vi, v := range res.Variants {
		if len(v.Trials) != 5 {
			t.Fatalf("%s: %d trials, want 5", v.Name, len(v.Trials))
		}
		for _, tr := range v.Trials {
			t.Logf("%-7s trial %d: %4d decisions, allowed %3d, model %3d, extra %3d, lost writes %2d (of %2d lost decisions, exact %v), not durable %2d, dropped %3d, failed %d, failover at %.0fms took %.1fms, stale primary %.1fms, unavailable %.1fms, p50 %.3fms p99 %.3fms max %.1fms, trial %.0fms, errors %v, recoveries %v",
				v.Name, tr.Trial, tr.Decisions, tr.Allowed, tr.ModelAllowed, tr.ExtraAllowed, tr.LostWrites, tr.LostDecisions, tr.LostExact, tr.NotDurable, tr.Dropped, tr.Failed, tr.FailoverAtMs, tr.FailoverMs, tr.StalePrimaryMs, tr.UnavailableMs, tr.P50Ms, tr.P99Ms, tr.MaxMs, tr.DurationMs, tr.Errors, tr.Recoveries)
			// the roles swap with every failover: no-wait trials fail the
			// first primary over, wait trials fail it back
			from, to := before.Primary.Addr, before.Replicas[0].Addr
			if v.Name == VariantWait {
				from, to = to, from
			}
			if tr.OldPrimary != from || tr.NewPrimary != to {
				t.Errorf("%s trial %d: %s -> %s, want %s -> %s", v.Name, tr.Trial, tr.OldPrimary, tr.NewPrimary, from, to)
			}
			if tr.Decisions < 100 {
				t.Errorf("%s trial %d: %d decisions, want the steady rate over 1.2s (about 600)", v.Name, tr.Trial, tr.Decisions)
			}
			if !tr.LostExact {
				t.Errorf("%s trial %d: the lost writes do not explain the new primary's answers exactly", v.Name, tr.Trial)
			}
			lost[vi] += tr.LostWrites
			classes := map[string]bool{}
			for _, e := range tr.Errors {
				classes[e.Class] = true
			}
			// without WAIT the old primary redirects the first call it
			// no longer serves; with WAIT it drops the connection of the
			// WAIT it was blocked in when it became a replica
			if v.Name == VariantNoWait && !classes["moved"] || v.Name == VariantWait && !classes["moved"] && !classes["unreachable"] {
				t.Errorf("%s trial %d: errors %v, want the clients to have met the failover", v.Name, tr.Trial, tr.Errors)
			}
			if len(tr.Recoveries) == 0 {
				t.Errorf("%s trial %d: no recovery recorded", v.Name, tr.Trial)
			}
			switch v.Name {
			case VariantNoWait:
				// each lost admission is an extra one, unless the bucket
				// refilled to full in between
				if tr.ExtraAllowed < 0 || tr.ExtraAllowed > tr.LostWrites {
					t.Errorf("no-wait trial %d: extra allowed %d, lost writes %d; want 0 <= extra <= lost", tr.Trial, tr.ExtraAllowed, tr.LostWrites)
				}
			case VariantWait:
				// the one replica that confirmed a write is the one promoted
				if tr.LostWrites != 0 || tr.ExtraAllowed > 0 {
					t.Errorf("wait trial %d: lost writes %d, extra allowed %d; want none with WAIT 1 and one replica", tr.Trial, tr.LostWrites, tr.ExtraAllowed)
				}
			}
		}
		t.Logf("%-7s extra allowed min/median/max %v/%v/%v, lost writes %v/%v/%v, p50 %.3fms p99 %.3fms (medians)",
			v.Name, v.ExtraAllowed.Min, v.ExtraAllowed.Median, v.ExtraAllowed.Max, v.LostWrites.Min, v.LostWrites.Median, v.LostWrites.Max, v.P50Ms.Median, v.P99Ms.Median)
	}
	// the old primary acknowledged writes after the promotion: lost, and
	// allowed again by the new primary
	if lost[0] == 0 || res.Variants[0].ExtraAllowed.Max <= 0 {
		t.Errorf("no-wait: %d lost writes, at most %v extra admissions over 5 trials; want some", lost[0], res.Variants[0].ExtraAllowed.Max)
	}
	if lost[1] >= lost[0] {
		t.Errorf("lost writes: wait %d, no-wait %d; want fewer with WAIT 1", lost[1], lost[0])
	}
	if res.Tradeoff == nil || res.Tradeoff.P50CostMs <= 0 {
		t.Errorf("tradeoff = %+v, want WAIT to cost latency at the median", res.Tradeoff)
	} else {
		t.Logf("tradeoff: lost writes saved %.1f, extra allowed saved %.1f, p50 cost %.3fms, p99 cost %.3fms, not durable %.1f (medians)",
			res.Tradeoff.LostWritesSaved, res.Tradeoff.ExtraAllowedSaved, res.Tradeoff.P50CostMs, res.Tradeoff.P99CostMs, res.Tradeoff.NotDurable)
	}
	if !res.ClusterOK || !res.KeysDeleted || res.Verdict != "pass" {
		t.Errorf("cluster ok %v, keys deleted %v, verdict %s, checks %+v", res.ClusterOK, res.KeysDeleted, res.Verdict, res.Checks)
	}
	// the harness's own look: healthy, first topology, nothing left
	for _, addr := range sb.Addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		ok, state, err := fault.ClusterOK(ctx, c)
		_ = c.Close()
		if err != nil || !ok {
			t.Errorf("node %s: %s, %v; want cluster_state:ok", addr, state, err)
		}
	}
	after, err := fault.FindShard(ctx, seed, probe)
	if err != nil || after.Primary.Addr != before.Primary.Addr {
		t.Errorf("after the run %s serves the run's slot (%v), want %s again", after.Primary.Addr, err, before.Primary.Addr)
	}
	if left := redistest.ScanKeys(t, conn.Client, "failover:{"+runID+"}:*"); len(left) != 0 {
		t.Errorf("keys left behind: %v", left)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("marshal result: %v", err)
	}
	if res.Kind != Kind || res.Version != Version {
		t.Errorf("header = %+v, want kind %s version %d", res.Header, Kind, Version)
	}
	for _, c := range res.Checks {
		if c.ID == CheckMaxExtra && !c.Skipped {
			t.Errorf("max-extra check %+v, want skipped without MaxExtra", c)
		}
	}
	if doc.Verdict(res.Checks) != "pass" {
		t.Errorf("checks %+v", res.Checks)
	}
	if !strings.Contains(res.KeyPattern, runID) {
		t.Errorf("key pattern %q", res.KeyPattern)
	}
}

// TestRunInterruptedRestores: Ctrl-C after the failover, while decisions
// go on, ends the run at once with context.Canceled, and still deletes
// the key, fails the first primary back and leaves the cluster healthy.
func TestRunInterruptedRestores(t *testing.T) {
	sb, conn := startCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runID := uuid.NewString()
	seed := redis.NewClient(&redis.Options{Addr: sb.Addrs[0]})
	defer seed.Close()
	before, err := fault.FindShard(context.Background(), seed, "failover:{"+runID+"}:1")
	if err != nil {
		t.Fatal(err)
	}
	// the failover comes 300 ms in, the cancellation 1.5 s in, during After
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	res, err := Run(ctx, conn.Client, Options{URL: sb.URL, Sandboxes: []*sandbox.Sandbox{sb}, Trials: 3,
		Before: 300 * time.Millisecond, After: 10 * time.Second, RunID: runID})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Run took %s after an interrupt at 1.5s", d)
	}
	if !res.ClusterOK || !res.KeysDeleted {
		t.Errorf("cluster ok %v, keys deleted %v; want both after an interrupt (checks %+v)", res.ClusterOK, res.KeysDeleted, res.Checks)
	}
	after, err := fault.FindShard(context.Background(), seed, "failover:{"+runID+"}:1")
	if err != nil || after.Primary.Addr != before.Primary.Addr {
		t.Errorf("after the interrupt %s serves the run's slot (%v), want %s back", after.Primary.Addr, err, before.Primary.Addr)
	}
	if left := redistest.ScanKeys(t, conn.Client, "failover:{"+runID+"}:*"); len(left) != 0 {
		t.Errorf("keys left behind: %v", left)
	}
}
