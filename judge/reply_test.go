package judge

import (
	"testing"
)

func TestParseReply(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "allowed,remaining,retry:s,reset:s", want: "allowed,remaining,retry:s,reset:s"},
		{in: " Allowed , remaining , retry ", want: "allowed,remaining,retry:ms"},
		{in: "ignore,allowed,ignore,reset:ms", want: "ignore,allowed,ignore,reset:ms"},
		{in: "remaining,retry", bad: true},    // no allowed
		{in: "allowed,allowed", bad: true},    // twice
		{in: "allowed,retry:h", bad: true},    // unit
		{in: "allowed:s", bad: true},          // unit on allowed
		{in: "allowed,,remaining", bad: true}, // empty element
		{in: "allowed,tokens", bad: true},     // unknown meaning
		{in: "", bad: true},
	} {
		r, err := ParseReply(tc.in)
		switch {
		case tc.bad && err == nil:
			t.Errorf("ParseReply(%q) = %s, want an error", tc.in, r)
		case !tc.bad && err != nil:
			t.Errorf("ParseReply(%q): %v", tc.in, err)
		case !tc.bad && r.String() != tc.want:
			t.Errorf("ParseReply(%q) = %s, want %s", tc.in, r, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	redisRate, _ := ParseReply("allowed,remaining,retry:s,reset:s")
	three, _ := ParseReply("allowed,remaining,retry")
	p := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name  string
		r     Reply
		reply any
		ok    bool
		want  Decision
	}{
		{"default four", Reply{}, []any{int64(0), int64(0), int64(394), int64(2000)}, true, Decision{false, p(0), p(394), p(2000)}},
		{"default three is allowed, remaining, retry", Reply{}, []any{int64(0), int64(2), int64(394)}, true, Decision{false, p(2), p(394), nil}},
		{"default scalar", Reply{}, int64(1), true, Decision{Allowed: true}},
		{"default nil", Reply{}, nil, true, Decision{}},
		{"default not a decision", Reply{}, []any{int64(7), int64(1)}, false, Decision{}},
		{"redis_rate refused", redisRate, []any{int64(0), int64(0), "0.19849294424057007", "0.998492956161499"}, true, Decision{false, p(0), p(199), p(999)}},
		{"redis_rate allowed", redisRate, []any{int64(1), int64(4), "-1", "0.19999998807907104"}, true, Decision{true, p(4), p(-1), p(200)}},
		{"redis_rate admitted a cost of 3", redisRate, []any{int64(3), int64(4), "-1", "0.6"}, true, Decision{true, p(4), p(-1), p(600)}},
		{"too short", redisRate, []any{int64(1), int64(4)}, false, Decision{}},
		{"not a number", three, []any{int64(1), "many", int64(0)}, false, Decision{}},
		{"three", three, []any{int64(0), int64(0), int64(120)}, true, Decision{false, p(0), p(120), nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, why, ok := tc.r.Decide(tc.reply)
			if ok != tc.ok {
				t.Fatalf("Decide(%v) ok = %v (%s), want %v", tc.reply, ok, why, tc.ok)
			}
			if !ok {
				if why == "" {
					t.Errorf("Decide(%v) says no reason", tc.reply)
				}
				return
			}
			eq := func(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
			if d.Allowed != tc.want.Allowed || !eq(d.Remaining, tc.want.Remaining) || !eq(d.RetryMs, tc.want.RetryMs) || !eq(d.ResetMs, tc.want.ResetMs) {
				t.Errorf("Decide(%v) = %+v, want %+v", tc.reply, show(d), show(tc.want))
			}
		})
	}
}

func show(d Decision) []any {
	v := func(p *int64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	return []any{d.Allowed, v(d.Remaining), v(d.RetryMs), v(d.ResetMs)}
}
