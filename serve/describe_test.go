package serve

import (
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestDescribeForwardedFor: the startup line says how X-Forwarded-For is
// read, and --break trust-xff does not claim it is ignored (issue 25).
func TestDescribeForwardedFor(t *testing.T) {
	client := redistest.Embedded(t).Client
	tests := []struct {
		cfg       Config
		want, not string
	}{
		{Config{}, "(X-Forwarded-For ignored)", "trusted"},
		{Config{TrustProxy: 1}, "(X-Forwarded-For trusted from 1 proxy)", "ignored"},
		{Config{TrustProxy: 2}, "(X-Forwarded-For trusted from 2 proxies)", "ignored"},
		{Config{Break: BreakTrustXFF}, "(X-Forwarded-For trusted from any client: broken on purpose)", "ignored"},
	}
	for _, tt := range tests {
		tt.cfg.Params = bucket(t, 10, "5/s")
		got := newHandler(t, client, tt.cfg).Describe()
		if !strings.Contains(got, tt.want) || strings.Contains(got, tt.not) {
			t.Errorf("Describe() with %+v = %q, want %q and no %q", tt.cfg, got, tt.want, tt.not)
		}
	}
}
