import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { freePort, startRedis } from "@kiln/testkit";
import type { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { controlPlaneRegistry } from "../src/metrics/index.ts";
import {
  apiBudgetsFor,
  createRateLimitRedis,
  rateLimitConfigFromEnv,
  rateLimitEnvSchema,
  RateLimiter,
  type BucketSpec,
} from "../src/rate-limits/index.ts";

// The token bucket against the machine's real Redis (docs/adr/0044). Every test uses keys of its
// own (a random prefix), so runs in parallel with other suites never share a bucket.

const REDIS_URL = "redis://127.0.0.1:6379";
const clients: Redis[] = [];
const warnings: string[] = [];

function limiter(url = REDIS_URL, timeoutMs = 200): RateLimiter {
  const redis = createRateLimitRedis(url, timeoutMs);
  clients.push(redis);
  return new RateLimiter(redis, (m) => warnings.push(m));
}

const key = (name: string) => `kiln:rl:test:${randomUUID()}:${name}`;
const bucket = (perMinute: number, burst: number, k = key("b")): BucketSpec => ({ key: k, perMinute, burst });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function counter(name: string, surface: string): Promise<number> {
  const m = (await controlPlaneRegistry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = (m?.values as { value: number; labels: Record<string, string> }[] | undefined)?.find(
    (x) => x.labels.surface === surface,
  );
  return v?.value ?? 0;
}

afterAll(async () => {
  for (const c of clients) c.disconnect();
});

describe("token bucket in Redis", () => {
  it("admits the burst at once, then refuses with how long until a token is back", async () => {
    const l = limiter();
    const b = bucket(60, 5); // one token a second
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await l.check("api", [b]));
    expect(answers.slice(0, 5).every((a) => a?.allowed)).toBe(true);
    expect(answers.slice(0, 5).map((a) => a?.remaining)).toEqual([4, 3, 2, 1, 0]);
    const refused = answers[5];
    expect(refused?.allowed).toBe(false);
    // One token refills in 1000 ms; a few ms have passed since the bucket was emptied.
    expect(refused?.retryAfterMs).toBeGreaterThan(800);
    expect(refused?.retryAfterMs).toBeLessThanOrEqual(1000);
    expect(refused?.limit).toBe(5);
  });

  it("refills at its rate and never above its burst", async () => {
    const l = limiter();
    const b = bucket(120, 3); // one token every 500 ms
    for (let i = 0; i < 3; i++) expect((await l.check("api", [b]))?.allowed).toBe(true);
    expect((await l.check("api", [b]))?.allowed).toBe(false);
    await sleep(600); // one token back
    expect((await l.check("api", [b]))?.allowed).toBe(true);
    expect((await l.check("api", [b]))?.allowed).toBe(false);
    await sleep(2_600); // five tokens' worth, capped at 3
    const after = [];
    for (let i = 0; i < 4; i++) after.push((await l.check("api", [b]))?.allowed);
    expect(after).toEqual([true, true, true, false]);
  });

  it("lets the caller back in once Retry-After has passed, not before", async () => {
    const l = limiter();
    const b = bucket(120, 1); // one token every 500 ms
    expect((await l.check("api", [b]))?.allowed).toBe(true);
    const refused = await l.check("api", [b]);
    expect(refused?.allowed).toBe(false);
    await sleep(Math.max(0, (refused?.retryAfterMs ?? 0) - 150));
    expect((await l.check("api", [b]))?.allowed).toBe(false);
    await sleep(200);
    expect((await l.check("api", [b]))?.allowed).toBe(true);
  });

  it("never admits more than the bucket holds when many callers race on separate connections", async () => {
    const limiters = [limiter(), limiter(), limiter(), limiter()];
    const b = bucket(1, 10); // refills one token a minute: nothing comes back during the test
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (limiters[i % 4] as RateLimiter).check("api", [b])),
    );
    expect(answers.filter((a) => a?.allowed)).toHaveLength(10);
    expect(answers.filter((a) => a?.allowed === false)).toHaveLength(190);
  });

  it("spends from every bucket or from none: a request the org refuses costs its token nothing", async () => {
    const l = limiter();
    const token = bucket(1, 10);
    const org = bucket(1, 3);
    const both = [];
    for (let i = 0; i < 5; i++) both.push((await l.check("api", [token, org]))?.allowed);
    expect(both).toEqual([true, true, true, false, false]);
    // The token bucket lost 3, not 5: 7 left on its own.
    const alone = [];
    for (let i = 0; i < 8; i++) alone.push((await l.check("api", [token]))?.allowed);
    expect(alone).toEqual([true, true, true, true, true, true, true, false]);
  });

  it("counts refusals in kiln_rate_limited_total by surface", async () => {
    const l = limiter();
    const before = await counter("kiln_rate_limited_total", "webhook");
    const b = bucket(1, 1);
    await l.check("webhook", [b]);
    await l.check("webhook", [b]);
    await l.check("webhook", [b]);
    expect(await counter("kiln_rate_limited_total", "webhook")).toBe(before + 2);
  });
});

