import { Redis } from "ioredis";
import { Counter } from "prom-client";
import { controlPlaneRegistry } from "../metrics/index.ts";
import { defineTakeTokens, takeTokens, type BucketSpec, type TakeResult } from "./token-bucket.ts";

/** Where a request came in: each surface has its own buckets (docs/adr/0044). A fixed, bounded set. */
export type RateSurface = "api" | "dashboard" | "agent" | "webhook";

// Next.js bundles a copy of this module per route: one pair of counters per process, on globalThis.
const g = globalThis as unknown as {
  __kilnRateMetrics?: { limited: Counter<"surface">; failOpen: Counter<"surface"> };
};
const metrics = (g.__kilnRateMetrics ??= {
  limited: new Counter({
    name: "kiln_rate_limited_total",
    help: "Requests refused with 429 RATE.LIMITED, by surface (api, dashboard, agent, webhook).",
    labelNames: ["surface"] as const,
    registers: [controlPlaneRegistry],
  }),
  failOpen: new Counter({
    name: "kiln_rate_limit_fail_open_total",
    help: "Requests let through unchecked because Redis did not answer in time, by surface.",
    labelNames: ["surface"] as const,
    registers: [controlPlaneRegistry],
  }),
});

/** The Redis client a limiter uses: every call bounded by `timeoutMs`, no retries. */
export function createRateLimitRedis(url: string, timeoutMs: number): Redis {
  return new Redis(url, {
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    // Reconnect in the background, never more than a second apart: limits resume soon after Redis.
    retryStrategy: (times) => Math.min(times * 100, 1_000),
  });
}

/**
 * Charges requests to token buckets in Redis, and fails OPEN: if Redis is away or slow the request
 * goes through (a missing limit costs a little load; a failed request would cost intake or
 * dispatch), with a warning at most every `warnEveryMs` and kiln_rate_limit_fail_open_total.
 */
export class RateLimiter {
  private readonly take;
  private lastWarn = 0;
  private suppressed = 0;
  private wasReady = false;

  constructor(
    private readonly redis: Redis,
    private readonly warn: (message: string, fields: Record<string, unknown>) => void,
    private readonly warnEveryMs = 30_000,
  ) {
    this.take = defineTakeTokens(redis);
    redis.on("ready", () => {
      this.wasReady = true;
    });
    // Connection errors are reported through the same throttled warning (never an unhandled event).
    redis.on("error", (err: unknown) => this.warnThrottled("rate limiter: redis error", { err }));
  }

  /** The decision, or null when the request went through unchecked (Redis away: failed open). */
  async check(surface: RateSurface, buckets: readonly BucketSpec[], cost = 1): Promise<TakeResult | null> {
    // Once connected, a lost connection fails open at once rather than queueing each request for
    // the command timeout: a Redis outage must not add latency to every API call.
    if (this.wasReady && this.redis.status !== "ready")
      return this.failOpen(surface, new Error(`redis ${this.redis.status}`));
    try {
      const r = await takeTokens(this.take, buckets, cost);
      if (!r.allowed) metrics.limited.inc({ surface });
      return r;
    } catch (err) {
      return this.failOpen(surface, err);
    }
  }

  private failOpen(surface: RateSurface, err: unknown): null {
    metrics.failOpen.inc({ surface });
    this.warnThrottled("rate limiter: redis unavailable, request allowed unchecked (fail open)", { surface, err });
    return null;
  }

  private warnThrottled(message: string, fields: Record<string, unknown>): void {
    const now = Date.now();
    if (now - this.lastWarn < this.warnEveryMs) {
      this.suppressed++;
      return;
    }
    this.warn(message, { ...fields, suppressed_since_last: this.suppressed });
    this.lastWarn = now;
    this.suppressed = 0;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
