package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestClassifyRealReplies: the classes come from what a real redis-server
// answers, not from strings made up here.
func TestClassifyRealReplies(t *testing.T) {
	tg := redistest.Standalone(t)
	ctx := context.Background()
	key := redistest.Key(t, "classify")
	redistest.Cleanup(t, tg.Client, key)
	if err := tg.Client.Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	noperm := redistest.ACLUser(t, tg, "+get", "~other:*")
	c, err := redisconn.Open(ctx, redisconn.Options{URL: noperm})
	if err != nil {
		t.Fatalf("Open as a least-privilege user: %v", err)
	}
	defer c.Close()
	tests := []struct {
		name string
		err  error
		want redisconn.Class
	}{
		{"wrongtype", tg.Client.HGet(ctx, key, "f").Err(), redisconn.WrongType},
		{"noscript", tg.Client.EvalSha(ctx, strings.Repeat("0", 40), nil).Err(), redisconn.NoScript},
		{"noperm command", c.Client.Set(ctx, "other:x", "v", time.Second).Err(), redisconn.NoPerm},
		{"noperm key", c.Client.Get(ctx, key).Err(), redisconn.NoPerm},
		{"script error", tg.Client.Eval(ctx, "return redis.error_reply('ERR mine')", nil).Err(), redisconn.Other},
		{"refused", func() error {
			_, err := redisconn.Open(ctx, redisconn.Options{URL: "redis://127.0.0.1:1"})
			return err
		}(), redisconn.Unreachable},
		{"eof", fmt.Errorf("read: %w", io.EOF), redisconn.Unreachable},
		{"reset", syscall.ECONNRESET, redisconn.Unreachable},
		{"canceled", context.Canceled, redisconn.Canceled},
		{"plain", errors.New("boom"), redisconn.Other},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Errorf("%s: the server answered no error", tt.name)
			continue
		}
		if got := redisconn.Classify(tt.err); got != tt.want && !(tt.name == "refused" && exitcode.Code(tt.err) == exitcode.Unreachable) {
			t.Errorf("redisconn.Classify(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
	// Wrap: NOPERM and unreachable are exit 3 with a hint, others unmarked
	if err := redisconn.Wrap("set", tests[2].err); exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), "+set") {
		t.Errorf("redisconn.Wrap(NOPERM set) = %v (exit %d), want exit 3 naming +set", err, exitcode.Code(err))
	}
	if err := redisconn.Wrap("eval", tests[4].err); exitcode.Code(err) != exitcode.Internal {
		t.Errorf("redisconn.Wrap(script error) exit %d, want it unmarked (4) for the caller to decide", exitcode.Code(err))
	}
}

func TestClassifyBusy(t *testing.T) {
	tg := redistest.Standalone(t)
	ctx := context.Background()
	if err := tg.Client.ConfigSet(ctx, "busy-reply-threshold", "100").Err(); err != nil {
		t.Fatalf("CONFIG SET busy-reply-threshold: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for tg.Client.ScriptKill(ctx).Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		_ = tg.Client.ConfigSet(ctx, "busy-reply-threshold", "5000").Err()
	})
	go func() {
		_ = tg.Client.Eval(context.Background(), "local t = redis.call('TIME') while true do end", nil).Err()
	}()
	var err error
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		if err = tg.Client.Ping(ctx).Err(); err != nil {
			break
		}
	}
	if redisconn.Classify(err) != redisconn.Busy {
		t.Fatalf("redisconn.Classify(%v) = %v, want busy", err, redisconn.Classify(err))
	}
	if w := redisconn.Wrap("ping", err); !strings.Contains(w.Error(), "SCRIPT KILL") {
		t.Errorf("redisconn.Wrap(BUSY) = %v, want the SCRIPT KILL hint", w)
	}
}
