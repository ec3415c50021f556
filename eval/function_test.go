package eval

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ratelimit-dev/ratelimit/limiter"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// libraryCodes returns the code of library lib on every primary ("" where
// it is missing).
func libraryCodes(t *testing.T, c redis.UniversalClient, lib string) []string {
	t.Helper()
	var mu sync.Mutex
	var codes []string
	err := primaries(context.Background(), c, func(ctx context.Context, n redis.Cmdable) error {
		libs, err := n.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lib, WithCode: true}).Result()
		if err != nil {
			return err
		}
		code := ""
		for _, l := range libs {
			if l.Name == lib {
				code = l.Code
			}
		}
		mu.Lock()
		codes = append(codes, code)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("FUNCTION LIST %s: %v", lib, err)
	}
	return codes
}

// loadLibrary loads code on every primary and deletes library lib at cleanup.
func loadLibrary(t *testing.T, c redis.UniversalClient, lib, code string) {
	t.Helper()
	t.Cleanup(func() {
		_ = primaries(context.Background(), c, func(ctx context.Context, n redis.Cmdable) error {
			return n.FunctionDelete(ctx, lib).Err()
		})
	})
	err := primaries(context.Background(), c, func(ctx context.Context, n redis.Cmdable) error {
		return n.FunctionLoad(ctx, code).Err()
	})
	if err != nil {
		t.Fatalf("FUNCTION LOAD %s: %v", lib, err)
	}
}

// TestFunctionKeepsTheUsersLibrary: --function never replaces a library of
// the same name with other code (exit 2, the library untouched), uses one
// with the same code as it is, and deletes only a library it created.
func TestFunctionKeepsTheUsersLibrary(t *testing.T) {
	ctx := context.Background()
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			lib := "rltest_" + strings.ReplaceAll(uuid.NewString(), "-", "")
			ours := fmt.Sprintf("#!lua name=%s\nredis.register_function('%s', function(keys, args) return {1, 7} end)\n", lib, lib)
			theirs := fmt.Sprintf("#!lua name=%s\nredis.register_function('%s', function(keys, args) return 'theirs' end)\n", lib, lib)
			file := writeFile(t, t.TempDir(), "lib.lua", ours)
			key := redistest.Key(t, "fnlib")
			redistest.Cleanup(t, tg.Client, key)
			opts := Options{ScriptFile: file, ScriptWords: []string{key, ","}, Function: true, Count: 1}

			loadLibrary(t, tg.Client, lib, theirs)
			_, err := Run(ctx, tg.Client, opts)
			if code := exitcode.Code(err); code != exitcode.Usage || !strings.Contains(err.Error(), "already exists") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Run over a library with other code = %v (exit %d), want one line saying it already exists, exit 2", err, code)
			}
			for i, code := range libraryCodes(t, tg.Client, lib) {
				if code != theirs {
					t.Errorf("primary %d: library code is now %q, want the user's %q", i, code, theirs)
				}
			}

			// The same code: used as it is and left in place afterwards.
			_ = primaries(ctx, tg.Client, func(ctx context.Context, n redis.Cmdable) error { return n.FunctionDelete(ctx, lib).Err() })
			loadLibrary(t, tg.Client, lib, ours)
			res, err := Run(ctx, tg.Client, opts)
			if err != nil || fmt.Sprint(res.Calls[0].Reply) != "[1 7]" {
				t.Fatalf("Run with the same library loaded = %+v, %v; want reply [1 7]", res.Calls, err)
			}
			for i, code := range libraryCodes(t, tg.Client, lib) {
				if code != ours {
					t.Errorf("primary %d: library code after the run = %q, want it kept", i, code)
				}
			}

			// Not loaded before: created by the run and deleted after it.
			_ = primaries(ctx, tg.Client, func(ctx context.Context, n redis.Cmdable) error { return n.FunctionDelete(ctx, lib).Err() })
			if _, err := Run(ctx, tg.Client, opts); err != nil {
				t.Fatalf("Run: %v", err)
			}
			for i, code := range libraryCodes(t, tg.Client, lib) {
				if code != "" {
					t.Errorf("primary %d: the run left its library behind", i)
				}
			}
		})
	}
}

// TestFunctionLibraryNameInUse: the --function library of an embedded
// script exists with other code: exit 2, nothing replaced.
func TestFunctionLibraryNameInUse(t *testing.T) {
	tg := redistest.Standalone(t)
	p := limiter.Params{Algo: limiter.FixedWindow, Limit: 3, Window: 10_000_000_000}
	code, lib, fn, err := FunctionLibrary(mustLimiter(t, p).Script().Source)
	if err != nil {
		t.Fatal(err)
	}
	other := fmt.Sprintf("#!lua name=%s\nredis.register_function('%s', function(keys, args) return 0 end)\n", lib, fn)
	if other == code {
		t.Fatal("test library equals the script's")
	}
	loadLibrary(t, tg.Client, lib, other)
	key := redistest.Key(t, "fnfw")
	redistest.Cleanup(t, tg.Client, key)
	_, err = Run(context.Background(), tg.Client, Options{Params: p, Key: key, Function: true})
	if exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("Run = %v, want exit 2", err)
	}
	if got := libraryCodes(t, tg.Client, lib); got[0] != other {
		t.Errorf("library code = %q, want the other code kept", got[0])
	}
}
