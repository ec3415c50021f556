-- Raises an error on every call.
return redis.error_reply('ERR this script always fails')
