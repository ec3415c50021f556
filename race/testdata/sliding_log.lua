-- A sliding-window log as applications write one: a sorted set of the
-- admitted requests scored by the server's time in ms; entries older than
-- the window are dropped first, and every write sets a TTL (PEXPIRE).
-- KEYS[1]  the log
-- ARGV[1]  window (ms)
-- ARGV[2]  limit (requests in any window)
-- ARGV[3]  request id (unique per call)
-- Reply: {allowed 0/1, remaining, retry ms (0 if allowed)}
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit - n - 1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, 0, tonumber(oldest[2]) + window - now}
