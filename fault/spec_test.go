package fault

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in   string
		want Spec
	}{
		{"pause:3s@10s", Spec{Kind: Pause, At: 10 * time.Second, For: 3 * time.Second}},
		{"pause-write:500ms@2s", Spec{Kind: PauseWrite, At: 2 * time.Second, For: 500 * time.Millisecond}},
		{"stop:1m30s@0s", Spec{Kind: Stop, For: 90 * time.Second}},
		{"drop-clients@10s", Spec{Kind: DropClients, At: 10 * time.Second}},
		{"flush-scripts@0", Spec{Kind: FlushScripts}},
		{"failover@1h", Spec{Kind: Failover, At: time.Hour}},
		{"restart@250ms", Spec{Kind: Restart, At: 250 * time.Millisecond}},
		{"  PAUSE:1ms@24h ", Spec{Kind: Pause, At: 24 * time.Hour, For: time.Millisecond}},
		{"pause:1h@0s", Spec{Kind: Pause, For: time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSpec(tt.in)
			if err != nil {
				t.Fatalf("ParseSpec(%q) error: %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseSpec(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			again, err := ParseSpec(got.String())
			if err != nil || again != got {
				t.Errorf("ParseSpec(%q) = %+v, %v; want %+v again", got.String(), again, err, got)
			}
		})
	}
}

func TestParseSpecRefuses(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty"},
		{"pause:3s", "no @OFFSET"},
		{"pause@10s", "pause needs a duration"},
		{"stop@10s", "stop needs a duration"},
		{"drop-clients:3s@10s", "takes no duration"},
		{"failover:1s@1s", "takes no duration"},
		{"nap:3s@10s", `unknown kind "nap"`},
		{"pause:3s@-1s", "negative"},
		{"pause:-3s@1s", "negative"},
		{"pause:0s@1s", "shorter than 1ms"},
		{"pause:1.5ms@1s", "whole number of milliseconds"},
		{"pause:3s@1.0001s", "whole number of milliseconds"},
		{"pause:2h@1s", "more than 1h0m0s"},
		{"pause:1s@25h", "more than 24h0m0s"},
		{"pause:3x@1s", `"3x" is not a duration`},
		{"pause:3s@1s@2s", "more than one @"},
		{"pause: 3s@1s", "white space"},
		{"pause:3s@1s\nrestart@2s", "white space or a control character"},
		{"pause:@1s", "duration is empty"},
		{"pause:1s@", "offset is empty"},
		{"pause:99999999999999999999999999999999999h@1s", "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseSpec(tt.in)
			if err == nil {
				t.Fatalf("ParseSpec(%q) = nil error, want one containing %q", tt.in, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseSpec(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Errorf("ParseSpec(%q) exit code = %d, want %d", tt.in, code, exitcode.Usage)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("ParseSpec(%q) error is not one line: %q", tt.in, err)
			}
		})
	}
}

func TestParsePlanSortsAndRefusesOverlaps(t *testing.T) {
	p, err := ParsePlan([]string{"drop-clients@20s", "pause:3s@10s", "flush-scripts@13s", "restart@13001ms"})
	if err != nil {
		t.Fatalf("ParsePlan: %v", err)
	}
	var got []string
	for _, s := range p {
		got = append(got, s.String())
	}
	want := "pause:3s@10s flush-scripts@13s restart@13.001s drop-clients@20s"
	if strings.Join(got, " ") != want {
		t.Errorf("ParsePlan order = %v, want %s", got, want)
	}

	refused := []struct {
		specs []string
		want  string
	}{
		{[]string{"pause:3s@10s", "drop-clients@12s"}, "faults pause:3s@10s and drop-clients@12s overlap on the same server; start drop-clients at 13s or later"},
		{[]string{"flush-scripts@5s", "drop-clients@5s"}, "faults flush-scripts@5s and drop-clients@5s overlap"},
		// the long fault is not the one just before
		{[]string{"stop:10s@0s", "flush-scripts@2s", "restart@3s"}, "faults stop:10s@0s and flush-scripts@2s overlap"},
		{[]string{"pause:5s@0s", "drop-clients@5s", "flush-scripts@5s"}, "faults drop-clients@5s and flush-scripts@5s overlap"},
		{nil, "no fault given"},
	}
	for _, tt := range refused {
		_, err := ParsePlan(tt.specs)
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParsePlan(%q) error = %v (exit %d), want exit 2 containing %q", tt.specs, err, exitcode.Code(err), tt.want)
		}
	}
	many := make([]string, MaxFaults+1)
	for i := range many {
		many[i] = "flush-scripts@" + (time.Duration(i) * time.Second).String()
	}
	if _, err := ParsePlan(many); err == nil || exitcode.Code(err) != exitcode.Usage {
		t.Errorf("ParsePlan(%d faults) error = %v, want exit 2", len(many), err)
	}
	// touching windows are fine
	if _, err := ParsePlan([]string{"pause:3s@10s", "stop:1s@13s", "drop-clients@14s"}); err != nil {
		t.Errorf("ParsePlan(touching windows) = %v, want nil", err)
	}
}

