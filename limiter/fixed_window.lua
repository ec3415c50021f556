-- fixed_window.lua: fixed-window counter rate limiter (ratelimit, embedded script).
--
-- KEYS[1]  the counter: a hash {n = units counted in this window, end = ms the window ends}
-- ARGV[1]  window: ms (integer from 1 to 1e12)
-- ARGV[2]  limit: units admitted per window (integer from 1 to 1e15)
-- ARGV[3]  cost: units this call takes (integer >= 1; optional, default 1)
-- ARGV[4]  now_ms: Unix time in ms replacing the server's TIME (optional, '' for TIME; for tests
--          and simulations)
-- ARGV[5]  force: '1' to replace a key this script did not write (optional)
--
-- Reply: {allowed (1 or 0), remaining, ms until the window resets}
-- Error: 'FOREIGNKEY <type> <why>' when KEYS[1] is not this script's own (see below); nothing
--        was written.
--
-- The script only writes a key that is missing or its own: a hash of exactly the fields n and
-- end, both numbers, with a TTL. Any other key (another type, other fields, no TTL) is refused
-- before anything is written, unless force is '1': then it is deleted and a new window starts.
-- The check and the write run in this one script, so nothing can come between them.
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

-- Refuse (or with force, delete) a key this script did not write.
local ttl = redis.call('PTTL', key)
local state = redis.pcall('HMGET', key, 'n', 'end')
local why = nil
if state.err then
  if not string.find(state.err, 'WRONGTYPE', 1, true) then return state end
  why = 'is not a hash'
elseif ttl == -1 then
  why = 'has no TTL'
elseif ttl ~= -2 and not (tonumber(state[1]) and tonumber(state[2])) then
  why = 'lacks numeric n and end fields'
elseif ttl ~= -2 and redis.call('HLEN', key) ~= 2 then
  why = 'has fields other than n and end'
end
if why then
  if ARGV[5] ~= '1' then
    return redis.error_reply('FOREIGNKEY ' .. redis.call('TYPE', key)['ok'] .. ' ' .. why ..
      '; fixed_window.lua writes only its own keys (ARGV[5] = 1 replaces it)')
  end
  redis.call('DEL', key)
  state = {false, false}
end

local n, stop = 0, nil
if state[1] and state[2] then
  n, stop = tonumber(state[1]), tonumber(state[2])
  if now >= stop then
    redis.call('DEL', key)
    n, stop = 0, nil
  end
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