describe("Redis unavailable: fail open", () => {
  it("lets requests through at once when nothing listens, warns once, counts each", async () => {
    const port = await freePort();
    const l = limiter(`redis://127.0.0.1:${port}`, 100);
    const before = await counter("kiln_rate_limit_fail_open_total", "agent");
    const warnedBefore = warnings.length;
    const t0 = performance.now();
    const answers = await Promise.all(Array.from({ length: 20 }, () => l.check("agent", [bucket(1, 1)])));
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(answers.every((a) => a === null)).toBe(true);
    expect(await counter("kiln_rate_limit_fail_open_total", "agent")).toBe(before + 20);
    // Throttled: one warning for the burst of failures, not twenty.
    expect(warnings.length - warnedBefore).toBe(1);
  });

  it("fails open without waiting once a Redis it was using goes away, and limits again when it is back", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-rl-redis-"));
    let redis = await startRedis({ dataDir: dir });
    const port = Number(new URL(redis.url).port);
    const l = limiter(redis.url, 100);
    const b = bucket(1, 1);
    expect((await l.check("api", [b]))?.allowed).toBe(true);
    expect((await l.check("api", [b]))?.allowed).toBe(false);
    await redis.stop();
    await sleep(100);
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) expect(await l.check("api", [b])).toBeNull();
    expect(performance.now() - t0).toBeLessThan(500);
    redis = await startRedis({ dataDir: dir, port });
    const deadline = Date.now() + 5_000;
    let back = null;
    while (Date.now() < deadline && back === null) {
      back = await l.check("api", [bucket(60, 1)]);
      if (back === null) await sleep(100);
    }
    expect(back?.allowed).toBe(true);
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  });
});

describe("rate-limit configuration", () => {
  it("defaults to 600 a minute with a burst of 100 per token and a larger org budget", () => {
    const cfg = rateLimitConfigFromEnv(rateLimitEnvSchema.parse({}));
    expect(cfg.enabled).toBe(true);
    expect(cfg.token).toEqual({ perMinute: 600, burst: 100 });
    expect(cfg.org.perMinute).toBeGreaterThan(cfg.token.perMinute);
    expect(cfg.org.burst).toBeGreaterThan(cfg.token.burst);
    expect(rateLimitConfigFromEnv(rateLimitEnvSchema.parse({ KILN_RATE_LIMIT_ENABLED: "false" })).enabled).toBe(false);
  });

  it("gives an org its plan's budgets and everyone else the defaults", () => {
    const cfg = rateLimitConfigFromEnv(
      rateLimitEnvSchema.parse({
        KILN_RATE_LIMIT_PLANS: JSON.stringify({ enterprise: { org: { per_minute: 30_000, burst: 5_000 } } }),
        KILN_RATE_LIMIT_ORG_PLANS: "acme=enterprise",
      }),
    );
    expect(apiBudgetsFor(cfg, "acme")).toEqual({ token: cfg.token, org: { perMinute: 30_000, burst: 5_000 } });
    expect(apiBudgetsFor(cfg, "other")).toEqual({ token: cfg.token, org: cfg.org });
    expect(apiBudgetsFor(cfg, null)).toEqual({ token: cfg.token, org: cfg.org });
  });

  it("refuses a plan nobody defined, malformed plans and malformed assignments", () => {
    expect(() => rateLimitConfigFromEnv(rateLimitEnvSchema.parse({ KILN_RATE_LIMIT_ORG_PLANS: "acme=gold" }))).toThrow(
      /does not define/,
    );
    expect(() =>
      rateLimitEnvSchema.parse({ KILN_RATE_LIMIT_PLANS: '{"gold":{"token":{"per_minute":0,"burst":1}}}' }),
    ).toThrow();
    expect(() => rateLimitEnvSchema.parse({ KILN_RATE_LIMIT_PLANS: "not json" })).toThrow();
    expect(() => rateLimitEnvSchema.parse({ KILN_RATE_LIMIT_ORG_PLANS: "acme" })).toThrow();
  });
});