func TestNewPlanRefusesSpecsParseWouldRefuse(t *testing.T) {
	for _, s := range []Spec{
		{Kind: "nap", At: time.Second},
		{Kind: DropClients, At: time.Second, For: time.Second},
		{Kind: Pause, At: time.Second},
		{Kind: Pause, At: -time.Second, For: time.Second},
	} {
		if _, err := NewPlan(s); err == nil || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("NewPlan(%+v) error = %v, want exit 2", s, err)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"pause:3s@10s", "pause-write:500ms@2s", "drop-clients@10s", "flush-scripts@0",
		"failover@1h", "stop:1m30s@0s", "restart@250ms", "pause:1.5ms@1s", "pause:@", "@", ":@:", "pause:3s@1s@2s",
		"PAUSE:1ms@24h", "stop:9223372036854775807ns@0s", "pause:1e3s@0s", "restart@\x00", "pause:3s@10s\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSpec(in)
		if err != nil {
			if exitcode.Code(err) != exitcode.Usage {
				t.Fatalf("ParseSpec(%q) exit code = %d, want 2 (%v)", in, exitcode.Code(err), err)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("ParseSpec(%q) error is not one line: %q", in, err)
			}
			return
		}
		if !s.Kind.valid() || s.At < 0 || s.At > MaxOffset || s.At%time.Millisecond != 0 {
			t.Fatalf("ParseSpec(%q) = %+v: kind or offset out of bounds", in, s)
		}
		if s.Kind.Timed() != (s.For > 0) || s.For > MaxDuration || s.For%time.Millisecond != 0 {
			t.Fatalf("ParseSpec(%q) = %+v: duration out of bounds", in, s)
		}
		again, err := ParseSpec(s.String())
		if err != nil || again != s {
			t.Fatalf("ParseSpec(%q) = %+v, %v; want %+v (from %q)", s.String(), again, err, s, in)
		}
		if _, err := NewPlan(s); err != nil {
			t.Fatalf("NewPlan(%+v) = %v, want nil for a spec ParseSpec read", s, err)
		}
	})
}

