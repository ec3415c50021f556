-- fixed_window.lua: fixed-window counter rate limiter (ratelimit, embedded script).
--
-- KEYS[1]  the counter: a hash {n = units counted in this window, end = ms the window ends}
-- ARGV[1]  window: ms (integer from 1 to 1e12)
-- ARGV[2]  limit: units admitted per window (integer from 1 to 1e15)
-- ARGV[3]  cost: units this call takes (integer >= 1; optional, default 1)
-- ARGV[4]  now_ms: Unix time in ms replacing the server's TIME (optional; for tests and simulations)
--
-- Reply: {allowed (1 or 0), remaining, ms until the window resets}
--
-- The counter is incremented (HINCRBY) and, only when it is new, given its TTL in the same
-- script, so a crash between the two can never leave a counter that never expires. A window
-- starts at the first admitted request after the previous one ended. The window end is stored
-- beside the count so virtual time (now_ms) ends windows exactly as the TTL does in real time.
-- Refused requests are not counted.
-- Example: redis-cli --eval fixed_window.lua rl:{user42}:fw , 60000 100

if redis.replicate_commands then redis.replicate_commands() end

local function num(i, default)
  local v = ARGV[i]
  if v == nil or v == '' then return default end
  return tonumber(v)
end

local key = KEYS[1]
local window, limit, cost, now = num(1), num(2), num(3, 1), num(4)
if key == nil then return redis.error_reply('ERR fixed window: pass the counter key as KEYS[1]') end
if window == nil or window < 1 or window > 1e12 or math.floor(window) ~= window then
  return redis.error_reply('ERR fixed window: window (ARGV[1]) must be an integer number of ms from 1 to 1e12')
end
if limit == nil or limit < 1 or limit > 1e15 or math.floor(limit) ~= limit then
  return redis.error_reply('ERR fixed window: limit (ARGV[2]) must be an integer from 1 to 1e15')
end
if cost == nil or cost < 1 or math.floor(cost) ~= cost then
  return redis.error_reply('ERR fixed window: cost (ARGV[3]) must be an integer >= 1')
end
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
now = math.floor(now)

local state = redis.call('HMGET', key, 'n', 'end')
local n, stop = 0, nil
if state[1] and state[2] then
  n, stop = tonumber(state[1]), tonumber(state[2])
  if now >= stop then
    redis.call('DEL', key)
    n, stop = 0, nil
  end
elseif state[1] or state[2] then
  redis.call('DEL', key) -- half a state: start over
end

local allowed = 0
if n + cost <= limit then
  n = redis.call('HINCRBY', key, 'n', cost)
  if stop == nil then
    stop = now + window
    redis.call('HSET', key, 'end', stop)
    redis.call('PEXPIRE', key, window)
  end
  allowed = 1
end
local reset = window
if stop ~= nil then reset = stop - now end
return {allowed, limit - n, reset}
