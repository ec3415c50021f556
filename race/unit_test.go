package race

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/stats"
)

func TestValidate(t *testing.T) {
	ok := Options{Concurrency: 200, Limit: 10, Trials: 3}
	tests := []struct {
		name string
		mod  func(*Options)
		want string // "" = valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"zero concurrency", func(o *Options) { o.Concurrency = 0 }, "--concurrency"},
		{"negative concurrency", func(o *Options) { o.Concurrency = -3 }, "--concurrency"},
		{"zero limit", func(o *Options) { o.Limit = 0 }, "--limit"},
		{"negative limit", func(o *Options) { o.Limit = -1 }, "--limit"},
		{"limit above the bucket's capacity", func(o *Options) { o.Limit = 2_000_000_000 }, "--limit"},
		{"zero trials", func(o *Options) { o.Trials = 0 }, "--trials"},
		{"unknown strategy", func(o *Options) { o.Strategies = []string{"naive", "lock"} }, `unknown strategy "lock"`},
		{"no strategy at all", func(o *Options) { o.Strategies = []string{} }, "no strategy"},
		// --strategies ' ' and --strategies , parse to blank names.
		{"blank strategy", func(o *Options) { o.Strategies = []string{" "} }, "no strategy"},
		{"only commas", func(o *Options) { o.Strategies = []string{"", ""} }, "no strategy"},
		{"blank strategy with a user script", func(o *Options) { o.Strategies = []string{" "}; o.User = &UserScript{Path: "x.lua"} }, ""},
		{"only a user script", func(o *Options) { o.Strategies = []string{}; o.User = &UserScript{Path: "x.lua"} }, ""},
		{"negative watch attempts", func(o *Options) { o.WatchAttempts = -1 }, "--watch-attempts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.mod(&o)
			err := o.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || exitcode.Code(err) != exitcode.Usage {
				t.Fatalf("Validate() = %v (exit %d), want exit 2 mentioning %q", err, exitcode.Code(err), tt.want)
			}
		})
	}
}

