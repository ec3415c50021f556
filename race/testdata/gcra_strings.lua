-- GCRA in the style of go-redis/redis_rate: the theoretical arrival time
-- (TAT) is a string of seconds; the reply gives retry and reset as strings
-- of seconds (Lua would truncate a number to an integer). Read it with
-- --reply allowed,remaining,retry:s,reset:s.
-- KEYS[1]  the TAT: seconds since 2017-01-01, a decimal string
-- ARGV[1]  burst (requests that may pass at once)
-- ARGV[2]  rate (requests per period)
-- ARGV[3]  period (seconds)
-- ARGV[4]  cost (requests)
-- Reply: {allowed (the cost, or 0), remaining, "retry after s" (-1 if
--         allowed), "reset after s"}
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local interval = period / rate
local increment = interval * cost
local tolerance = interval * burst
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1483228800) + tonumber(t[2]) / 1000000
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then
  tat = now
end
local new_tat = tat + increment
local diff = now - (new_tat - tolerance)
if diff < 0 then
  return {0, 0, tostring(-diff), tostring(tat - now)}
end
local reset = new_tat - now
redis.call('SET', KEYS[1], string.format('%.6f', new_tat), 'PX', math.ceil(reset * 1000) + 1000)
return {cost, math.floor(diff / interval), tostring(-1), tostring(reset)}
