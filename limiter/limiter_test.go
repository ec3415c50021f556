package limiter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
)

func mustLimiter(t *testing.T, p Params) *Limiter {
	t.Helper()
	l, err := NewLimiter(p)
	if err != nil {
		t.Fatalf("NewLimiter(%+v): %v", p, err)
	}
	return l
}

func TestNewLimiterRejectsBadInput(t *testing.T) {
	five := rate.Rate{Count: 5, Per: time.Second}
	tests := []Params{
		{Algo: "leaky", Capacity: 5, Rate: five},
		{Algo: TokenBucket, Capacity: 0, Rate: five},
		{Algo: TokenBucket, Capacity: -1, Rate: five},
		{Algo: TokenBucket, Capacity: 5},
		{Algo: TokenBucket, Capacity: 5, Rate: five, Cost: 6},
		{Algo: TokenBucket, Capacity: 5, Rate: five, Cost: -1},
		{Algo: SlidingWindow, Limit: 0, Window: time.Second},
		{Algo: SlidingWindow, Limit: 3},
		{Algo: SlidingWindow, Limit: 3, Window: 1500 * time.Microsecond},
		{Algo: FixedWindow, Limit: 3, Window: -time.Second},
		{Algo: GCRA, Rate: five},
		{Algo: GCRA, Burst: 3},
		{Algo: GCRA, Burst: 3, Rate: rate.Rate{Count: 2e6, Per: time.Second}},
	}
	for _, p := range tests {
		t.Run(fmt.Sprintf("%+v", p), func(t *testing.T) {
			_, err := NewLimiter(p)
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Errorf("NewLimiter(%+v) = %v (exit %d), want exit %d", p, err, code, exitcode.Usage)
			}
		})
	}
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		p    Params
		want Policy
	}{
		{Params{Algo: TokenBucket, Capacity: 10, Rate: rate.Rate{Count: 5, Per: time.Second}}, Policy{10, 2}},
		{Params{Algo: TokenBucket, Capacity: 5, Rate: rate.Rate{Count: 2, Per: time.Second}}, Policy{5, 3}},
		{Params{Algo: SlidingWindow, Limit: 100, Window: time.Minute}, Policy{100, 60}},
		{Params{Algo: FixedWindow, Limit: 3, Window: 500 * time.Millisecond}, Policy{3, 1}},
		{Params{Algo: GCRA, Burst: 20, Rate: rate.Rate{Count: 10, Per: time.Second}}, Policy{20, 2}},
	}
	for _, tt := range tests {
		if got := mustLimiter(t, tt.p).Policy(); got != tt.want {
			t.Errorf("Policy(%+v) = %+v, want %+v", tt.p, got, tt.want)
		}
	}
}

// TestRegistryEntriesComplete: every algorithm answers every question the
// tool asks of it, so no caller needs a case of its own.
func TestRegistryEntriesComplete(t *testing.T) {
	for _, a := range Algos() {
		e := Lookup(a)
		if e == nil || e.Words == "" || len(e.Params) == 0 || e.validate == nil || e.model == nil ||
			e.policy == nil || e.describe == nil || e.perSecond == nil || e.quota == nil {
			t.Fatalf("%s: incomplete registry entry %+v", a, e)
		}
		if e.Script != nil && (e.args == nil || e.decode == nil || e.replyLen == 0 || e.StateType == "" || e.ACL == "") {
			t.Errorf("%s: a scripted entry needs args, decode, replyLen, StateType and ACL", a)
		}
		if got, err := ParseSpec(e.Example()); err != nil || got.Algo != a {
			t.Errorf("ParseSpec(%q) = %+v, %v", e.Example(), got, err)
		}
	}
}

