-- Admit a warm when a tenant rate applies: the session's cooldown must not run and the
-- tenant's window must have room; both are taken only when both pass (one atomic step).
-- Every time is Redis's own (TIME, key expiry): no caller clock is read.
-- KEYS[1]: the scoped cooldown key (exists while the cooldown runs)
-- KEYS[2]: the tenant's rate key (a sorted set of admission times, seconds)
-- ARGV[1]: cooldown (ms)    ARGV[2]: warms per window (> 0)    ARGV[3]: window (seconds)
-- ARGV[4]: window (ms, the rate key's expiry)    ARGV[5]: unique member for this warm
-- Returns 1 admitted, 0 while the cooldown runs, 2 when the tenant's window is full.
local time = redis.call('TIME')
local now = tonumber(time[1]) + tonumber(time[2]) / 1000000
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[3]))
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then
  return 2
end
-- the value is the deadline (epoch seconds), read by replicas of litellm-kvwarm before the SET NX PX cooldown
if not redis.call('SET', KEYS[1], string.format('%.3f', now + tonumber(ARGV[1]) / 1000), 'NX', 'PX', ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[2], now, ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
