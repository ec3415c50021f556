package race

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// aclRules is ACL plus what the target's client needs, minus drop.
func aclRules(tg redistest.Target, drop string) []string {
	rules := ACL()
	if tg.Name == "cluster" {
		rules = append(rules, ClusterACL...)
	}
	return slices.DeleteFunc(rules, func(r string) bool { return r == drop })
}

// TestRunMinimalACL races every built-in strategy as an ACL user that may
// do only what ACL (and ClusterACL) lists, on a real standalone server and
// a real cluster: the race works and is exact. Dropping any one rule makes
// the run an exit-3 error that names the rule to add.
func TestRunMinimalACL(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			url := redistest.ACLUser(t, tg, aclRules(tg, "")...)
			c := raceClient(t, url, 50)
			res, err := Run(context.Background(), c, Options{Concurrency: 50, Limit: 10, Trials: 1})
			if err != nil {
				t.Fatalf("Run as the minimal ACL user: %v", err)
			}
			if !res.Pass() {
				t.Errorf("verdict %q failures %v", res.Verdict, res.Failures())
			}
			for _, s := range res.Strategies {
				if s.Errors[0] != 0 {
					t.Errorf("%s: %d errors (%s)", s.Name, s.Errors[0], s.ErrorSample)
				}
			}
			if left := runKeys(t, tg.Client, res.RunID); len(left) > 0 {
				t.Errorf("keys left: %v", left)
			}
		})
	}
}

// TestRunACLRefusal drops one rule of the minimal ACL at a time: the run
// fails with exit 3 and one line naming the rule to add, and leaves no key.
func TestRunACLRefusal(t *testing.T) {
	tests := []struct{ drop, want string }{
		{"+incr", "add +incr"},
		{"+get", "add +get"},
		{"+watch", "add +watch"},
		{"+script|load", "add +script|load"},
		{"+hset", "+hset"},
		{"+pexpire", "+pexpire"},
		{"+hget", "add +hget"},
		{"+del", "add +del"},
		{"~race:*", "add ~race:*"},
	}
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		for _, tt := range tests {
			t.Run(tg.Name+"/"+tt.drop, func(t *testing.T) {
				url := redistest.ACLUser(t, tg, aclRules(tg, tt.drop)...)
				c := raceClient(t, url, 10)
				runID := NewRunID()
				_, err := Run(context.Background(), c, Options{Concurrency: 10, Limit: 3, Trials: 1, RunID: runID})
				if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("Run without %s = %v (exit %d), want exit 3 and one line with %q", tt.drop, err, exitcode.Code(err), tt.want)
				}
				left := runKeys(t, tg.Client, runID)
				redistest.Cleanup(t, tg.Client, left...)
				if len(left) > 0 && tt.drop != "+del" {
					t.Errorf("keys left: %v", left)
				}
			})
		}
	}
}
