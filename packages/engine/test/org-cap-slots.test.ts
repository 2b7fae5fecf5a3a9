import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { claimJob, type JobTicket } from "../src/dispatch/claim-job.ts";
import { completeAttempt } from "../src/attempts/complete-attempt.ts";
import { setEntitlement } from "../src/tenants/entitlements.ts";
import { createAgentToken } from "../src/tenants/admin.ts";
import { registerSession } from "../src/dispatch/register-session.ts";
import { def, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "./support.ts";

// The org hard cap as slot rows (ADR 0042): exact while claims and completions of one org race, when
// the cap is lowered under running work, and when a cap is set on an org that already runs work.
const t = useTestDb();

const parallel = (n: number) =>
  def(
    `version: 1\njobs:\n${Array.from({ length: n }, (_, i) => `  - {name: j${i}, needs: [], steps: ["true"]}\n`).join("")}`,
  );

async function org(): Promise<{ a: Tenant; session: (capacity: number) => Promise<string> }> {
  const a = await seedTenant(t.db());
  const agent = await createAgentToken(t.db(), { pool: a.pool });
  const session = async (capacity: number) =>
    (
      await registerSession(t.db(), TEST_CFG, {
        agentTokenId: agent.id,
        pool: a.pool,
        body: {
          hostname: `h-${randomUUID().slice(0, 6)}`,
          capacity,
          labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
        },
      })
    ).sessionId;
  return { a, session };
}

// FIFO candidates for the race: the fair view also honours caps (advisory, from its snapshot), which
// would keep most over-cap claims from ever reaching the guard this file is about.
const FIFO = { ...TEST_CFG, dispatchPolicy: "fifo" as const };

async function claim(sessionId: string, cfg = TEST_CFG): Promise<JobTicket | null> {
  const r = await claimJob(t.db(), cfg, { sessionId, claimRequestId: randomUUID() });
  return r.kind === "claimed" ? r.ticket : null;
}
const done = (tk: JobTicket) =>
  completeAttempt(t.db(), TEST_CFG, {
    attemptId: tk.attemptId,
    jobId: tk.jobId,
    epoch: tk.epoch,
    outcome: "success",
    sandboxDestroyed: true,
  });

async function running(a: Tenant): Promise<number> {
  const rows = await t.db().$queryRaw<{ running: number }[]>`
    SELECT running FROM org_pool_usage WHERE org_id = ${a.orgId}::uuid AND pool = ${a.pool}`;
  return rows[0]?.running ?? 0;
}

/** The attempt holding each slot of the org's pool. */
async function holders(a: Tenant): Promise<Map<number, string | null>> {
  const rows = await t.db().$queryRaw<{ slot: number; attempt_id: string | null }[]>`
    SELECT slot, attempt_id FROM org_pool_slot WHERE org_id = ${a.orgId}::uuid AND pool = ${a.pool} ORDER BY slot`;
  return new Map(rows.map((r) => [r.slot, r.attempt_id]));
}

describe("org hard cap as slot rows", () => {
  it("stays exact while 8 claimers race claims and completions of one org", async () => {
    const { a, session } = await org();
    await setEntitlement(t.db(), { orgSlug: a.slug, pool: a.pool, slots: 1, weight: 1, hardCap: 3, actor: "test" });
    for (let i = 0; i < 2; i++) await seedFrozenRun(t.db(), a, parallel(15));
    const sessions = await Promise.all(Array.from({ length: 8 }, () => session(50)));
    let stop = false;
    const seen: number[] = [];
    // Each sample is one snapshot of the running attempts: the cap must hold at every instant.
    const sampler = (async () => {
      while (!stop) seen.push(await running(a));
    })();
    let finished = 0;
    await Promise.all(
      sessions.map(async (s) => {
        for (let idle = 0; idle < 40 && finished < 24; ) {
          const tk = await claim(s, FIFO);
          if (!tk) {
            idle++;
            await new Promise((r) => setTimeout(r, 5));
            continue;
          }
          await done(tk);
          finished++;
        }
      }),
    );
    stop = true;
    await sampler;
    expect(finished).toBeGreaterThanOrEqual(24);
    expect(seen.length).toBeGreaterThan(10);
    expect(Math.max(...seen)).toBeLessThanOrEqual(3);
    expect(await running(a)).toBe(0);
    // Every slot is free again and there are exactly as many as the cap.
    expect([...(await holders(a)).entries()]).toEqual([
      [0, null],
      [1, null],
      [2, null],
    ]);
  });

  it("takes no slot while a slot past a lowered cap is still held", async () => {
    const { a, session } = await org();
    await setEntitlement(t.db(), { orgSlug: a.slug, pool: a.pool, slots: 1, weight: 1, hardCap: 4, actor: "test" });
    await seedFrozenRun(t.db(), a, parallel(10));
    const s = await session(50);
    const got = [await claim(s), await claim(s), await claim(s), await claim(s)];
    expect(got.every((x) => x !== null)).toBe(true);
    await setEntitlement(t.db(), { orgSlug: a.slug, pool: a.pool, slots: 1, weight: 1, hardCap: 2, actor: "test" });
    const slots = await holders(a);
    const bySlot = (n: number) => got.find((g) => g?.attemptId === slots.get(n))!;
    // The holders of slots 0 and 1 end: 2 still run, which is the new cap.
    await done(bySlot(0));
    await done(bySlot(1));
    expect(await running(a)).toBe(2);
    expect(await claim(s)).toBeNull();
    await done(bySlot(2));
    await done(bySlot(3));
    expect(await running(a)).toBe(0);
    // Back under the cap: the slots past it are gone and exactly two claims succeed.
    expect([...(await holders(a)).keys()]).toEqual([0, 1]);
    expect(await claim(s)).not.toBeNull();
    expect(await claim(s)).not.toBeNull();
    expect(await claim(s)).toBeNull();
    expect(await running(a)).toBe(2);
  });

  it("counts work already running when a cap is first set", async () => {
    const { a, session } = await org();
    await seedFrozenRun(t.db(), a, parallel(10));
    const s = await session(50);
    const got = [await claim(s), await claim(s), await claim(s)];
    expect(got.every((x) => x !== null)).toBe(true);
    // No cap yet: no slot rows, nothing written for the cap at claim.
    expect((await holders(a)).size).toBe(0);
    await setEntitlement(t.db(), { orgSlug: a.slug, pool: a.pool, slots: 1, weight: 1, hardCap: 2, actor: "test" });
    expect([...(await holders(a)).values()].filter((h) => h !== null).sort()).toEqual(
      got.map((g) => g!.attemptId).sort(),
    );
    expect(await claim(s)).toBeNull();
    for (const g of got) await done(g!);
    expect(await claim(s)).not.toBeNull();
    expect(await claim(s)).not.toBeNull();
    expect(await claim(s)).toBeNull();
    // Removing the cap frees the org from slots: claims go on without them.
    await setEntitlement(t.db(), { orgSlug: a.slug, pool: a.pool, slots: 1, weight: 1, hardCap: null, actor: "test" });
    expect(await claim(s)).not.toBeNull();
    expect(await running(a)).toBe(3);
  });
});
