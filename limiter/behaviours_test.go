package limiter

import (
	"os"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// TestBehaviourSpecs: the options of issue 31 read back as they are
// written, name themselves in words, stand for no script, and give the
// model they say.
func TestBehaviourSpecs(t *testing.T) {
	tests := []struct {
		spec, canon, words string
		// admitted of 20 calls at once, then of 20 more 1.1 s later
		first, later int
	}{
		{"slowdown:after=10,window=2s,step=250ms,max=2s", "", "slowdown after 10 per 2s, +250ms each, up to 2s", 20, 20},
		{"slow-down:limit=10,window=2s", "slowdown:after=10,window=2s", "slowdown after 10 per 2s, +1s each", 20, 20},
		{"fixed-window:limit=10,window=2s,block=4s", "", "fixed window 10 per 2s, blocked 4s after a refusal", 10, 0},
		{"token-bucket:burst=10,rate=5/s,block=2s", "", "token bucket 10 + 5/s, blocked 2s after a refusal", 10, 0},
		{"gcra:rate=5/s,burst=10,block=1s", "", "gcra 5/s burst 10, blocked 1s after a refusal", 10, 10},
		{"fixed-window:limit=10,window=1s,expiry=elastic", "", "fixed window 10 per 1s, every request restarts the window", 10, 10},
		{"fixed-window:limit=10,window=2s,align=creation", "", "fixed window 10 per 2s, windows ticking from each key's creation", 10, 0},
		{"fixed-window:limit=10,window=2s,timer=seconds,refuse-at=limit", "", "fixed window 10 per 2s, whole-second timers, refused once the count reaches the limit", 9, 0},
		{"token-bucket:burst=10,rate=5/s,refill=whole", "", "token bucket 10 + 5/s, whole tokens from the last admission", 10, 5},
		{"fixed-window:limit=10,window=2s,expiry=fixed,refill=", "", "", 0, 0},
	}
	for _, tt := range tests {
		p, err := ParseSpec(tt.spec)
		if tt.words == "" {
			if err == nil {
				t.Errorf("ParseSpec(%q) = %+v, want an error", tt.spec, p)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseSpec(%q): %v", tt.spec, err)
		}
		canon := tt.canon
		if canon == "" {
			canon = tt.spec
		}
		if got := p.Spec(); got != canon {
			t.Errorf("ParseSpec(%q).Spec() = %q, want %q", tt.spec, got, canon)
		}
		if again, err := ParseSpec(p.Spec()); err != nil || again != p {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", p.Spec(), again, err, p)
		}
		if got := p.Describe(); got != tt.words {
			t.Errorf("%s Describe() = %q, want %q", tt.spec, got, tt.words)
		}
		l, err := NewLimiter(p)
		if err != nil {
			t.Fatal(err)
		}
		if l.HasScript() {
			t.Errorf("%s HasScript() = true: an option away from its default is no embedded script", tt.spec)
		}
		m := l.Model()
		count := func(at int64) int {
			n := 0
			for range 20 {
				if m.Allow(at, 1).Allowed {
					n++
				}
			}
			return n
		}
		// the first burst at 1000.3 s: whole-second timers start at 1000 s
		if got := count(1_000_300); got != tt.first {
			t.Errorf("%s: %d of 20 admitted at once, want %d", tt.spec, got, tt.first)
		}
		if got := count(1_001_400); got != tt.later {
			t.Errorf("%s: %d of 20 admitted 1.1 s later, want %d", tt.spec, got, tt.later)
		}
	}
}

// TestBehaviourSpecErrors: option combinations no product has are exit 2
// and say why.
func TestBehaviourSpecErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"fixed-window:limit=10,window=1500ms,timer=seconds":             "whole seconds",
		"fixed-window:limit=10,window=2s,timer=seconds,align=clock":     "align=clock takes none",
		"fixed-window:limit=10,window=2s,expiry=elastic,align=creation": "expiry=elastic restarts",
		"fixed-window:limit=1,window=2s,refuse-at=limit":                "admits 0 per window",
		"fixed-window:limit=10,window=2s,block=0s":                      "block=0s",
		"fixed-window:limit=10,window=2s,block=1.5ms":                   "whole milliseconds",
		"slowdown:after=10,window=2s,step=-1s":                          "step=-1s",
		"slowdown:after=10":                                             "needs window",
		"token-bucket:burst=10,rate=5/s,refill=half":                    "use exact or whole",
		"sliding-window:limit=10,window=2s,expiry=elastic":              "not expiry",
	} {
		_, err := ParseSpec(spec)
		if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSpec(%q) = %v, want exit 2 containing %q", spec, err, want)
		}
	}
}

// TestEveryModelBlocks: block= is an option of every algorithm, and each
// one's model with a block refuses everything for the block's length
// after its first refusal.
func TestEveryModelBlocks(t *testing.T) {
	for _, e := range registry {
		if _, ok := e.optionOf("block"); !ok {
			t.Errorf("%s has no block option", e.Algo)
			continue
		}
		spec := e.Example() + ",block=5s"
		p, err := ParseSpec(spec)
		if err != nil {
			t.Fatalf("ParseSpec(%q): %v", spec, err)
		}
		l, _ := NewLimiter(p)
		m := l.Model()
		refusedAt := int64(-1)
		for i := range 1000 {
			at := int64(i)
			if d := m.Allow(at, 1); !d.Allowed && refusedAt < 0 {
				refusedAt = at
			}
		}
		if e.Algo == Slowdown {
			if refusedAt >= 0 {
				t.Errorf("%s refused at %d ms: it only delays", spec, refusedAt)
			}
			continue
		}
		if refusedAt < 0 {
			t.Fatalf("%s: no refusal in 1000 calls", spec)
		}
		if m.Allow(refusedAt+4999, 1).Allowed {
			t.Errorf("%s admitted 4.999 s after its first refusal, inside the block", spec)
		}
		if !m.Allow(refusedAt+5000, 1).Allowed {
			t.Errorf("%s refused 5 s after its first refusal: the block is over, the key clean", spec)
		}
	}
}

// TestOptionsHaveHelp: every option says in one line what it does (load
// --help is made from these).
func TestOptionsHaveHelp(t *testing.T) {
	for _, e := range registry {
		for _, o := range e.Options {
			if o.Help == "" || strings.Contains(o.Help, "\n") {
				t.Errorf("%s option %s: help %q, want one line", e.Algo, o.Key, o.Help)
			}
		}
	}
}

// TestLoadDocListsEveryOption: docs/load.md's model table names every
// model and every option key of the registry.
func TestLoadDocListsEveryOption(t *testing.T) {
	raw, err := os.ReadFile("../docs/load.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, e := range registry {
		if !strings.Contains(doc, "| `"+string(e.Algo)+"` |") {
			t.Errorf("docs/load.md has no row for %s", e.Algo)
		}
		for _, o := range e.Options {
			if !strings.Contains(doc, "`"+o.Key+"=") {
				t.Errorf("docs/load.md names no %s= (an option of %s)", o.Key, e.Algo)
			}
		}
	}
}
