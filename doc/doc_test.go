package doc

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/version"
)

func TestStampMasksTheCommandLine(t *testing.T) {
	var h Header
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	h.Stamp(ToolOf(version.Info{Version: "v1.2.0", Revision: "0123456789abcdef0123"}), start,
		[]string{"ratelimit", "race", "--redis", "redis://ops:pw@127.0.0.1:7101", "--redis=redis://:pw2@h/0?password=pw3"})
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"pw@", "pw2", "pw3"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("header %s carries %q", data, secret)
		}
	}
	if !h.StartedAt.Equal(start) || h.Tool.String() != "ratelimit v1.2.0 (0123456789ab)" || h.Command[3] != "redis://ops:xxxxx@127.0.0.1:7101" {
		t.Errorf("stamped header = %+v, tool %q", h, h.Tool)
	}
	// a start the domain recorded (load's clock start) is kept
	own := start.Add(time.Hour)
	h = Header{StartedAt: own}
	h.Stamp(nil, start, nil)
	if !h.StartedAt.Equal(own) {
		t.Errorf("StartedAt = %v, want the domain's %v", h.StartedAt, own)
	}
}

func TestHeaderJSON(t *testing.T) {
	data, err := json.Marshal(Header{Kind: "race", Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != `{"kind":"race","version":2,"server":null}` {
		t.Errorf("empty header = %s; want kind, version and a null server only", got)
	}
	s := &Server{Product: "redis", Version: "7.2.4", Mode: "cluster", Primaries: 3, Addr: "redis://u:secret@10.0.0.1:6379"}
	data, err = json.Marshal(Header{Kind: "eval", Version: 2, Server: s})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret") || !strings.Contains(string(data), `"addr":"redis://u:xxxxx@10.0.0.1:6379"`) {
		t.Errorf("server JSON %s shows the password", data)
	}
	if got := s.String(); got != "redis 7.2.4, cluster with 3 primaries, redis://u:xxxxx@10.0.0.1:6379" {
		t.Errorf("String() = %q", got)
	}
}

func TestPassIgnoresWarnings(t *testing.T) {
	tests := []struct {
		name     string
		checks   []Check
		pass     bool
		failures int
	}{
		{"none", nil, true, 0},
		{"all pass", []Check{{ID: "a", Pass: true}, {ID: "b", Pass: true, Skipped: true}}, true, 0},
		{"a failed warning", []Check{{ID: "a", Pass: true}, {ID: "w", Pass: false, Warning: true, Message: "slow"}}, true, 0},
		{"a failure", []Check{{ID: "a", Pass: false, Message: "over"}, {ID: "w", Pass: false, Warning: true}}, false, 1},
	}
	for _, tt := range tests {
		if got := Pass(tt.checks); got != tt.pass {
			t.Errorf("%s: Pass = %v, want %v", tt.name, got, tt.pass)
		}
		if got := Failures(tt.checks); len(got) != tt.failures {
			t.Errorf("%s: Failures = %q, want %d", tt.name, got, tt.failures)
		}
		if want := map[bool]string{true: "pass", false: "fail"}[tt.pass]; Verdict(tt.checks) != want {
			t.Errorf("%s: Verdict = %q, want %q", tt.name, Verdict(tt.checks), want)
		}
	}
}
