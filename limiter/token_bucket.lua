-- token_bucket.lua: token bucket rate limiter (ratelimit, embedded script).
--
-- KEYS[1]  the bucket: a hash {tokens = micro-tokens at ts, not counting the refill since ts
--          (negative once more was taken than ts held), ts = ms of the refill anchor}
-- ARGV[1]  capacity: tokens the bucket holds (integer from 1 to 1e9)
-- ARGV[2]  refill rate: tokens per second (> 0 and at most 1e9, fractional allowed, e.g. 0.5,
--          written as a plain decimal); capacity / rate may be at most 1e9 s (the bucket
--          fills from empty within 1e12 ms)
-- ARGV[3]  cost: tokens this call takes (integer >= 1; optional, default 1)
-- ARGV[4]  now_ms: Unix time in ms replacing the server's TIME (optional, '' for TIME; for tests
--          and simulations)
-- ARGV[5]  force: '1' to replace a key this script did not write (optional)
--
-- Reply: {allowed (1 or 0), whole tokens left, ms until retry (0 if allowed, -1 if cost > capacity),
--         ms until the bucket is full}
-- Error: 'FOREIGNKEY <type> <why>' when KEYS[1] is not this script's own (see below); nothing
--        was written.
--
-- The script only writes a key that is missing or its own: a hash of exactly the fields tokens
-- and ts, both numbers, with a TTL. Any other key (another type, other fields, no TTL) is
-- refused before anything is written, unless force is '1': then it is deleted and the bucket
-- starts full. The check and the write run in this one script, so nothing can come between them.
--
-- A new key starts full; refill is capped at capacity. Tokens are counted in micro-tokens and
-- the refill is counted from an anchor (the last time the bucket was full), never rounded per
-- call, so how often the bucket is asked does not change its answers: refused calls change
-- nothing. The refill since the anchor is counted in chunks of whole ms worth at most 2^40
-- micro-tokens each, rounded down once per chunk, so every quantity stays exact in a double.
-- Every write sets PEXPIRE to when the bucket would be full again plus 1000 ms: an expired
-- bucket and a full one are the same.
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
  return redis.error_reply('ERR token bucket: rate (ARGV[2], tokens per second) must be > 0 and at most 1e9')
end
if capacity * 1000000 / (rate * 1000) > 1e12 then
  return redis.error_reply('ERR token bucket: capacity / rate must be at most 1e9 seconds (raise the rate)')
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

-- Refill chunks: chunk_ms whole ms are worth chunk micro-tokens (at most 2^40).
local CHUNK = 1099511627776
local chunk_ms = math.floor(CHUNK / per_ms)
if chunk_ms > CHUNK then chunk_ms = CHUNK end
if chunk_ms < 1 then chunk_ms = 1 end
local chunk = math.floor(chunk_ms * per_ms)

-- micro-tokens accrued e ms after the anchor
local function refill(e)
  if e <= 0 then return 0 end
  local n = math.floor(e / chunk_ms)
  return n * chunk + math.floor((e - n * chunk_ms) * per_ms)
end

-- fewest whole ms after the anchor whose refill reaches target micro-tokens
local function ms_until(target)
  if target <= 0 then return 0 end
  local n = math.floor((target - 1) / chunk)
  local u = target - n * chunk -- 1 .. chunk micro-tokens into chunk n
  local r = math.ceil(u / per_ms)
  if math.floor(r * per_ms) < u then r = r + 1 end
  if r > 1 and math.floor((r - 1) * per_ms) >= u then r = r - 1 end
  if r >= chunk_ms then return (n + 1) * chunk_ms end
  return n * chunk_ms + r
end

-- Refuse (or with force, delete) a key this script did not write.
local ttl = redis.call('PTTL', key)
local state = redis.pcall('HMGET', key, 'tokens', 'ts')
local why = nil
if state.err then
  if not string.find(state.err, 'WRONGTYPE', 1, true) then return state end
  why = 'is not a hash'
elseif ttl == -1 then
  why = 'has no TTL'
elseif ttl ~= -2 and not (tonumber(state[1]) and tonumber(state[2])) then
  why = 'lacks numeric tokens and ts fields'
elseif ttl ~= -2 and redis.call('HLEN', key) ~= 2 then
  why = 'has fields other than tokens and ts'
end
if why then
  if ARGV[5] ~= '1' then
    return redis.error_reply('FOREIGNKEY ' .. redis.call('TYPE', key)['ok'] .. ' ' .. why ..
      '; token_bucket.lua writes only its own keys (ARGV[5] = 1 replaces it)')
  end
  redis.call('DEL', key)
  state = {false, false}
end

local tokens, ts = full, now
if state[1] and state[2] then
  tokens, ts = tonumber(state[1]), tonumber(state[2])
end
if tokens > full then tokens = full end
local elapsed = now - ts
local level = tokens + refill(elapsed) -- micro-tokens in the bucket now
if level >= full then
  -- a full bucket forgets its anchor: refill restarts at now
  tokens, ts, level = full, now, full
elseif level < 0 then
  -- only after the parameters changed: the bucket is empty now
  tokens, level = tokens - level, 0
elseif elapsed >= chunk_ms then
  -- move the anchor by whole chunks: the refill owed stays the same
  local n = math.floor(elapsed / chunk_ms)
  tokens, ts = tokens + n * chunk, ts + n * chunk_ms
end

local need = cost * U
local allowed, retry = 0, 0
if need > full then
  retry = -1
elseif level >= need then
  tokens, level = tokens - need, level - need
  allowed = 1
else
  retry = ms_until(need - tokens) - (now - ts)
end
local reset = ms_until(full - tokens) - (now - ts)

redis.call('HSET', key, 'tokens', tokens, 'ts', ts)
redis.call('PEXPIRE', key, reset + 1000)
return {allowed, math.floor(level / U), retry, reset}
