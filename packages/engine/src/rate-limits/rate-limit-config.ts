import { z } from "zod";

// Rate-limit configuration (docs/adr/0044): defaults per surface, and per-plan overrides of the
// API budgets, assigned to orgs by slug. Plans are configuration, not rows: an operator changes a
// plan's numbers in one place and every org on it follows, with no migration.

/** What a bucket refills at (tokens a minute) and holds at most (the burst). */
interface RateBudget {
  perMinute: number;
  burst: number;
}

/** The API budgets a plan may override; an absent one keeps the platform default. */
interface PlanBudgets {
  token?: RateBudget;
  org?: RateBudget;
}

export interface RateLimitConfig {
  enabled: boolean;
  /** Per API token (or dashboard user), on /v1 and tRPC. */
  token: RateBudget;
  /** Per org, all of its tokens and users together. */
  org: RateBudget;
  /** Per agent credential (host, runner or job token) on the agent protocol: never shares the API's. */
  agent: RateBudget;
  /** Per webhook source (the hook's installation target) on forge intake. */
  webhook: RateBudget;
  plans: Record<string, PlanBudgets>;
  /** Org slug -> plan name. */
  orgPlans: Record<string, string>;
  /** How long one Redis call may take before the request is let through (fail open). */
  redisTimeoutMs: number;
}

const budget = z.object({ per_minute: z.number().int().min(1), burst: z.number().int().min(1) }).strict();
const plansSchema = z.record(
  z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/),
  z.object({ token: budget.optional(), org: budget.optional() }).strict(),
);

const intVar = (dflt: number) => z.coerce.number().int().min(1).default(dflt);
const bool = (dflt: boolean) =>
  z
    .preprocess((v) => (v === "" || v === undefined ? undefined : v), z.enum(["true", "false", "1", "0"]).optional())
    .transform((v) => (v === undefined ? dflt : v === "true" || v === "1"));

/** The variables, spread into the web app's zod env (apps/web/src/server/env.ts). */
export const rateLimitEnvSchema = z.object({
  /** Master switch (default on). `false` turns every bucket off: the bench's "off" side. */
  KILN_RATE_LIMIT_ENABLED: bool(true),
  /** Per API token: 600 a minute (10/s sustained) with a burst of 100: a person never meets it, a loop does. */
  KILN_RATE_LIMIT_TOKEN_PER_MINUTE: intVar(600),
  KILN_RATE_LIMIT_TOKEN_BURST: intVar(100),
  /** Per org, every token and dashboard user together: five tokens' worth, so one runaway leaves room. */
  KILN_RATE_LIMIT_ORG_PER_MINUTE: intVar(3000),
  KILN_RATE_LIMIT_ORG_BURST: intVar(500),
  /**
   * Per agent credential on the agent protocol (1000/s, burst 5000): a pool's shared credential
   * serves many hosts, so this bounds a broken peer, never a fleet's heartbeats, claims and logs.
   */
  KILN_RATE_LIMIT_AGENT_PER_MINUTE: intVar(60_000),
  KILN_RATE_LIMIT_AGENT_BURST: intVar(5_000),
  /** Per webhook source (one App covers all its installations): 500/s, burst 5000; a storm meets it. */
  KILN_RATE_LIMIT_WEBHOOK_PER_MINUTE: intVar(30_000),
  KILN_RATE_LIMIT_WEBHOOK_BURST: intVar(5_000),
  /**
   * Plans as JSON: {"<plan>": {"token": {"per_minute": n, "burst": n}, "org": {...}}}. Default none:
   * every org gets the defaults above.
   */
  KILN_RATE_LIMIT_PLANS: z
    .preprocess((v) => (v === "" || v === undefined ? "{}" : v), z.string())
    .transform((v, ctx) => {
      try {
        return plansSchema.parse(JSON.parse(v));
      } catch (err) {
        ctx.addIssue({
          code: "custom",
          message: `KILN_RATE_LIMIT_PLANS: ${err instanceof Error ? err.message : String(err)}`,
        });
        return z.NEVER;
      }
    }),
  /** Which org is on which plan: `org-slug=plan,other-org=plan`. Default none. */
  KILN_RATE_LIMIT_ORG_PLANS: z
    .preprocess((v) => (v === undefined ? "" : v), z.string())
    .transform((v, ctx) => {
      const out: Record<string, string> = {};
      for (const pair of v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)) {
        const m = /^([a-z0-9][a-z0-9-]{0,62})=([a-z0-9][a-z0-9_-]{0,62})$/.exec(pair);
        if (!m?.[1] || !m[2]) {
          ctx.addIssue({ code: "custom", message: `KILN_RATE_LIMIT_ORG_PLANS: "${pair}" is not org=plan` });
          return z.NEVER;
        }
        out[m[1]] = m[2];
      }
      return out;
    }),
  /**
   * One Redis call's budget (default 500 ms): past it the request goes through, counted as failed
   * open. It bounds a hung Redis (a dead one is noticed at once); it is wall time in this process, so
   * a busy event loop counts too, and 100 ms failed requests open under a storm on 2 loaded cores.
   */
  KILN_RATE_LIMIT_REDIS_TIMEOUT_MS: z.coerce.number().int().min(5).max(5_000).default(500),
});

