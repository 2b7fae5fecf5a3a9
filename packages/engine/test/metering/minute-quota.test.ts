// Issue 33 item 3 (docs/adr/0045): minute quotas per org and UTC month. At 100% new jobs wait READY
// with quota.minutes_exhausted (never rejected) and start when the quota is raised or in a new month;
// warnings at 80% and 100% are audit events given once per threshold and month; against real PostgreSQL.
import { randomUUID } from "node:crypto";
import { createDb } from "@kiln/db";
import { describe, expect, it } from "vitest";
import { reconcile } from "../../src/attempts/reconcile.ts";
import { claimJob } from "../../src/dispatch/claim-job.ts";
import { setPoolPolicy } from "../../src/dispatch/pool-policy.ts";
import { queueInfoForRun } from "../../src/dispatch/queue-view.ts";
import { computeDesiredStatuses } from "../../src/forge/desired-statuses.ts";
import { minuteQuotaStatus, setMinuteQuota } from "../../src/metering/index.ts";
import { readFleetSnapshot } from "../../src/metrics/fleet-snapshot.ts";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "../support.ts";
import { backdate, claim, complete } from "./support.ts";

const t = useTestDb();

async function notices(
  orgId: string,
): Promise<{ kind: string; subject: string | null; data: { threshold?: number } }[]> {
  return t.db().$queryRaw`
    SELECT kind, subject, data FROM audit_event WHERE org_id = ${orgId}::uuid AND kind = 'quota.minutes_threshold' ORDER BY seq`;
}

/** Runs one job of `seconds` to success: what the org has used afterwards. */
async function use(ten: Tenant, sessionId: string, seconds: number): Promise<void> {
  await seedFrozenRun(t.db(), ten, def(ONE_JOB));
  const tk = await claim(t.db(), sessionId);
  await backdate(t.db(), tk.attemptId, seconds);
  await complete(t.db(), tk);
}

async function waitReason(runId: string): Promise<{ status: string; wait_reason: string | null }[]> {
  return t.db().$queryRaw`SELECT status, wait_reason FROM job_run WHERE run_id = ${runId}::uuid`;
}

