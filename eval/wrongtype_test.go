package eval

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestWrongTypeKey: a key that already holds another type is bad input
// (exit 2) with one line naming the key and its type and telling to pick
// another or pass --force, on every target, through Run and through
// Limiter.Allow; the scripts refuse it themselves (FOREIGNKEY) before
// anything is written, so the value stays as it was.
func TestWrongTypeKey(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		p    limiter.Params
		kind string // what to put in the key beforehand
	}{
		{limiter.Params{Algo: limiter.TokenBucket, Capacity: 5, Rate: rate.MustParse("1/s")}, "string"},
		{limiter.Params{Algo: limiter.SlidingWindow, Limit: 3, Window: 10 * time.Second}, "string"},
		{limiter.Params{Algo: limiter.FixedWindow, Limit: 3, Window: 10 * time.Second}, "list"},
		{limiter.Params{Algo: limiter.GCRA, Rate: rate.MustParse("1/s"), Burst: 3}, "hash"},
	}
	for _, tg := range redistest.All(t) {
		for _, tt := range tests {
			t.Run(tg.Name+"/"+string(tt.p.Algo), func(t *testing.T) {
				key := redistest.Key(t, "taken")
				redistest.Cleanup(t, tg.Client, key)
				var err error
				switch tt.kind {
				case "string":
					err = tg.Client.Set(ctx, key, "user data", time.Minute).Err()
				case "list":
					err = tg.Client.RPush(ctx, key, "user data").Err()
				case "hash":
					err = tg.Client.HSet(ctx, key, "user", "data").Err()
				}
				if err != nil {
					t.Fatalf("write %s %s: %v", tt.kind, key, err)
				}
				_, err = Run(ctx, tg.Client, Options{Params: tt.p, Key: key})
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				if code := exitcode.Code(err); code != exitcode.Usage || !strings.Contains(msg, key) || !strings.Contains(msg, "holds a "+tt.kind) ||
					!strings.Contains(msg, "pick another key") || !strings.Contains(msg, "--force") || strings.Contains(msg, "\n") {
					t.Errorf("Run on a %s key = %q (exit %d), want one line saying it holds a %s and to pick another key, exit 2", tt.kind, msg, code, tt.kind)
				}
				_, err = redislimit.Allow(ctx, tg.Client, mustLimiter(t, tt.p), key, 0)
				if code := exitcode.Code(err); code != exitcode.Usage || !strings.Contains(err.Error(), "pick another key") {
					t.Errorf("Allow on a %s key = %v (exit %d), want exit 2 and pick another key", tt.kind, err, code)
				}
				var ferr *limiter.ForeignKeyError
				if !errors.As(err, &ferr) || ferr.Type != tt.kind || ferr.Key != key {
					t.Errorf("Allow error = %#v, want a *ForeignKeyError for the %s %s", err, tt.kind, key)
				}
				if typ, _ := tg.Client.Type(ctx, key).Result(); typ != tt.kind {
					t.Errorf("key type after the calls = %q, want the user's %s untouched", typ, tt.kind)
				}
			})
		}
	}
}
