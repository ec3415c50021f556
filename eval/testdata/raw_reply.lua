-- Returns something that is not a limiter reply. KEYS[1] a key; ARGV[1] a value.
redis.call('SET', KEYS[1], ARGV[1], 'EX', 60)
return {'stored', ARGV[1]}
