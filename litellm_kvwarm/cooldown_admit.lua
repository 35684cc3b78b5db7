-- Atomically admit a warm: the session's cooldown must not run and the tenant's window must
-- have room; both are taken only when both pass.
-- KEYS[1]: the scoped cooldown key   KEYS[2]: the tenant's rate key (a sorted set; unused when ARGV[4] is 0)
-- ARGV[1]: now (seconds, caller's clock)   ARGV[2]: new cooldown deadline (seconds)
-- ARGV[3]: cooldown key expiry (ms)        ARGV[4]: warms per window (0 = no rate)
-- ARGV[5]: window (seconds)                ARGV[6]: rate key expiry (ms)   ARGV[7]: unique member for this warm
-- Returns 1 admitted, 0 while the cooldown runs, 2 when the tenant's window is full.
local now = tonumber(ARGV[1])
local current = redis.call('GET', KEYS[1])
if current and tonumber(current) > now then
  return 0
end
local limit = tonumber(ARGV[4])
if limit > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[5]))
  if redis.call('ZCARD', KEYS[2]) >= limit then
    return 2
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', tonumber(ARGV[3]))
if limit > 0 then
  redis.call('ZADD', KEYS[2], now, ARGV[7])
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[6]))
end
return 1
