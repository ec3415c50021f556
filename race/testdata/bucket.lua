-- A classic token bucket, written the way applications write one: the
-- bucket is a hash {tokens, ts} read with HMGET and written with HSET, the
-- time comes from the server (TIME) and every write sets a TTL (PEXPIRE).
-- KEYS[1]  the bucket
-- ARGV[1]  capacity (tokens)
-- ARGV[2]  refill rate (tokens per second)
-- ARGV[3]  cost of this call (tokens)
-- Reply: {allowed 0/1, tokens left (whole), retry ms (0 if allowed)}
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil then
  tokens, ts = capacity, now
end
if now > ts then
  tokens = math.min(capacity, tokens + (now - ts) * rate / 1000)
  ts = now
end
local allowed, retry = 0, 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = math.ceil((cost - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', ts)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity * 1000 / rate) + 1000)
return {allowed, math.floor(tokens), retry}
