package suite

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// fakeRunner answers each step by the entry's URL path: /pass, /fail,
// /undecided, /down (unreachable); it counts the steps running at once.
type fakeRunner struct {
	mu      sync.Mutex
	steps   []string
	running atomic.Int32
	most    atomic.Int32
}

func (r *fakeRunner) Step(ctx context.Context, step string, args []string) (Outcome, error) {
	n := r.running.Add(1)
	defer r.running.Add(-1)
	for m := r.most.Load(); n > m && !r.most.CompareAndSwap(m, n); m = r.most.Load() {
	}
	time.Sleep(20 * time.Millisecond)
	url := args[0]
	if step == StepLoad {
		url = args[1]
	}
	r.mu.Lock()
	r.steps = append(r.steps, step+" "+url)
	r.mu.Unlock()
	switch {
	case strings.HasSuffix(url, "/fail") && step == StepLoad:
		return Outcome{Checks: []doc.Check{{ID: "expect", Message: "allowed 49, expected 24"}}, Document: []byte(`{}`)}, nil
	case strings.HasSuffix(url, "/undecided"):
		return Outcome{Checks: []doc.Check{doc.Undecided("nothing was refused")}, Document: []byte(`{}`)}, nil
	case strings.HasSuffix(url, "/down"):
		return Outcome{}, exitcode.Unreachablef("connect: connection refused")
	}
	return Outcome{Checks: []doc.Check{{ID: "x", Pass: true, Message: "ok"}}, Document: []byte(`{}`)}, nil
}

func file(t *testing.T, paths ...string) File {
	t.Helper()
	var b strings.Builder
	b.WriteString("version: 1\ndefaults: {rate: 20/s}\nentries:\n")
	for _, p := range paths {
		b.WriteString("  - name: " + strings.ReplaceAll(p, "/", "") + "\n    url: http://127.0.0.1:1/" + p + "\n")
	}
	f, err := Parse("f.yaml", []byte(b.String()), Vocabulary{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRunVerdicts: an entry passes only when neither step failed; an
// undecided step makes the entry undecided, which fails the run unless
// allowed; an unreachable target is an error and its load is skipped.
func TestRunVerdicts(t *testing.T) {
	tests := []struct {
		paths   []string
		allow   bool
		verdict string
		passed  []bool
	}{
		{[]string{"pass", "pass2"}, false, doc.VerdictPass, []bool{true, true}},
		{[]string{"pass", "fail", "undecided"}, false, doc.VerdictFail, []bool{true, false, false}},
		{[]string{"pass", "undecided"}, false, doc.VerdictUndecided, []bool{true, false}},
		{[]string{"pass", "undecided"}, true, doc.VerdictPass, []bool{true, true}},
		{[]string{"down", "pass"}, false, doc.VerdictFail, []bool{false, true}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.paths, ",")+map[bool]string{true: " allowed"}[tt.allow], func(t *testing.T) {
			res, err := Run(context.Background(), file(t, tt.paths...), &fakeRunner{}, Options{AllowUndecided: tt.allow})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s", res.Verdict, tt.verdict)
			}
			for i, e := range res.Entries {
				if e.Passed != tt.passed[i] || res.Checks[i].Pass != e.Passed || res.Checks[i].ID != e.Name {
					t.Errorf("entry %s: passed %v (check %+v), want %v", e.Name, e.Passed, res.Checks[i], tt.passed[i])
				}
			}
		})
	}
	res, _ := Run(context.Background(), file(t, "down"), &fakeRunner{}, Options{})
	e := res.Entries[0]
	if e.Steps[0].Verdict != VerdictError || e.Steps[0].ExitCode != exitcode.Unreachable || e.Steps[1].Verdict != VerdictSkipped || e.Checks[0].ID != "probe/run" {
		t.Errorf("unreachable entry: %+v", e)
	}
	res, _ = Run(context.Background(), file(t, "undecided"), &fakeRunner{}, Options{AllowUndecided: true})
	if c := res.Entries[0].Checks[0]; c.ID != "probe/decided" || !c.Warning || res.Entries[0].Verdict != doc.VerdictUndecided {
		t.Errorf("allowed undecided: check %+v, verdict %s", c, res.Entries[0].Verdict)
	}
}

// TestRunOrder: entries run one after another by default (never two
// steps at once), --parallel runs them together; results keep the file's
// order; --only picks.
func TestRunOrder(t *testing.T) {
	f := file(t, "a", "b", "c", "d")
	r := &fakeRunner{}
	res, err := Run(context.Background(), f, r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.most.Load() != 1 || len(r.steps) != 8 || r.steps[0] != "probe http://127.0.0.1:1/a" || r.steps[1] != "load http://127.0.0.1:1/a" {
		t.Errorf("sequential: %d at once, steps %v", r.most.Load(), r.steps)
	}
	r = &fakeRunner{}
	res, err = Run(context.Background(), f, r, Options{Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.most.Load() < 2 {
		t.Errorf("--parallel 4: at most %d steps at once", r.most.Load())
	}
	for i, want := range []string{"a", "b", "c", "d"} {
		if res.Entries[i].Name != want {
			t.Errorf("entry %d is %s, want %s", i, res.Entries[i].Name, want)
		}
	}
	res, err = Run(context.Background(), f, &fakeRunner{}, Options{Only: []string{"c", "a"}})
	if err != nil || len(res.Entries) != 2 || res.Entries[0].Name != "a" || res.Entries[1].Name != "c" {
		t.Errorf("--only c,a: %v %+v", err, res.Entries)
	}
}
