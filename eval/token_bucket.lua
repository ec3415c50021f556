-- token_bucket.lua: token bucket rate limiter (ratelimit, embedded script).
--
-- KEYS[1]  the bucket: a hash {tokens = micro-tokens left, ts = ms of the last refill}
-- ARGV[1]  capacity: tokens the bucket holds (integer >= 1)
-- ARGV[2]  refill rate: tokens per second (> 0, fractional allowed, e.g. 0.5)
-- ARGV[3]  cost: tokens this call takes (integer >= 1; optional, default 1)
-- ARGV[4]  now_ms: Unix time in ms replacing the server's TIME (optional; for tests and simulations)
--
-- Reply: {allowed (1 or 0), whole tokens left, ms until retry (0 if allowed, -1 if cost > capacity),
--         ms until the bucket is full}
--
-- A new key starts full; refill for the elapsed time is capped at capacity. Tokens are counted in
-- micro-tokens so fractional state stays exact in integer arithmetic. Every write sets PEXPIRE to
-- when the bucket would be full again plus 1000 ms: an expired bucket and a full one are the same.
-- Example: redis-cli --eval token_bucket.lua rl:{user42}:tb , 10 5 1

if redis.replicate_commands then redis.replicate_commands() end

local function num(i, default)
  local v = ARGV[i]
  if v == nil or v == '' then return default end
  return tonumber(v)
end

local key = KEYS[1]
local capacity, rate, cost, now = num(1), num(2), num(3, 1), num(4)
if key == nil then return redis.error_reply('ERR token bucket: pass the bucket key as KEYS[1]') end
if capacity == nil or capacity < 1 or capacity > 1e9 or math.floor(capacity) ~= capacity then
  return redis.error_reply('ERR token bucket: capacity (ARGV[1]) must be an integer from 1 to 1e9')
end
if rate == nil or not (rate > 0) or rate > 1e9 then
  return redis.error_reply('ERR token bucket: rate (ARGV[2], tokens per second) must be > 0')
end
if cost == nil or cost < 1 or math.floor(cost) ~= cost then
  return redis.error_reply('ERR token bucket: cost (ARGV[3]) must be an integer >= 1')
end
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
now = math.floor(now)

local U = 1000000
local full = capacity * U
local per_ms = rate * 1000 -- micro-tokens per ms

-- whole ms until need micro-tokens have accrued (rounded so the refill really covers need)
local function ms_for(need)
  if need <= 0 then return 0 end
  local ms = math.ceil(need / per_ms)
  if math.floor(ms * per_ms) < need then ms = ms + 1 end
  return ms
end

local state = redis.call('HMGET', key, 'tokens', 'ts')
local tokens, ts = full, now
if state[1] and state[2] then
  tokens, ts = tonumber(state[1]), tonumber(state[2])
end
if tokens > full then tokens = full end
local elapsed = now - ts
if elapsed > 0 then
  local refill = math.floor(elapsed * per_ms)
  if tokens + refill >= full then tokens = full else tokens = tokens + refill end
  ts = now
end

local need = cost * U
local allowed, retry = 0, 0
if need > full then
  retry = -1
elseif tokens >= need then
  tokens = tokens - need
  allowed = 1
else
  retry = ms_for(need - tokens)
end
local reset = ms_for(full - tokens)

redis.call('HSET', key, 'tokens', tokens, 'ts', ts)
redis.call('PEXPIRE', key, reset + 1000)
return {allowed, math.floor(tokens / U), retry, reset}
