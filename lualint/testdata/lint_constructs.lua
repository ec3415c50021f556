-- lint_constructs.lua: Lua 5.1 constructs the lint must read, placed so
-- that every expression is found in the source (see lint_align_test.go).
--
-- KEYS[1]  a counter; KEYS[2] a log, written only when ARGV[2] is 'log'
-- ARGV[1]  limit; ARGV[2] mode; ARGV[3] window in ms
-- Reply: the count

local call, pcall_ = redis.call, redis.pcall
local limit, mode = tonumber(ARGV[1]), ARGV[2]
local window = tonumber(ARGV[3]) or 1000
local t = { n = 1, ["k"] = 2, [3] = 'x'; f = function(...) return select('#', ...) end, }
local s = [==[
long ]] string ]==] .. "esc\"aped\\" .. 'tab\t' .. #t .. -(-1) .. (2 ^ 3 % 5)

local function bump(key, by)
  -- a parameter: the lint cannot know it comes from KEYS
  return call('INCRBY', key, by)
end

local obj = {}
function obj.get(k) return k end
function obj:name() return self end

local n = call('INCR', KEYS[1])
if n == 1 then
  call('PEXPIRE', KEYS[1], window)
elseif not (n <= limit) and mode ~= 'quiet' then
  pcall_('SET', 'over:' .. KEYS[1], n, 'PX', window)
else
  for i = 1, 2, 1 do
    local v = obj.get(i) .. obj:name()['x']
    while false do break end
    repeat local u = v until u
  end
end
if mode == 'log' then
  redis.call('RPUSH', KEYS[2], n)
end
for k, v in pairs(t) do
  if type(v) == 'number' and (v > 1 or k == "n") then bump('hits', v) end
end
return { n, s:len(), (call("TIME"))[1] }
