-- Atomically start a cooldown unless one is running.
-- KEYS[1]: the scoped cooldown key
-- ARGV[1]: now (seconds, caller's clock)  ARGV[2]: new deadline (seconds)  ARGV[3]: key expiry (ms)
-- Returns 1 when acquired (deadline stored), 0 while a stored deadline lies in the future.
local current = redis.call('GET', KEYS[1])
if current and tonumber(current) > tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', tonumber(ARGV[3]))
return 1