// TestSpecRoundTrip: Spec writes what ParseSpec reads back, for every
// algorithm, and Describe and Settings name every parameter.
func TestSpecRoundTrip(t *testing.T) {
	for _, p := range []Params{
		{Algo: TokenBucket, Capacity: 10, Rate: rate.MustParse("5/s"), Cost: 1},
		{Algo: SlidingWindow, Limit: 100, Window: time.Minute, Cost: 1},
		{Algo: FixedWindow, Limit: 3, Window: 1500 * time.Millisecond, Cost: 1},
		{Algo: GCRA, Rate: rate.MustParse("300/m"), Burst: 20, Cost: 1},
	} {
		got, err := ParseSpec(p.Spec())
		if err != nil || got != p {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", p.Spec(), got, err, p)
		}
		if p.Describe() == "" || p.Settings() == "" {
			t.Errorf("%s: Describe %q, Settings %q", p.Algo, p.Describe(), p.Settings())
		}
	}
	if p, err := ParseSpec("token-bucket:capacity=10,rate=5/s"); err != nil || p.Capacity != 10 {
		t.Errorf("capacity= is burst=: %+v, %v", p, err)
	}
	for _, bad := range []string{"leaky", "token-bucket:burst=10", "token-bucket:burst=10,rate=5/s,limit=3", "gcra:rate=5/s,burst=x", "fixed-window:limit=1,limit=2,window=1s", "sliding-window:limit=0,window=1s"} {
		if _, err := ParseSpec(bad); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParseSpec(%q) = %v, want exit 2", bad, err)
		}
	}
}

// TestModelSpecs: the models without scripts and the options parse, print
// back and describe themselves; a scripted algorithm with an option away
// from its default is a model only.
func TestModelSpecs(t *testing.T) {
	for spec, words := range map[string]string{
		"sliding-window-counter:limit=10,window=2s":                               "sliding window counter 10 per 2s",
		"sliding-window-counter:limit=10,window=2s,round=nearest,offset=774ms":    "rounded nearest",
		"sliding-window-counter:limit=3,window=2s,align=first,count-refused=true": "refusals counted",
		"fixed-window:limit=100,window=1m,align=clock":                            "clock-aligned",
		"sliding-window:limit=5,window=1s,count-refused=true":                     "refusals counted",
		"leaky-bucket:rate=5/s,burst=10":                                          "leaky bucket 5/s burst 10, nodelay",
		"leaky-bucket:rate=2/s,burst=3,delay=1":                                   "delay 1",
		"leaky-bucket:rate=7/m,burst=0":                                           "burst 0",
	} {
		p, err := ParseSpec(spec)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", spec, err)
			continue
		}
		if again, err := ParseSpec(p.Spec()); err != nil || again != p {
			t.Errorf("ParseSpec(%q) then Spec %q = %+v, %v", spec, p.Spec(), again, err)
		}
		if !strings.Contains(p.Describe(), words) {
			t.Errorf("%s: Describe %q lacks %q", spec, p.Describe(), words)
		}
		l := mustLimiter(t, p)
		if l.HasScript() {
			t.Errorf("%s: a model only, but HasScript", spec)
		}
	}
	if l := mustLimiter(t, Params{Algo: FixedWindow, Limit: 3, Window: time.Second, Align: AlignFirst}); !l.HasScript() {
		t.Error("fixed-window with its default alignment is the script")
	}
	for _, bad := range []string{"sliding-window-counter:limit=10,window=2s,round=up", "fixed-window:limit=1,window=1s,align=noon",
		"leaky-bucket:rate=5/s,burst=2,delay=3", "leaky-bucket:rate=0.0001/s,burst=1", "token-bucket:burst=10,rate=5/s,align=clock",
		"sliding-window-counter:limit=10,window=2s,round=floor,round=none"} {
		if _, err := ParseSpec(bad); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParseSpec(%q) = %v, want exit 2", bad, err)
		}
	}
	if _, err := ParseAlgo("leaky-bucket"); err == nil {
		t.Error("ParseAlgo accepts a model without a script (eval, race and serve cannot run it)")
	}
}
