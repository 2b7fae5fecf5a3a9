import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { claimJob, type JobTicket } from "../src/dispatch/claim-job.ts";
import { completeAttempt } from "../src/attempts/complete-attempt.ts";
import { heartbeat } from "../src/attempts/heartbeat.ts";
import { reconcile } from "../src/attempts/reconcile.ts";
import { getRun } from "../src/runs/get-run.ts";
import { setEntitlement } from "../src/tenants/entitlements.ts";
import { createAgentToken } from "../src/tenants/admin.ts";
import { registerSession } from "../src/dispatch/register-session.ts";
import { def, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "./support.ts";

const t = useTestDb();

const parallel = (n: number, tier?: string) =>
  def(
    `version: 1\njobs:\n${Array.from({ length: n }, (_, i) => `  - {name: j${i}, needs: [], steps: ["true"]${tier ? `, tier: ${tier}` : ""}}\n`).join("")}`,
  );

/** Two orgs sharing one pool, as on a shared fleet. */
async function sharedPool(): Promise<{
  a: Tenant;
  b: Tenant;
  pool: string;
  session: (capacity: number) => Promise<string>;
}> {
  const a = await seedTenant(t.db());
  const b = { ...(await seedTenant(t.db())), pool: a.pool };
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
  return { a, b, pool: a.pool, session };
}

async function claim(sessionId: string): Promise<JobTicket | null> {
  const r = await claimJob(t.db(), TEST_CFG, { sessionId, claimRequestId: randomUUID() });
  return r.kind === "claimed" ? r.ticket : null;
}
const done = (tk: JobTicket, outcome: "success" | "cancelled" = "success") =>
  completeAttempt(t.db(), TEST_CFG, {
    attemptId: tk.attemptId,
    jobId: tk.jobId,
    epoch: tk.epoch,
    outcome,
    sandboxDestroyed: true,
  });

describe("fair dispatch in the claim transaction", () => {
  it("never exceeds an org's hard cap under 8 racing claimers, and releases slots on completion", async () => {
    const { a, session } = await sharedPool();
    await setEntitlement(t.db(), { orgSlug: a.slug, pool: a.pool, slots: 1, weight: 1, hardCap: 3, actor: "test" });
    const runId = await seedFrozenRun(t.db(), a, parallel(20));
    const sessions = await Promise.all(Array.from({ length: 8 }, () => session(50)));
    const got = (await Promise.all(sessions.map((s) => claim(s)))).filter((x): x is JobTicket => x !== null);
    expect(got).toHaveLength(3);
    const usage = await t.db().$queryRaw<
      { running: number }[]
    >`SELECT running FROM org_pool_usage WHERE org_id = ${a.orgId}::uuid AND pool = ${a.pool}`;
    expect(usage[0]?.running).toBe(3);
    const view = await getRun(t.db(), { orgId: a.orgId, runId, cfg: TEST_CFG });
    expect(view.jobs.filter((j) => j.status === "ready").every((j) => j.queue !== null)).toBe(true);
    await done(got[0]!);
    expect(await claim(sessions[0]!)).not.toBeNull();
    expect(await claim(sessions[1]!)).toBeNull();
    const again = await t.db().$queryRaw<
      { running: number }[]
    >`SELECT running FROM org_pool_usage WHERE org_id = ${a.orgId}::uuid AND pool = ${a.pool}`;
    expect(again[0]?.running).toBe(3);
  });

  it("a small org's job goes ahead of a whale's backlog, and lent capacity returns to its owner", async () => {
    const { a, b, session } = await sharedPool();
    await setEntitlement(t.db(), { orgSlug: b.slug, pool: b.pool, slots: 2, weight: 1, actor: "test" });
    await seedFrozenRun(t.db(), a, parallel(30));
    const s = await session(4);
    // B is idle: A borrows the whole pool.
    const first = [await claim(s), await claim(s), await claim(s), await claim(s)];
    expect(first.every((x) => x?.orgId === a.orgId)).toBe(true);
    await seedFrozenRun(t.db(), b, parallel(2));
    await done(first[0]!);
    // The freed slot goes to the owner B, although A's queued jobs are older.
    expect((await claim(s))?.orgId).toBe(b.orgId);
    await done(first[1]!);
    expect((await claim(s))?.orgId).toBe(b.orgId);
    await done(first[2]!);
    expect((await claim(s))?.orgId).toBe(a.orgId);
  });

  it("interactive work goes before background work queued earlier", async () => {
    const { a, session } = await sharedPool();
    await seedFrozenRun(t.db(), a, parallel(3, "background"));
    await seedFrozenRun(t.db(), a, parallel(1, "interactive"));
    const s = await session(10);
    const tk = await claim(s);
    const tier = await t.db().$queryRaw<{ tier: string }[]>`SELECT tier FROM job_run WHERE id = ${tk!.jobId}::uuid`;
    expect(tier[0]?.tier).toBe("interactive");
  });

  it("queue positions predict the order jobs actually start in", async () => {
    const { a, b, session } = await sharedPool();
    const runA = await seedFrozenRun(t.db(), a, parallel(4));
    await new Promise((r) => setTimeout(r, 20));
    const runB = await seedFrozenRun(t.db(), b, parallel(2));
    const s = await session(1);
    const views = [
      await getRun(t.db(), { orgId: a.orgId, runId: runA, cfg: TEST_CFG }),
      await getRun(t.db(), { orgId: b.orgId, runId: runB, cfg: TEST_CFG }),
    ];
    const predicted = views
      .flatMap((v) => v.jobs)
      .filter((j) => j.queue?.position)
      .sort((x, y) => x.queue!.position! - y.queue!.position!)
      .map((j) => j.id);
    expect(predicted).toHaveLength(6);
    const etas = views
      .flatMap((v) => v.jobs)
      .map((j) => j.queue?.estimated_start_at)
      .filter(Boolean);
    expect(etas).toHaveLength(6);
    const actual: string[] = [];
    for (let i = 0; i < 6; i++) {
      const tk = await claim(s);
      actual.push(tk!.jobId);
      await done(tk!);
    }
    expect(actual).toEqual(predicted);
  });

  it("returns lent capacity by preempting borrowed background work, re-queued without spending retries", async () => {
    const { a, b, session } = await sharedPool();
    await setEntitlement(t.db(), { orgSlug: b.slug, pool: b.pool, slots: 1, weight: 1, actor: "test" });
    await seedFrozenRun(t.db(), a, parallel(2, "background"));
    const s = await session(2);
    const running = [await claim(s), await claim(s)];
    expect(running.every((x) => x?.orgId === a.orgId)).toBe(true);
    await seedFrozenRun(t.db(), b, parallel(1));
    const rec = await reconcile(t.db(), TEST_CFG);
    expect(rec.preempted).toBe(1);
    const hbs = await Promise.all(
      running.map((r) => heartbeat(t.db(), TEST_CFG, { attemptId: r!.attemptId, jobId: r!.jobId, epoch: r!.epoch })),
    );
    const victimIdx = hbs.findIndex((h) => h.cancelRequested);
    expect(victimIdx).toBeGreaterThanOrEqual(0);
    const victim = running[victimIdx]!;
    await done(victim, "cancelled");
    const after = await t.db().$queryRaw<
      { outcome: string; cause: string }[]
    >`SELECT outcome, cause FROM attempt WHERE id = ${victim.attemptId}::uuid`;
    expect(after[0]).toEqual({ outcome: "platform_failure", cause: "capacity.preempted" });
    const job = await t.db().$queryRaw<
      { status: string; platform_retries: number }[]
    >`SELECT status, platform_retries FROM job_run WHERE id = ${victim.jobId}::uuid`;
    expect(job[0]).toEqual({ status: "ready", platform_retries: 0 });
    expect((await claim(s))?.orgId).toBe(b.orgId);
  });
});
