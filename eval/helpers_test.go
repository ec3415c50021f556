package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/limiter"
)

func mustLimiter(t *testing.T, p limiter.Params) *limiter.Limiter {
	t.Helper()
	l, err := limiter.NewLimiter(p)
	if err != nil {
		t.Fatalf("NewLimiter(%+v): %v", p, err)
	}
	return l
}

// serverMs reads the server clock, so virtual time starts near real time.
func serverMs(t *testing.T, c redis.UniversalClient) int64 {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now.UnixMilli()
}

func sha256Prefix(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
