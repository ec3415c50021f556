-- gcra.lua: generic cell rate algorithm limiter (ratelimit, embedded script).
--
-- KEYS[1]  the theoretical arrival time (TAT): a string, Unix time in microseconds
-- ARGV[1]  rate: requests per second (> 0, fractional allowed, at most 1e6, written as a plain
--          decimal)
-- ARGV[2]  burst: requests that may pass at once (integer from 1 to 1e9); the tolerance
--          interval x burst may be at most 1e15 us (about 31.7 years)
-- ARGV[3]  cost: requests this call counts for (integer >= 1; optional, default 1)
-- ARGV[4]  now_ms: Unix time in ms replacing the server's TIME (optional, '' for TIME; for tests
--          and simulations)
-- ARGV[5]  force: '1' to replace a key this script did not write (optional)
--
-- Reply: {allowed (1 or 0), remaining, ms until retry (0 if allowed, -1 if cost > burst),
--         ms until reset (TAT reached: the full burst is available again)}
-- Error: 'FOREIGNKEY <type> <why>' when KEYS[1] is not this script's own (see below); nothing
--        was written.
--
-- The script only writes a key that is missing or its own: a string of decimal digits (a TAT
-- in whole microseconds) with a TTL. Any other key (another type, other text, no TTL) is
-- refused before anything is written, unless force is '1': then it is deleted and the full
-- burst is available. The check and the write run in this one script, so nothing can come
-- between them.
--
-- One value is stored. The emission interval is 1e6 / rate microseconds rounded to the nearest
-- microsecond; the tolerance is interval * burst. Refused calls write nothing. The key expires
-- 1000 ms after its TAT: an expired TAT and one in the past are the same.
-- Example: redis-cli --eval gcra.lua rl:{user42}:gcra , 5 10

if redis.replicate_commands then redis.replicate_commands() end

local function num(i, default)
  local v = ARGV[i]
  if v == nil or v == '' then return default end
  return tonumber(v)
end

local key = KEYS[1]
local rate, burst, cost, now_ms = num(1), num(2), num(3, 1), num(4)
if key == nil then return redis.error_reply('ERR gcra: pass the TAT key as KEYS[1]') end
if rate == nil or not (rate > 0) or rate > 1e6 then
  return redis.error_reply('ERR gcra: rate (ARGV[1], requests per second) must be > 0 and at most 1e6')
end
if burst == nil or burst < 1 or burst > 1e9 or math.floor(burst) ~= burst then
  return redis.error_reply('ERR gcra: burst (ARGV[2]) must be an integer from 1 to 1e9')
end
if math.floor(1000000 / rate + 0.5) * burst > 1e15 then
  return redis.error_reply('ERR gcra: burst / rate must be at most 1e9 seconds (raise the rate or lower the burst)')
end
if cost == nil or cost < 1 or math.floor(cost) ~= cost then
  return redis.error_reply('ERR gcra: cost (ARGV[3]) must be an integer >= 1')
end
if now_ms == nil then
  local t = redis.call('TIME')
  now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local now = math.floor(now_ms) * 1000

local interval = math.floor(1000000 / rate + 0.5)
local dvt = interval * burst
-- Refuse (or with force, delete) a key this script did not write.
local ttl = redis.call('PTTL', key)
local stored = redis.pcall('GET', key)
local why = nil
if type(stored) == 'table' and stored.err then
  if not string.find(stored.err, 'WRONGTYPE', 1, true) then return stored end
  why = 'is not a string'
elseif ttl == -1 then
  why = 'has no TTL'
elseif stored and (#stored > 20 or not string.find(stored, '^%d+$')) then
  why = 'is not a TAT in whole microseconds'
end
if why then
  if ARGV[5] ~= '1' then
    return redis.error_reply('FOREIGNKEY ' .. redis.call('TYPE', key)['ok'] .. ' ' .. why ..
      '; gcra.lua writes only its own keys (ARGV[5] = 1 replaces it)')
  end
  redis.call('DEL', key)
  stored = false
end

local tat = now
if stored then
  local v = tonumber(stored)
  if v and v > now then tat = v end
end

local new_tat = tat + interval * cost
local allowed, retry = 0, 0
if new_tat - now > dvt then
  if interval * cost > dvt then
    retry = -1
  else
    retry = math.ceil((new_tat - now - dvt) / 1000)
  end
else
  allowed = 1
  tat = new_tat
  redis.call('SET', key, tat, 'PX', math.ceil((tat - now) / 1000) + 1000)
end
local remaining = math.floor((dvt - (tat - now)) / interval)
if remaining < 0 then remaining = 0 end
return {allowed, remaining, retry, math.ceil((tat - now) / 1000)}