type RateLimitEnv = z.infer<typeof rateLimitEnvSchema>;

/** The configuration from the parsed variables; a plan an org names must exist. */
export function rateLimitConfigFromEnv(e: RateLimitEnv): RateLimitConfig {
  for (const [org, plan] of Object.entries(e.KILN_RATE_LIMIT_ORG_PLANS)) {
    if (!(plan in e.KILN_RATE_LIMIT_PLANS))
      throw new Error(
        `KILN_RATE_LIMIT_ORG_PLANS: org ${org} is on plan ${plan}, which KILN_RATE_LIMIT_PLANS does not define`,
      );
  }
  const plans: Record<string, PlanBudgets> = {};
  for (const [name, p] of Object.entries(e.KILN_RATE_LIMIT_PLANS)) {
    plans[name] = {
      ...(p.token ? { token: { perMinute: p.token.per_minute, burst: p.token.burst } } : {}),
      ...(p.org ? { org: { perMinute: p.org.per_minute, burst: p.org.burst } } : {}),
    };
  }
  return {
    enabled: e.KILN_RATE_LIMIT_ENABLED,
    token: { perMinute: e.KILN_RATE_LIMIT_TOKEN_PER_MINUTE, burst: e.KILN_RATE_LIMIT_TOKEN_BURST },
    org: { perMinute: e.KILN_RATE_LIMIT_ORG_PER_MINUTE, burst: e.KILN_RATE_LIMIT_ORG_BURST },
    agent: { perMinute: e.KILN_RATE_LIMIT_AGENT_PER_MINUTE, burst: e.KILN_RATE_LIMIT_AGENT_BURST },
    webhook: { perMinute: e.KILN_RATE_LIMIT_WEBHOOK_PER_MINUTE, burst: e.KILN_RATE_LIMIT_WEBHOOK_BURST },
    plans,
    orgPlans: e.KILN_RATE_LIMIT_ORG_PLANS,
    redisTimeoutMs: e.KILN_RATE_LIMIT_REDIS_TIMEOUT_MS,
  };
}

/** An org's API budgets: its plan's where the plan sets them, the platform's otherwise. */
export function apiBudgetsFor(cfg: RateLimitConfig, orgSlug: string | null): { token: RateBudget; org: RateBudget } {
  const plan = orgSlug === null ? undefined : cfg.plans[cfg.orgPlans[orgSlug] ?? ""];
  return { token: plan?.token ?? cfg.token, org: plan?.org ?? cfg.org };
}
