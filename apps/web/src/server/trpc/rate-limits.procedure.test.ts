import { randomUUID } from "node:crypto";
import { createDb, type Db } from "@kiln/db";
import {
  addMember,
  createOrg,
  createRateLimitRedis,
  RateLimiter,
  rateLimitConfigFromEnv,
  rateLimitEnvSchema,
} from "@kiln/engine";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { dashboardLimit } from "../http/rate-limit.ts";
import { trpcResponseMeta } from "./response-meta.ts";
import { appRouter } from "./router.ts";

// The dashboard's rate limit (docs/adr/0044) through the real router and fetch handler, on a cloned
// real database and the machine's real Redis: a user over their bucket gets TOO_MANY_REQUESTS with
// domainCode RATE.LIMITED and Retry-After, and the org bucket is shared by the org's users but not
// with another org's.
const dbName = uniqueDatabaseName("web_rate");
let db: Db;
let redis: Redis;
const users: Record<string, { id: string; login: string }> = {};
// Small budgets and a key space of this run's own (org ids are fresh UUIDs per database clone).
const cfg = rateLimitConfigFromEnv(
  rateLimitEnvSchema.parse({
    KILN_RATE_LIMIT_TOKEN_PER_MINUTE: "1",
    KILN_RATE_LIMIT_TOKEN_BURST: "3",
    KILN_RATE_LIMIT_ORG_PER_MINUTE: "1",
    KILN_RATE_LIMIT_ORG_BURST: "5",
  }),
);

async function call(login: string, org: string): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const input = encodeURIComponent(JSON.stringify({ org }));
  const res = await fetchRequestHandler({
    endpoint: "/api/trpc",
    req: new Request(`http://kiln.test/api/trpc/tenants.settings?input=${input}`),
    router: appRouter,
    createContext: () => ({ db, user: users[login] ?? null, rateLimit: dashboardLimit({ cfg, limiter }) }),
    responseMeta: trpcResponseMeta,
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
}

let limiter: RateLimiter;

beforeAll(async () => {
  db = createDb({ url: await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), dbName), max: 4 });
  redis = createRateLimitRedis("redis://127.0.0.1:6379", 500);
  limiter = new RateLimiter(redis, () => undefined);
  for (const slug of ["acme", "globex"]) await createOrg(db, slug);
  for (const [org, login] of [
    ["acme", "ada"],
    ["acme", "max"],
    ["globex", "gus"],
  ] as const) {
    const { userId } = await addMember(db, {
      orgSlug: org,
      login: `${login}-${randomUUID().slice(0, 8)}`,
      role: "admin",
    });
    users[login] = { id: userId, login };
  }
});

afterAll(async () => {
  redis?.disconnect();
  await db?.$disconnect();
  await dropDatabase(inject("pgServerUrl"), dbName);
});

describe("dashboard rate limits", () => {
  it("a user past their burst gets TOO_MANY_REQUESTS / RATE.LIMITED with Retry-After; the org bucket is the org's alone", async () => {
    const ada = [];
    for (let i = 0; i < 4; i++) ada.push(await call("ada", "acme"));
    expect(ada.slice(0, 3).map((r) => r.status)).toEqual([200, 200, 200]);
    const refused = ada[3];
    expect(refused?.status).toBe(429);
    expect(refused?.body.error.data).toMatchObject({ code: "TOO_MANY_REQUESTS", domainCode: "RATE.LIMITED" });
    expect(Number(refused?.retryAfter)).toBeGreaterThanOrEqual(1);

    // The org's bucket (burst 5) has 2 left after ada's 3: max gets 2, then the org is out.
    const max = [];
    for (let i = 0; i < 3; i++) max.push((await call("max", "acme")).status);
    expect(max).toEqual([200, 200, 429]);

    // Another org is untouched by acme's spending.
    expect((await call("gus", "globex")).status).toBe(200);
  });

  it("an outsider refused by the tenant query spends nobody's budget", async () => {
    const before = await call("gus", "globex");
    expect(before.status).toBe(200);
    // gus is not in acme: refused by the tenant query before any bucket is charged.
    for (let i = 0; i < 5; i++) expect((await call("gus", "acme")).status).not.toBe(429);
    // gus's third token (burst 3: one spent in each test above) is still there.
    expect((await call("gus", "globex")).status).toBe(200);
  });
});
