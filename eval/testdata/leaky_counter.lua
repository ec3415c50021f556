-- A fixed-window counter with the classic bug: INCR without EXPIRE, so the
-- counter never expires. It also keeps a per-key total beside it.
-- KEYS[1] counter; ARGV[1] limit. Returns {allowed, remaining}.
local n = redis.call('INCR', KEYS[1])
redis.call('INCR', KEYS[1] .. ':total')
local limit = tonumber(ARGV[1])
if n > limit then return {0, 0} end
return {1, limit - n}
