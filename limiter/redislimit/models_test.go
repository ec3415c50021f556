package redislimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// The models without scripts of their own, held against independent
// implementations of the same arithmetic: INCR-based Lua scripts of the
// kind services run, written here from their description, run on a real
// redis-server in virtual time. (nginx, haproxy and httprate themselves
// are held to the models in limiter/model's product tests.)

// swcLua is a sliding window counter the way INCR scripts do it: one
// counter per window index floor((now - offset) / window) holding that
// window's admissions (and refusals with count_refused), the previous
// window's weighted by the part of it still inside the sliding window.
const swcLua = `
local now, w, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local mode, countRefused, off = ARGV[4], ARGV[5] == '1', tonumber(ARGV[6])
local k = math.floor((now - off) / w)
local cur = tonumber(redis.call('GET', KEYS[1] .. ':' .. k) or '0')
local prev = tonumber(redis.call('GET', KEYS[1] .. ':' .. (k - 1)) or '0')
local left = w - (now - off - k * w)
local ok
if mode == 'floor' then
  ok = math.floor(prev * left / w) + cur + 1 <= limit
elseif mode == 'nearest' then
  ok = math.floor((2 * prev * left + w) / (2 * w)) + cur + 1 <= limit
else
  ok = prev * left + (cur + 1) * w <= limit * w
end
if ok or countRefused then
  redis.call('INCR', KEYS[1] .. ':' .. k)
  redis.call('PEXPIRE', KEYS[1] .. ':' .. k, 3 * w + 60000)
end
if ok then return 1 end
return 0
`

// clockLua is a fixed window on the clock: INCR, then EXPIREAT the
// window's end when the counter is new; admitted while the count is
// within the limit (refusals counted, as INCR-first scripts do).
const clockLua = `
local now, w, limit, off = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local k = math.floor((now - off) / w)
local key = KEYS[1] .. ':' .. k
local n = redis.call('INCR', key)
if n == 1 then redis.call('PEXPIREAT', key, off + (k + 1) * w + 60000) end
if n <= limit then return 1 end
return 0
`

// arrivalsMs is a random run: bursts and gaps, a few windows long.
func arrivalsMs(r *rand.Rand, base, w int64, n int) []int64 {
	out := make([]int64, n)
	now := base
	for i := range out {
		switch r.IntN(5) {
		case 0, 1: // same ms
		case 2:
			now += r.Int64N(w/4 + 1)
		default:
			now += r.Int64N(w/20 + 1)
		}
		out[i] = now
	}
	return out
}

// TestModelsAgreeWithLuaScripts: on random runs, the sliding window
// counter (every rounding, clock-aligned with and without an offset,
// refusals counted or not) and the clock-aligned fixed window decide
// every call as the Lua scripts do; the neighbouring model (a sliding
// log, a window from the first request) does not (the negative control).
func TestModelsAgreeWithLuaScripts(t *testing.T) {
	ctx := context.Background()
	tg := redistest.Standalone(t)
	swc, clock := redis.NewScript(swcLua), redis.NewScript(clockLua)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 22))
	neighbourDiffers := map[string]bool{}
	for trial := range 36 {
		limit := 1 + r.Int64N(12)
		w := int64(200 + r.IntN(3000))
		off := int64(0)
		if trial%3 == 2 {
			off = r.Int64N(w)
		}
		rounds := []string{limiter.RoundFloor, limiter.RoundNearest, limiter.RoundNone}
		round := rounds[trial%3]
		countRefused := trial%4 == 3
		cases := []struct {
			name, spec, neighbour string
			run                   func(key string, now int64) (int64, error)
		}{
			{"swc", fmt.Sprintf("sliding-window-counter:limit=%d,window=%dms,round=%s,offset=%dms,count-refused=%v", limit, w, round, off, countRefused),
				fmt.Sprintf("sliding-window:limit=%d,window=%dms", limit, w),
				func(key string, now int64) (int64, error) {
					cr := "0"
					if countRefused {
						cr = "1"
					}
					return swc.Run(ctx, tg.Client, []string{key}, now, w, limit, round, cr, off).Int64()
				}},
			{"clock", fmt.Sprintf("fixed-window:limit=%d,window=%dms,align=clock,offset=%dms", limit, w, off),
				fmt.Sprintf("fixed-window:limit=%d,window=%dms", limit, w),
				func(key string, now int64) (int64, error) {
					return clock.Run(ctx, tg.Client, []string{key}, now, w, limit, off).Int64()
				}},
		}
		for _, c := range cases {
			p, err := limiter.ParseSpec(c.spec)
			if err != nil {
				t.Fatalf("%s: %v", c.spec, err)
			}
			nb, err := limiter.ParseSpec(c.neighbour)
			if err != nil {
				t.Fatal(err)
			}
			m, other := mustLimiter(t, p).Model(), mustLimiter(t, nb).Model()
			key := redistest.Key(t, c.name)
			base := serverMs(t, tg.Client)
			for i, now := range arrivalsMs(r, base, w, 150) {
				got, err := c.run(key, now)
				if err != nil {
					t.Fatalf("%s call %d: %v", c.spec, i, err)
				}
				want := m.Allow(now, 1).Allowed
				if (got == 1) != want {
					t.Fatalf("trial %d %s call %d at +%d ms: the script says %v, the model %v", trial, c.spec, i, now-base, got == 1, want)
				}
				if other.Allow(now, 1).Allowed != want {
					neighbourDiffers[c.name] = true
				}
			}
			cleanupWindows(t, tg.Client, key)
		}
	}
	for _, name := range []string{"swc", "clock"} {
		if !neighbourDiffers[name] {
			t.Errorf("%s: the neighbouring model agreed on every call of every trial: the test cannot tell the models apart", name)
		}
	}
}

// cleanupWindows deletes the window counters a script made under key.
func cleanupWindows(t *testing.T, c redis.UniversalClient, key string) {
	t.Helper()
	ctx := context.Background()
	keys, err := c.Keys(ctx, key+":*").Result()
	if err == nil && len(keys) > 0 {
		_ = c.Del(ctx, keys...).Err()
	}
}
