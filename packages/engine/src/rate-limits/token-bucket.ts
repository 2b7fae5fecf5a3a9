import type { Redis } from "ioredis";

// A token bucket per key in Redis (docs/adr/0044). One Lua script refills, checks and spends every
// bucket a request is charged to (its token's and its org's) in one round trip and atomically:
// two web processes racing for the last token cannot both get it, and a request refused by the org
// bucket spends nothing from the token bucket. Time is Redis's own clock (TIME), so web processes
// with skewed clocks share one notion of "refilled".

/** One bucket a request is charged to: `burst` tokens at most, refilled at `perMinute`. */
export interface BucketSpec {
  key: string;
  perMinute: number;
  burst: number;
}

export interface TakeResult {
  allowed: boolean;
  /** Until the binding bucket holds enough again; 0 when allowed. */
  retryAfterMs: number;
  /** The tightest bucket after this request: what RateLimit-* headers report. */
  limit: number;
  remaining: number;
  /** Until the tightest bucket is full again. */
  resetMs: number;
}

// KEYS: the buckets. ARGV[1]: cost; then per bucket: burst, tokens per millisecond.
// Returns {allowed, retry_after_ms, tightest_index, tightest_remaining, tightest_reset_ms}.
// Tokens are stored as floats ("%.17g") so slow refill rates do not round away between calls.
const TAKE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cost = tonumber(ARGV[1])
local levels = {}
local allowed = 1
local wait = 0
for i = 1, #KEYS do
  local cap = tonumber(ARGV[2 * i])
  local rate = tonumber(ARGV[2 * i + 1])
  local s = redis.call('HMGET', KEYS[i], 't', 'ts')
  local tokens = tonumber(s[1])
  local ts = tonumber(s[2])
  if tokens == nil or ts == nil then tokens = cap; ts = now end
  if now > ts then tokens = math.min(cap, tokens + (now - ts) * rate) end
  levels[i] = tokens
  if tokens < cost then
    allowed = 0
    local w = math.ceil((cost - tokens) / rate)
    if w > wait then wait = w end
  end
end
local tight = 1
local tightLeft = nil
local tightReset = 0
for i = 1, #KEYS do
  local cap = tonumber(ARGV[2 * i])
  local rate = tonumber(ARGV[2 * i + 1])
  local left = levels[i]
  if allowed == 1 then
    left = left - cost
    redis.call('HSET', KEYS[i], 't', string.format('%.17g', left), 'ts', now)
    redis.call('PEXPIRE', KEYS[i], math.ceil((cap - left) / rate) + 1000)
  end
  if tightLeft == nil or left / cap < tightLeft / tonumber(ARGV[2 * tight]) then
    tight = i
    tightLeft = left
    tightReset = math.ceil((cap - left) / rate)
  end
end
return {allowed, wait, tight, math.floor(math.max(0, tightLeft)), tightReset}
`;

type TakeFn = (numKeys: number, ...args: (string | number)[]) => Promise<[number, number, number, number, number]>;

/** Registers the script on a client (ioredis sends EVALSHA, and EVAL once after a NOSCRIPT). */
export function defineTakeTokens(redis: Redis): TakeFn {
  const r = redis as Redis & { kilnTakeTokens?: TakeFn };
  if (!r.kilnTakeTokens) redis.defineCommand("kilnTakeTokens", { lua: TAKE_LUA });
  const take = (redis as Redis & { kilnTakeTokens: TakeFn }).kilnTakeTokens;
  return take.bind(redis);
}

/**
 * Spends `cost` from every bucket or from none. Throws whatever Redis throws: the caller decides
 * what an unreachable Redis means (RateLimiter fails open).
 */
export async function takeTokens(take: TakeFn, buckets: readonly BucketSpec[], cost = 1): Promise<TakeResult> {
  if (buckets.length === 0) throw new Error("takeTokens needs at least one bucket");
  const args: (string | number)[] = [...buckets.map((b) => b.key), cost];
  for (const b of buckets) args.push(b.burst, b.perMinute / 60_000);
  const [allowed, waitMs, tight, remaining, resetMs] = await take(buckets.length, ...args);
  const tightest = buckets[tight - 1] ?? (buckets[0] as BucketSpec);
  return {
    allowed: allowed === 1,
    retryAfterMs: allowed === 1 ? 0 : waitMs,
    limit: tightest.burst,
    remaining,
    resetMs,
  };
}
