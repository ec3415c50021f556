package cmd

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limtest"
	"github.com/ratelimit-dev/ratelimit/probe"
)

// TestProbeResetHTTPDate: X-RateLimit-Reset sent as an HTTP-date (GMT,
// and UTC as some limiters write it) is read and judged by the reset
// check like an epoch: an honest date passes; a date 3 s early (the
// quota not back when it says) fails.
func TestProbeResetHTTPDate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, zone string
		skew       time.Duration
		want       string
	}{
		{"GMT", "GMT", 0, "pass"},
		{"UTC", "UTC", 0, "pass"},
		{"early", "GMT", -3 * time.Second, "fail"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.TickingWindow, Limit: 5, Window: 5 * time.Second,
				KeyHeader: probe.DefaultIdentityHeader, DateReset: true, DateZone: tt.zone, DateSkew: tt.skew})
			tf := newTestFactory(t)
			tf.Now = time.Now
			code := tf.execute(t, "probe", url+"/x", "-o", "json")
			var doc struct {
				Checks []struct {
					ID       string   `json:"id"`
					Status   string   `json:"status"`
					Message  string   `json:"message"`
					Evidence []string `json:"evidence"`
				} `json:"checks"`
			}
			if err := json.Unmarshal(tf.Out.Bytes(), &doc); err != nil {
				t.Fatalf("exit %d: %v\n%s\n%s", code, err, tf.Out.String(), tf.ErrOut.String())
			}
			for _, c := range doc.Checks {
				if c.ID == probe.CheckReset {
					if c.Status != tt.want {
						t.Fatalf("reset check %s (%s, %v), want %s; exit %d", c.Status, c.Message, c.Evidence, tt.want, code)
					}
					t.Logf("reset: %s: %s %v", c.Status, c.Message, c.Evidence)
					return
				}
			}
			t.Fatalf("no reset check: %s", tf.Out.String())
		})
	}
}