func TestParseStrategies(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
	}{
		{nil, Names()},
		{[]string{"script", " NAIVE ", "script", ""}, []string{Script, Naive}},
		{[]string{}, nil},
	}
	for _, tt := range tests {
		got, err := ParseStrategies(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseStrategies(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestKeyOneHashTag(t *testing.T) {
	id := NewRunID()
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("NewRunID() = %q, want 12 hex digits", id)
	}
	if got, want := Key(id, Naive, 2), "race:{"+id+"}:naive:2"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	if NewRunID() == id {
		t.Errorf("two run ids are equal")
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", []string{}, ""},
		{"  60000 {limit}   {uuid} ", []string{"60000", "{limit}", "{uuid}"}, ""},
		{"req-{uuid} {now_ms}", []string{"req-{uuid}", "{now_ms}"}, ""},
		{`{"json":1}`, []string{`{"json":1}`}, ""},
		{"{Limit}", nil, "unknown placeholder {Limit}"},
		{"{limit} {now}", nil, "unknown placeholder {now}"},
	}
	for _, tt := range tests {
		got, err := ParseArgs(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitcode.Code(err) != exitcode.Usage {
				t.Errorf("ParseArgs(%q) error = %v, want exit 2 with %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseArgs(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestExpandArgs(t *testing.T) {
	ids := []string{"id-1", "id-2"}
	n := 0
	newID := func() string { n++; return ids[n-1] }
	now := func() time.Time { return time.UnixMilli(1_700_000_000_123) }
	got := expandArgs([]string{"{limit}", "a-{uuid}", "{uuid}", "{now_ms}", "x{limit}y", "plain"}, 42, newID, now)
	want := []any{"42", "a-id-1", "id-2", "1700000000123", "x42y", "plain"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expandArgs = %q, want %q", got, want)
	}
}

func TestAllowed(t *testing.T) {
	tests := []struct {
		reply   any
		want    bool
		wantErr bool
	}{
		{[]any{int64(1), int64(9)}, true, false},
		{[]any{int64(0)}, false, false},
		{int64(1), true, false},
		{[]any{true}, true, false},
		{[]any{nil}, false, false},
		{"1", true, false},
		{[]any{"0", "x"}, false, false},
		{[]any{int64(2)}, false, true},
		{[]any{}, false, true},
		{"yes", false, true},
		{[]any{1.5}, false, true},
	}
	for _, tt := range tests {
		got, err := Allowed(tt.reply, judge.Reply{})
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("Allowed(%#v) = %v, %v; want %v, error %v", tt.reply, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestPercentileAndSpread(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i)*time.Microsecond)
	}
	for _, tt := range []struct {
		p    int
		want time.Duration
	}{{50, 100 * time.Microsecond}, {99, 198 * time.Microsecond}, {100, 200 * time.Microsecond}} {
		if got := stats.Percentile(d, float64(tt.p)); got != tt.want {
			t.Errorf("percentile(1..200µs, %d) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := stats.Percentile([]time.Duration(nil), 50); got != 0 {
		t.Errorf("percentile(nil) = %v, want 0", got)
	}
	if got := stats.Percentile(d[:1], 99); got != time.Microsecond {
		t.Errorf("percentile(one value, 99) = %v, want 1µs", got)
	}
	for _, tt := range []struct {
		in     []int
		lo, hi int
		median float64
	}{
		{[]int{200, 10, 187}, 10, 200, 187},
		{[]int{4, 1, 3, 2}, 1, 4, 2.5},
		{[]int{7}, 7, 7, 7},
	} {
		lo, m, hi := spread(tt.in)
		if lo != tt.lo || m != tt.median || hi != tt.hi {
			t.Errorf("spread(%v) = %d, %v, %d; want %d, %v, %d", tt.in, lo, m, hi, tt.lo, tt.median, tt.hi)
		}
	}
}

func TestEnsureFDLimit(t *testing.T) {
	errDenied := errors.New("operation not permitted")
	tests := []struct {
		name       string
		need       uint64
		cur, hard  uint64
		setFails   map[uint64]bool
		want       FDLimit
		wantErr    string
		getFails   bool
		wantRaised bool
	}{
		{name: "enough", need: 264, cur: 1024, hard: 4096, want: FDLimit{1024, 1024, 4096}},
		{name: "raised to hard", need: 10064, cur: 1024, hard: 524288, want: FDLimit{1024, 524288, 524288}, wantRaised: true},
		{name: "hard unsettable, need works", need: 10064, cur: 1024, hard: 1 << 62, setFails: map[uint64]bool{1 << 62: true}, want: FDLimit{1024, 10064, 1 << 62}, wantRaised: true},
		{name: "hard too low", need: 10064, cur: 1024, hard: 4096, wantErr: "ulimit -n 10064"},
		{name: "raising fails", need: 10064, cur: 1024, hard: 20000, setFails: map[uint64]bool{20000: true, 10064: true}, wantErr: "raising it failed"},
		{name: "platform without limits", need: 10064, getFails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			get := func() (uint64, uint64, error) {
				if tt.getFails {
					return 0, 0, errNoRlimit
				}
				return tt.cur, tt.hard, nil
			}
			set := func(v uint64) error {
				if tt.setFails[v] {
					return errDenied
				}
				return nil
			}
			got, err := ensureFDLimit(tt.need, get, set)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitcode.Code(err) != exitcode.Usage {
					t.Fatalf("ensureFDLimit = %v (exit %d), want exit 2 with %q", err, exitcode.Code(err), tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || got.Raised() != tt.wantRaised {
				t.Fatalf("ensureFDLimit = %+v, %v; want %+v (raised %v)", got, err, tt.want, tt.wantRaised)
			}
		})
	}
	if got := FDsNeeded(10000, false); got != 10064 {
		t.Errorf("FDsNeeded(10000, false) = %d, want 10064", got)
	}
	if got := FDsNeeded(10000, true); got != 20064 {
		t.Errorf("FDsNeeded(10000, true) = %d, want 20064", got)
	}
}

func TestJudge(t *testing.T) {
	mk := func(name string, atomic bool, admitted ...int) Strategy {
		s := Strategy{Name: name, Label: name + "-label", AtomicExpected: atomic, Allowed: admitted}
		for range admitted {
			s.Errors = append(s.Errors, 0)
			s.GiveUps = append(s.GiveUps, 0)
		}
		s.AllowedMin, _, s.AllowedMax = spread(admitted)
		return s
	}
	r := Result{Concurrency: 200, Limit: 10, WatchAttempts: 10, Strategies: []Strategy{
		mk(Naive, false, 10, 10), mk(Multi, false, 200, 200), mk(Incr, true, 10, 11), mk(User, true, 10, 10),
	}}
	setVerdict(&r)
	if r.Verdict != "fail" || len(r.Failures()) != 1 || !strings.Contains(r.Failures()[0], "over-admission: incr-label admitted 11 of 200 with limit 10 in trial 2") {
		t.Errorf("verdict %q failures %q, want fail naming incr-label in trial 2", r.Verdict, r.Failures())
	}
	if r.RaceReproduced == nil || *r.RaceReproduced {
		t.Errorf("race_reproduced = %v, want false", r.RaceReproduced)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "not reproduced at this concurrency") {
		t.Errorf("notes %q, want the not-reproduced note", r.Notes)
	}
}

// TestJudgeUnderAdmission: the exact strategies (incr, script, a user
// script) fail when they admit fewer than min(limit, concurrency); watch,
// which gives up under contention, and the racy ones only get notes.
func TestJudgeUnderAdmission(t *testing.T) {
	mk := func(name string, admitted, errs, giveUps int) Strategy {
		s := Strategy{Name: name, Label: name + "-label", AtomicExpected: name != Naive && name != Multi,
			Allowed: []int{admitted}, Errors: []int{errs}, GiveUps: []int{giveUps}}
		s.AllowedMin, _, s.AllowedMax = spread(s.Allowed)
		return s
	}
	tests := []struct {
		name        string
		conc        int
		s           Strategy
		wantFailure string // "" for none
	}{
		{"user script admits nothing", 200, mk(User, 0, 0, 0), "under-admission: user-label admitted 0 of 200 with limit 10 in trial 1"},
		{"user script admits one", 200, mk(User, 1, 0, 0), "under-admission: user-label admitted 1 of 200 with limit 10"},
		{"user script exact", 200, mk(User, 10, 0, 0), ""},
		{"built-in script short", 200, mk(Script, 9, 0, 0), "under-admission: script-label admitted 9 of 200"},
		{"incr short, calls failed", 200, mk(Incr, 8, 2, 0), "under-admission: incr-label admitted 8 of 200 with limit 10 in trial 1 (2 calls failed)"},
		{"incr short, one call failed", 200, mk(Incr, 9, 1, 0), "under-admission: incr-label admitted 9 of 200 with limit 10 in trial 1 (1 call failed)"},
		{"fewer goroutines than the limit", 5, mk(User, 5, 0, 0), ""},
		{"fewer goroutines, one short", 5, mk(User, 4, 0, 0), "under-admission: user-label admitted 4 of 5 with limit 10"},
		{"watch gives up: a note", 200, mk(Watch, 3, 0, 190), ""},
		{"naive under: nothing", 200, mk(Naive, 3, 0, 0), ""},
		{"multi under: nothing", 200, mk(Multi, 0, 0, 0), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Result{Concurrency: tt.conc, Limit: 10, WatchAttempts: 10, Strategies: []Strategy{tt.s}}
			setVerdict(&r)
			got := strings.Join(r.Failures(), "; ")
			if tt.wantFailure == "" && (r.Verdict != "pass" || got != "") || tt.wantFailure != "" && (r.Verdict != "fail" || !strings.Contains(got, tt.wantFailure)) {
				t.Errorf("verdict %q failures %q, want %q", r.Verdict, got, tt.wantFailure)
			}
		})
	}
}

// replyError is an error reply of the server, as go-redis returns it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

func TestIsUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"eof", io.EOF, true},
		{"wrapped eof", fmt.Errorf("run token-bucket script on k: %w", io.EOF), true},
		{"connection refused", refused, true},
		{"connection reset", fmt.Errorf("x: %w", reset), true},
		{"broken pipe", syscall.EPIPE, true},
		{"i/o timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"cancelled", context.Canceled, false},
		{"server error reply", replyError("OOM command not allowed when used memory > 'maxmemory'"), false},
		{"script reply", errors.New("script replied [maybe]: the first element must be 1 (allowed) or 0 (refused)"), false},
	}
	for _, tt := range tests {
		if got := IsUnreachable(tt.err); got != tt.want {
			t.Errorf("IsUnreachable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestCallsError(t *testing.T) {
	const addr, pattern = "127.0.0.1:7101", "race:{abc}:*"
	oom := replyError("OOM command not allowed")
	noperm := replyError("NOPERM this user has no permissions to run the 'pexpire' command")
	nopermKey := replyError("NOPERM this user has no permissions to access one of the keys used as arguments")
	nopermScript := replyError("ERR The user executing the script can't run this command or subcommand script: 1f2e, on @user_script:1.")
	outs := func(n int, errs ...error) trial {
		tr := trial{outcomes: make([]outcome, n)}
		for i, e := range errs {
			tr.outcomes[i].err = e
		}
		return tr
	}
	user := newUserStrategy(&UserScript{Path: "/x/mine.lua"}, 10)
	tests := []struct {
		name string
		s    strategy
		tr   trial
		code int    // 0: no error
		want string // in the message
	}{
		{"all fine", &incr{}, outs(4), 0, ""},
		{"some server errors are only noted", &incr{}, outs(4, oom, oom), 0, ""},
		{"one lost call", &getSet{}, outs(4, nil, io.EOF), exitcode.Unreachable,
			"redis at 127.0.0.1:7101 did not answer while racing naive GET+SET in trial 2 (1 of 4 calls failed): EOF"},
		{"timeout", &incr{}, outs(2, redis.ErrPoolTimeout, redis.ErrPoolTimeout), exitcode.Unreachable, "raise --redis-timeout"},
		{"server refuses every call", &incr{}, outs(2, oom, oom), exitcode.Unreachable, "redis at 127.0.0.1:7101 refused every INCR call in trial 2: OOM"},
		{"user script fails every call", user, outs(2, errors.New("script replied [maybe]"), errors.New("script replied [maybe]")), exitcode.Usage,
			"--script mine.lua failed on every call in trial 2: script replied [maybe]; its reply must start with 1"},
		{"user script errors every call", user, outs(1, oom), exitcode.Usage, "fix the script or its --args"},
		{"one call refused by the ACL", &incr{}, outs(4, nil, noperm), exitcode.Unreachable,
			"redis at 127.0.0.1:7101 refused 1 of 4 INCR calls in trial 2: NOPERM this user has no permissions to run the 'pexpire' command; the ACL user may not run PEXPIRE: add +pexpire"},
		{"a key refused by the ACL", &getSet{}, outs(2, nopermKey, nopermKey), exitcode.Unreachable, "add ~race:* to its rules"},
		{"the user script's command refused by the ACL", user, outs(1, nopermScript), exitcode.Unreachable, "refused 1 of 1 mine.lua calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := callsError(tt.s, tt.tr, 2, addr, pattern)
			if exitcode.Code(err) != tt.code || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("callsError = %v (exit %d), want exit %d with %q", err, exitcode.Code(err), tt.code, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("callsError = %q, want one line", err)
			}
		})
	}
}

// FuzzParseArgs: ParseArgs never panics, accepts only the known
// placeholders, and the expanded ARGV holds none of them.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"60000 {limit} {uuid}", "{limit} 1", "req-{uuid}-{now_ms}", "{limt}", "{", "{}", "{{limit}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := ParseArgs(s)
		if err != nil {
			if exitcode.Code(err) != exitcode.Usage {
				t.Fatalf("ParseArgs(%q) error %v is not exit 2", s, err)
			}
			return
		}
		now := func() time.Time { return time.UnixMilli(1700000000000) }
		for _, a := range expandArgs(words, 10, func() string { return "id" }, now) {
			w := a.(string)
			if strings.Contains(w, PlaceholderLimit) || strings.Contains(w, PlaceholderUUID) || strings.Contains(w, PlaceholderNowMs) {
				t.Fatalf("ParseArgs(%q): expanded word %q still holds a placeholder", s, w)
			}
		}
	})
}

// TestJudgePlurals: counts of one read "1 request", "1 attempt".
func TestJudgePlurals(t *testing.T) {
	for _, tt := range []struct {
		giveUps, attempts int
		want              string
	}{
		{1, 1, "because 1 request gave up after 1 attempt;"},
		{2, 10, "because 2 requests gave up after 10 attempts;"},
	} {
		s := Strategy{Name: Watch, Label: "watch-label", AtomicExpected: true, Allowed: []int{9}, Errors: []int{0}, GiveUps: []int{tt.giveUps}}
		s.AllowedMin, _, s.AllowedMax = spread(s.Allowed)
		r := Result{Concurrency: 200, Limit: 10, WatchAttempts: tt.attempts, Strategies: []Strategy{s}}
		setVerdict(&r)
		if got := strings.Join(r.Notes, "; "); !strings.Contains(got, tt.want) {
			t.Errorf("notes %q, want %q", got, tt.want)
		}
	}
	if got := warmErrorText(1); !strings.Contains(got, "open 1 connection to ") {
		t.Errorf("warm-up error for one connection = %q, want 'open 1 connection'", got)
	}
}

// warmErrorText is warmError's message for n connections of which the
// first failed with a plain error.
func warmErrorText(n int) string {
	errs := make([]error, n)
	errs[0] = errors.New("boom")
	node := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer node.Close()
	err := warmError(context.Background(), node, errs, false)
	if err == nil {
		return ""
	}
	return err.Error()
}
