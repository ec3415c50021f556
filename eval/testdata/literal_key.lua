-- Writes a key whose name it builds from a literal and an argument instead
-- of taking it from KEYS (does not run on Redis Cluster).
-- KEYS[1] counter; ARGV[1] caller id.
redis.call('SET', KEYS[1], 1, 'PX', 60000)
redis.call('INCR', 'hits:' .. ARGV[1])
return redis.call('GET', 'hits:' .. ARGV[1])
