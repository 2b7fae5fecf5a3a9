// Rate limits (docs/adr/0044): token buckets in Redis per token, org, agent credential and webhook
// source, failing open when Redis is away.
export {
  apiBudgetsFor,
  rateLimitConfigFromEnv,
  rateLimitEnvSchema,
  type RateLimitConfig,
} from "./rate-limit-config.ts";
export { createRateLimitRedis, RateLimiter, type RateSurface } from "./rate-limiter.ts";
export { ApiTokenOrgCache, bearerKey } from "./api-token-org.ts";
export type { BucketSpec, TakeResult } from "./token-bucket.ts";
