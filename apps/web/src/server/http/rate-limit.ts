import { DomainError } from "@kiln/domain";
import {
  apiBudgetsFor,
  ApiTokenOrgCache,
  bearerKey,
  createRateLimitRedis,
  rateLimitConfigFromEnv,
  RateLimiter,
  type BucketSpec,
  type RateLimitConfig,
  type RateSurface,
  type TakeResult,
} from "@kiln/engine";
import { services } from "../context.ts";
import { env } from "../env.ts";
import { webLogger } from "../logger.ts";

// The web app's side of rate limiting (docs/adr/0044): which buckets a request is charged to.
// The API and the dashboard share the org bucket; the agent protocol and webhooks have buckets of
// their own, so an API storm never takes a token from dispatch or intake.

interface RateLimits {
  cfg: RateLimitConfig;
  limiter: RateLimiter;
  orgs: ApiTokenOrgCache;
}

// One limiter per process (Next bundles this module per route): on globalThis, built on first use.
const g = globalThis as unknown as { __kilnRateLimits?: RateLimits | null };

function rateLimits(): RateLimits | null {
  if (g.__kilnRateLimits !== undefined) return g.__kilnRateLimits;
  const e = env();
  const cfg = rateLimitConfigFromEnv(e);
  if (!cfg.enabled) return (g.__kilnRateLimits = null);
  const log = webLogger();
  const limiter = new RateLimiter(createRateLimitRedis(e.REDIS_URL, cfg.redisTimeoutMs), (m, f) => log.warn(m, f));
  g.__kilnRateLimits = { cfg, limiter, orgs: new ApiTokenOrgCache(services().db) };
  return g.__kilnRateLimits;
}

const bearer = (req: Request) => /^Bearer (\S+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ?? null;

async function bucketsFor(rl: RateLimits, surface: RateSurface, req: Request): Promise<BucketSpec[]> {
  const secret = bearer(req);
  if (surface === "agent")
    return [{ key: `kiln:rl:agent:${secret ? bearerKey(secret) : "anonymous"}`, ...rl.cfg.agent }];
  if (surface === "webhook") {
    // GitHub names the hook's owner on every delivery (an App, or a repository's own hook).
    const type = req.headers.get("x-github-hook-installation-target-type") ?? "unknown";
    const id = req.headers.get("x-github-hook-installation-target-id") ?? "unknown";
    return [{ key: `kiln:rl:hook:${type.slice(0, 32)}:${id.slice(0, 32)}`, ...rl.cfg.webhook }];
  }
  if (!secret) {
    // A dashboard session on a route that takes one (artifact downloads), or no credential at all.
    const cookie = req.headers.get("cookie");
    return [{ key: `kiln:rl:sess:${cookie ? bearerKey(cookie) : "anonymous"}`, ...rl.cfg.token }];
  }
  const tokenHash = bearerKey(secret);
  // Only something shaped like an API token is looked up: garbage costs no query.
  const org = secret.startsWith("kiln_") ? await rl.orgs.lookup(tokenHash) : null;
  const budgets = apiBudgetsFor(rl.cfg, org?.slug ?? null);
  const buckets: BucketSpec[] = [{ key: `kiln:rl:tok:${tokenHash}`, ...budgets.token }];
  if (org) buckets.push({ key: `kiln:rl:org:${org.orgId}`, ...budgets.org });
  return buckets;
}

/** Thrown when over a bucket: 429 with Retry-After (error-map.ts reads retry_after_seconds). */
function rateLimitedError(r: TakeResult): DomainError {
  const seconds = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
  return new DomainError("RATE.LIMITED", `rate limit exceeded; retry in ${seconds} s`, {
    retry_after_seconds: seconds,
  });
}

/** A 429's decision, for its RateLimit-* headers. */
export function rateLimitOf(e: unknown): TakeResult | null {
  return (e as { rateLimit?: TakeResult } | null)?.rateLimit ?? null;
}

/**
 * Charges a REST request to its surface's buckets before anything else is read. Returns the
 * decision for the RateLimit-* headers (null: not limited, limiting off, or Redis away), throws
 * RATE.LIMITED when over.
 */
export async function limitRoute(surface: RateSurface | null, req: Request): Promise<TakeResult | null> {
  const rl = surface ? rateLimits() : null;
  if (!surface || !rl) return null;
  const r = await rl.limiter.check(surface, await bucketsFor(rl, surface, req));
  if (r && !r.allowed) throw Object.assign(rateLimitedError(r), { rateLimit: r });
  return r;
}

/** The dashboard (tRPC): per signed-in user and per org, sharing the org bucket with its API tokens. */
export async function limitDashboard(tenant: DashboardTenant): Promise<void> {
  const rl = rateLimits();
  if (rl) await dashboardLimit(rl)(tenant);
}

interface DashboardTenant {
  userId: string;
  orgId: string;
  slug: string;
}

/** limitDashboard's charge with a given limiter and configuration (tests build their own). */
export function dashboardLimit(rl: Pick<RateLimits, "cfg" | "limiter">): (t: DashboardTenant) => Promise<void> {
  return async (tenant) => {
    const budgets = apiBudgetsFor(rl.cfg, tenant.slug);
    const r = await rl.limiter.check("dashboard", [
      { key: `kiln:rl:user:${tenant.userId}`, ...budgets.token },
      { key: `kiln:rl:org:${tenant.orgId}`, ...budgets.org },
    ]);
    if (r && !r.allowed) throw rateLimitedError(r);
  };
}

/**
 * RateLimit-* (the IETF draft: Reset in seconds from now) and X-RateLimit-* (GitHub's: Reset as a
 * Unix time) for the tightest bucket. A response with immutable headers (a redirect) keeps its own.
 */
export function withRateLimitHeaders(res: Response, r: TakeResult | null | undefined): Response {
  if (!r) return res;
  const resetS = Math.ceil(r.resetMs / 1000);
  try {
    res.headers.set("ratelimit-limit", String(r.limit));
    res.headers.set("ratelimit-remaining", String(r.remaining));
    res.headers.set("ratelimit-reset", String(resetS));
    res.headers.set("x-ratelimit-limit", String(r.limit));
    res.headers.set("x-ratelimit-remaining", String(r.remaining));
    res.headers.set("x-ratelimit-reset", String(Math.ceil(Date.now() / 1000) + resetS));
  } catch {
    // Immutable headers (Response.redirect): the answer is still right without them.
  }
  return res;
}