func TestParseNodes(t *testing.T) {
	text := "07c3 127.0.0.1:30004@31004,host.example slave e7d1 0 1426238317239 4 connected\n" +
		"e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461-<-292f]\n" +
		"292f ::1:30002@31002 master,fail? - 0 1426238316232 2 connected 5461 5462-10922\n" +
		"6ec2 :0@0 master,noaddr - 1426238316232 1426238316232 5 disconnected\n"
	nodes, err := ParseNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 {
		t.Fatalf("ParseNodes = %d nodes, want 4", len(nodes))
	}
	if n := nodes[0]; n.Addr != "127.0.0.1:30004" || n.Primary() || n.PrimaryID != "e7d1" || !n.Healthy() || n.Epoch != 4 {
		t.Errorf("replica = %+v", n)
	}
	if n := nodes[1]; !n.Myself() || !n.Primary() || len(n.Slots) != 1 || n.Slots[0] != [2]int{0, 5460} || !n.Serves(5460) || n.Serves(5461) {
		t.Errorf("myself = %+v", n)
	}
	if n := nodes[2]; n.Addr != "[::1]:30002" || n.Healthy() || !n.Serves(5461) || !n.Serves(10922) {
		t.Errorf("ipv6 primary = %+v", n)
	}
	if n := nodes[3]; n.Addr != "" || n.Healthy() {
		t.Errorf("noaddr node = %+v", n)
	}
	s, ok := ShardOf(nodes, 100)
	if !ok || s.Primary.ID != "e7d1" || len(s.Replicas) != 1 || s.Replicas[0].ID != "07c3" {
		t.Errorf("ShardOf(100) = %+v, %v", s, ok)
	}
	if Promoted(nodes, 100) {
		t.Error("Promoted: myself (epoch 1) is not above the others (epochs 2, 4, 5)")
	}
	for _, bad := range []string{"", "a b c", "x 1:2@3 master - 0 0 1 connected 9-2", "x 1:2@3 master - 0 0 -1 connected", "x 1:2@3 master - 0 0 1 connected 16384"} {
		if _, err := ParseNodes(bad); err == nil {
			t.Errorf("ParseNodes(%q) = nil error", bad)
		}
	}
}

// TestPromotedAfterTheOldPrimaryFollows: the view of a replica that won
// its election, before and after the old primary follows it (listed then
// with its new primary's epoch, as CLUSTER NODES lists every replica).
func TestPromotedAfterTheOldPrimaryFollows(t *testing.T) {
	for _, tt := range []struct {
		name, nodes string
		want        bool
	}{
		{"old primary not yet reconfigured", "n1 127.0.0.1:30001@31001 myself,master - 0 0 3 connected 0-5460\n" +
			"o1 127.0.0.1:30004@31004 master,fail? - 0 0 1 connected\n" +
			"p2 127.0.0.1:30002@31002 master - 0 0 2 connected 5461-16383\n", true},
		{"old primary follows", "n1 127.0.0.1:30001@31001 myself,master - 0 0 3 connected 0-5460\n" +
			"o1 127.0.0.1:30004@31004 slave n1 0 0 3 connected\n" +
			"p2 127.0.0.1:30002@31002 master - 0 0 2 connected 5461-16383\n", true},
		{"another primary as new", "n1 127.0.0.1:30001@31001 myself,master - 0 0 3 connected 0-5460\n" +
			"o1 127.0.0.1:30004@31004 slave n1 0 0 3 connected\n" +
			"p2 127.0.0.1:30002@31002 master - 0 0 3 connected 5461-16383\n", false},
	} {
		nodes, err := ParseNodes(tt.nodes)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := Promoted(nodes, 100); got != tt.want {
			t.Errorf("%s: Promoted = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func FuzzParseNodes(f *testing.F) {
	f.Add("e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460\n07c3 127.0.0.1:30004@31004 slave e7d1 0 1 4 connected\n")
	f.Add("292f ::1:30002@31002,h master - 0 1 2 connected 5461 [5462-<-x]")
	f.Fuzz(func(t *testing.T, text string) {
		nodes, err := ParseNodes(text)
		if err != nil {
			return
		}
		for _, n := range nodes {
			for _, r := range n.Slots {
				if r[0] < 0 || r[1] < r[0] || r[1] > 16383 {
					t.Fatalf("ParseNodes(%q): slot range %v out of bounds", text, r)
				}
			}
			if n.Epoch < 0 {
				t.Fatalf("ParseNodes(%q): negative epoch", text)
			}
		}
		for _, slot := range []int{0, 8000, 16383} {
			ShardOf(nodes, slot)
			Promoted(nodes, slot)
		}
	})
}