describe("minute quota", () => {
  it("at 100% a new job waits READY with the reason, and starts once the quota is raised", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    await setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes: 2, actor: "cli:test" });
    await use(ten, s, 100);
    expect(await minuteQuotaStatus(t.db(), ten.orgId)).toMatchObject({ level: "warning", quotaMinutes: 2 });
    expect((await notices(ten.orgId)).map((n) => n.data.threshold)).toEqual([80]);
    await use(ten, s, 30);
    const out = await minuteQuotaStatus(t.db(), ten.orgId);
    expect(out.level).toBe("exhausted");
    expect(out.percent).toBeGreaterThanOrEqual(100);
    expect((await notices(ten.orgId)).map((n) => n.data.threshold)).toEqual([80, 100]);

    const waiting = await seedFrozenRun(t.db(), ten, def(ONE_JOB));
    // The view leaves the org out: nothing to claim (the job is not rejected: it stays READY).
    expect((await claimJob(t.db(), TEST_CFG, { sessionId: s, claimRequestId: randomUUID() })).kind).toBe("none");
    const [job] = await t.db().$queryRaw<{ id: string }[]>`SELECT id FROM job_run WHERE run_id = ${waiting}::uuid`;
    if (!job) throw new Error("no job");
    const queue = await queueInfoForRun(t.db(), TEST_CFG, waiting);
    expect(queue.get(job.id)).toMatchObject({ reason: "quota.minutes_exhausted", position: null });
    // Nor does the fleet's oldest-eligible-job age count it: no wait guarantee while out of minutes.
    const fleet = await readFleetSnapshot(t.db());
    expect([...fleet.readyJobs.values()]).toEqual([1]);
    expect(fleet.oldestEligible.size).toBe(0);

    // Raised: the same job starts at the next claim; no notice is given twice.
    await setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes: 10, actor: "cli:test" });
    const started = await claim(t.db(), s);
    expect(started.jobId).toBe(job.id);
    expect(await waitReason(waiting)).toEqual([{ status: "running", wait_reason: null }]);
    expect((await notices(ten.orgId)).map((n) => n.subject)).toHaveLength(2);
    await complete(t.db(), started);
  });

  it("a claimer whose view predates the exhaustion is refused by the claim itself, with the reason", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    await setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes: 1, actor: "cli:test" });
    // The completion runs in another process (its own connection pool): this process's dispatch view,
    // kept for a minute, is not invalidated by it and still offers the second job.
    const other = createDb({ url: t.url(), max: 2 });
    try {
      const cfg = { ...TEST_CFG, dispatchViewMs: 60_000 };
      await seedFrozenRun(t.db(), ten, def(ONE_JOB));
      const late = await seedFrozenRun(t.db(), ten, def(ONE_JOB));
      const first = await claimJob(t.db(), cfg, { sessionId: s, claimRequestId: randomUUID() });
      if (first.kind !== "claimed") throw new Error("nothing claimed");
      await backdate(t.db(), first.ticket.attemptId, 61);
      await complete(other, first.ticket);
      const refused = await claimJob(t.db(), cfg, { sessionId: s, claimRequestId: randomUUID() });
      expect(refused.kind).not.toBe("claimed");
      expect(await waitReason(late)).toEqual([{ status: "ready", wait_reason: "quota.minutes_exhausted" }]);
    } finally {
      await other.$disconnect();
    }
  });

  it("counts the current UTC month only: last month's minutes do not hold work back", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    await setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes: 1, actor: "cli:test" });
    // Last month's total (as completions of last month left it) is far over the quota.
    await t.db().$executeRaw`
      INSERT INTO org_minute_tally (org_id, month, shard, seconds)
      VALUES (${ten.orgId}::uuid, (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date, 3, 100000)`;
    expect(await minuteQuotaStatus(t.db(), ten.orgId)).toMatchObject({ level: "ok", usedSeconds: 0 });
    await use(ten, s, 61);
    await seedFrozenRun(t.db(), ten, def(ONE_JOB));
    expect((await claimJob(t.db(), TEST_CFG, { sessionId: s, claimRequestId: randomUUID() })).kind).toBe("none");
    // Unlimited again: the job starts.
    await setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes: null, actor: "cli:test" });
    await claim(t.db(), s);
  });

  it("an exhausted org's self-hosted pool keeps running its jobs", async () => {
    const ten = await seedTenant(t.db());
    const shared = await newSession(t.db(), ten);
    await setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes: 1, actor: "cli:test" });
    await use(ten, shared, 70);
    expect((await minuteQuotaStatus(t.db(), ten.orgId)).level).toBe("exhausted");
    await setPoolPolicy(t.db(), {
      name: ten.pool,
      minIsolation: "process",
      development: true,
      ownerOrg: ten.slug,
      actor: "test",
    });
    await seedFrozenRun(t.db(), ten, def(ONE_JOB));
    const tk = await claim(t.db(), shared);
    await backdate(t.db(), tk.attemptId, 500);
    await complete(t.db(), tk);
    expect((await minuteQuotaStatus(t.db(), ten.orgId)).usedSeconds).toBeLessThan(100);
  });

  it("the forge status of a waiting run says the minutes are used up", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    await setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes: 1, actor: "cli:test" });
    // Watched in a pool no host serves, so the jobs `use` runs are never this run's.
    const runId = await seedFrozenRun(t.db(), { ...ten, pool: `${ten.pool}-unserved` }, def(ONE_JOB));
    await t.db().$executeRaw`
      INSERT INTO transition_event (org_id, run_id, entity, from_state, to_state, reason)
      VALUES (${ten.orgId}::uuid, ${runId}::uuid, 'run', 'pending', 'running', 'frozen')`;
    const before = await computeDesiredStatuses(t.db(), { publicUrl: null }, runId);
    expect(before?.statuses.every((x) => !x.description.includes("minute"))).toBe(true);
    await use(ten, s, 50);
    const warned = await computeDesiredStatuses(t.db(), { publicUrl: null }, runId);
    expect(warned?.statuses[0]?.description).toMatch(/· (8\d|9\d)% of this month's minutes used$/);
    await use(ten, s, 20);
    const out = await computeDesiredStatuses(t.db(), { publicUrl: null }, runId);
    expect(out?.statuses.map((x) => x.description.includes("minute quota used up"))).toEqual([true, true]);
    for (const x of out?.statuses ?? []) expect([...x.description].length).toBeLessThanOrEqual(140);
  });

  it("a threshold crossing no completion noticed is noticed by the reconciler, once", async () => {
    const ten = await seedTenant(t.db());
    await setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes: 10, actor: "cli:test" });
    // As two racing completions leave it: each read the other's tally before it committed.
    await t.db().$executeRaw`
      INSERT INTO org_minute_tally (org_id, month, shard, seconds) VALUES
        (${ten.orgId}::uuid, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 1, 300),
        (${ten.orgId}::uuid, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 2, 300)`;
    expect(await notices(ten.orgId)).toEqual([]);
    await reconcile(t.db(), TEST_CFG);
    expect((await notices(ten.orgId)).map((n) => n.data.threshold)).toEqual([80, 100]);
    await reconcile(t.db(), TEST_CFG);
    await setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes: 5, actor: "cli:test" });
    expect(await notices(ten.orgId)).toHaveLength(2);
  });

  it("refuses a bad quota with REQUEST.INVALID and an unknown org with ORG.NOT_FOUND", async () => {
    const ten = await seedTenant(t.db());
    for (const minutes of [-1, 1.5, Number.NaN])
      await expect(setMinuteQuota(t.db(), { orgSlug: ten.slug, minutes, actor: "x" })).rejects.toMatchObject({
        code: "REQUEST.INVALID",
      });
    await expect(setMinuteQuota(t.db(), { orgSlug: "no-such-org", minutes: 5, actor: "x" })).rejects.toMatchObject({
      code: "ORG.NOT_FOUND",
    });
  });
});
