-- sliding_window.lua: sliding-window log rate limiter (ratelimit, embedded script).
--
-- KEYS[1]  the log: a sorted set, member = request id, score = ms the request was admitted
-- ARGV[1]  window: ms (integer from 1 to 1e12)
-- ARGV[2]  limit: requests admitted in any window (integer from 1 to 1e6)
-- ARGV[3]  request id: unique per call (e.g. a UUID); a repeated id would overwrite its entry
-- ARGV[4]  cost: entries this call takes (integer >= 1; optional, default 1)
-- ARGV[5]  now_ms: Unix time in ms replacing the server's TIME (optional, '' for TIME; for tests
--          and simulations)
-- ARGV[6]  force: '1' to replace a key this script did not write (optional)
--
-- Reply: {allowed (1 or 0), remaining, ms until retry (0 if allowed, -1 if cost > limit),
--         ms until the log is empty again}
-- Error: 'FOREIGNKEY <type> <why>' when KEYS[1] is not this script's own (see below); nothing
--        was written or removed.
--
-- The script only writes a key that is missing or its own: a sorted set with a TTL whose lowest
-- and highest scores are whole ms. Any other key (another type, no TTL, other scores) is refused
-- before anything is written or removed, unless force is '1': then it is deleted and the log
-- starts empty. The check and the write run in this one script, so nothing can come between them.
--
-- Entries at or before now - window are dropped; refused requests are not recorded. A refused
-- call may retry when the oldest entry that blocks it leaves the window. Every write sets PEXPIRE
-- to when the newest entry leaves the window: an expired log and an empty one are the same.
-- Example: redis-cli --eval sliding_window.lua rl:{user42}:sw , 60000 100 3f0c9d2e

if redis.replicate_commands then redis.replicate_commands() end

local function num(i, default)
  local v = ARGV[i]
  if v == nil or v == '' then return default end
  return tonumber(v)
end

local key = KEYS[1]
local window, limit, id, cost, now = num(1), num(2), ARGV[3], num(4, 1), num(5)
if key == nil then return redis.error_reply('ERR sliding window: pass the log key as KEYS[1]') end
if window == nil or window < 1 or window > 1e12 or math.floor(window) ~= window then
  return redis.error_reply('ERR sliding window: window (ARGV[1]) must be an integer number of ms from 1 to 1e12')
end
if limit == nil or limit < 1 or limit > 1e6 or math.floor(limit) ~= limit then
  return redis.error_reply('ERR sliding window: limit (ARGV[2]) must be an integer from 1 to 1e6')
end
if id == nil or id == '' then
  return redis.error_reply('ERR sliding window: request id (ARGV[3]) must be a unique non-empty string')
end
if cost == nil or cost < 1 or math.floor(cost) ~= cost then
  return redis.error_reply('ERR sliding window: cost (ARGV[4]) must be an integer >= 1')
end
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
now = math.floor(now)

-- Refuse (or with force, delete) a key this script did not write.
local function whole_ms(s)
  local v = tonumber(s)
  return v ~= nil and v == math.floor(v) and v > -9007199254740992 and v < 9007199254740992
end
local ttl = redis.call('PTTL', key)
local why = nil
if ttl ~= -2 then
  local lowest = redis.pcall('ZRANGE', key, 0, 0, 'WITHSCORES')
  if lowest.err then
    if not string.find(lowest.err, 'WRONGTYPE', 1, true) then return lowest end
    why = 'is not a sorted set'
  elseif ttl == -1 then
    why = 'has no TTL'
  elseif not (whole_ms(lowest[2]) and whole_ms(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])) then
    why = 'has scores that are not whole ms'
  end
end
if why then
  if ARGV[6] ~= '1' then
    return redis.error_reply('FOREIGNKEY ' .. redis.call('TYPE', key)['ok'] .. ' ' .. why ..
      '; sliding_window.lua writes only its own keys (ARGV[6] = 1 replaces it)')
  end
  redis.call('DEL', key)
end

local removed = redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local allowed, remaining, retry = 0, 0, 0
if count + cost <= limit then
  if cost == 1 then
    redis.call('ZADD', key, now, id)
  else
    for i = 1, cost do redis.call('ZADD', key, now, id .. ':' .. i) end
  end
  allowed = 1
  remaining = limit - count - cost
  count = count + cost
else
  remaining = limit - count
  if cost > limit then
    retry = -1
  else
    local blocker = redis.call('ZRANGE', key, count + cost - limit - 1, count + cost - limit - 1, 'WITHSCORES')
    retry = tonumber(blocker[2]) + window - now
  end
end

local reset = 0
if count > 0 then
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  reset = tonumber(newest[2]) + window - now
  if allowed == 1 or removed > 0 then redis.call('PEXPIRE', key, reset) end
end
return {allowed, remaining, retry, reset}
