import { createHash } from 'node:crypto'

/**
 * gcra.ts as one Lua script (same steps, microseconds, 1 µs tolerance): one round trip, atomic on the server, and timed by the server's
 * own clock (TIME), so authgate replicas with skewed clocks still agree on every bucket.
 * Times are microseconds. The key expires when the bucket would be full, which is exactly when
 * its state stops mattering, so Redis never holds idle buckets.
 *
 * KEYS[1] bucket; ARGV[1] emission interval (µs); ARGV[2] burst.
 * Returns { allowed 0|1, remaining, retry-after µs, reset µs }.
 */
export const GCRA_SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local ahead = tat - now
local max_ahead = (burst - 1) * interval
if ahead > max_ahead + 1 then
  return { 0, 0, math.ceil(ahead - max_ahead), math.ceil(ahead) }
end
local reset = ahead + interval
redis.call('SET', KEYS[1], string.format('%.17g', tat + interval), 'PX', math.ceil(reset / 1000))
return { 1, math.max(0, math.floor((max_ahead - ahead) / interval + 1e-9)), 0, math.ceil(reset) }
`

export const GCRA_SCRIPT_SHA = createHash('sha1').update(GCRA_SCRIPT).digest('hex')

/**
 * gcra.ts's gcraRefund as a script: the bucket's TAT one interval earlier, the key gone once that
 * is in the past. KEYS[1] bucket; ARGV[1] emission interval (µs). Returns nothing of use.
 */
export const REFUND_SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil then return 0 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
tat = tat - tonumber(ARGV[1])
if tat <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('%.17g', tat), 'PX', math.ceil((tat - now) / 1000))
end
return 1
`
