-- A token bucket as blog posts write it, called as
--   redis-cli --eval article_token_bucket.lua mybucket , 5 1 1
-- KEYS[1] bucket; ARGV[1] capacity, ARGV[2] tokens per second, ARGV[3] requested.
-- Returns {allowed, tokens left}.
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local requested = tonumber(ARGV[3])

local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000

local bucket = redis.call('HMGET', key, 'tokens', 'last')
local tokens = tonumber(bucket[1]) or capacity
local last = tonumber(bucket[2]) or now

tokens = math.min(capacity, tokens + (now - last) * rate)
local allowed = 0
if tokens >= requested then
  tokens = tokens - requested
  allowed = 1
end

redis.call('HSET', key, 'tokens', tostring(tokens), 'last', tostring(now))
redis.call('EXPIRE', key, math.ceil(capacity / rate) * 2)
return {allowed, math.floor(tokens)}
