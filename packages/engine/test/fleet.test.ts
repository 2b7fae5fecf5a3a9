import { randomUUID } from "node:crypto";
import { dispatch, isDomainError } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../src/attempts/complete-attempt.ts";
import { claimJob, type JobTicket } from "../src/dispatch/claim-job.ts";
import { interruptibleClaimRefusal } from "../src/dispatch/interruptible-capacity.ts";
import { setPoolPolicy } from "../src/dispatch/pool-policy.ts";
import { registerSession } from "../src/dispatch/register-session.ts";
import {
  interruptibleShares,
  listFleet,
  recordSessionStats,
  requestReclaim,
  setPoolInterruptible,
} from "../src/fleet/index.ts";
import type { EngineConfig } from "../src/config/engine-config.ts";
import { createAgentToken } from "../src/tenants/admin.ts";
import { def, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "./support.ts";

// Interruptible capacity and the fleet view (issue 22, docs/adr/0035): the claim restriction from
// both sides, the reclaim re-dispatch, the share of background minutes, and stats persistence.

const t = useTestDb();

const tiered = (tier: string, name = "build") =>
  `version: 1\njobs:\n  - name: ${name}\n    tier: ${tier}\n    steps: [echo hi]\n`;

interface Host {
  sessionId: string;
  agentTokenId: string;
  runnerId: string;
}

/** A host with its runner row (what registration writes), in `pool`. */
async function host(tenant: Tenant, pool: string, name = `h-${randomUUID().slice(0, 6)}`): Promise<Host> {
  const cred = await createAgentToken(t.db(), { pool, orgSlug: tenant.slug });
  const rows = await t.db().$queryRaw<{ id: string }[]>`
    INSERT INTO runner (org_id, pool, name, isolation, agent_token_id, created_by, last_heartbeat_at)
    VALUES (${tenant.orgId}::uuid, ${pool}, ${name}, 'process', ${cred.id}::uuid, 'test', now()) RETURNING id`;
  const s = await registerSession(t.db(), TEST_CFG, {
    agentTokenId: cred.id,
    pool,
    body: {
      hostname: name,
      capacity: 4,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
    },
  });
  return { sessionId: s.sessionId, agentTokenId: cred.id, runnerId: rows[0]?.id ?? "" };
}

/** An interruptible pool serving the tenant's pool, with one host. */
async function spotPool(tenant: Tenant): Promise<string> {
  const spot = `spot-${randomUUID().slice(0, 8)}`;
  await setPoolPolicy(t.db(), { name: spot, minIsolation: "process", development: true, actor: "test" });
  await setPoolInterruptible(t.db(), {
    pool: spot,
    interruptible: true,
    serves: tenant.pool,
    actor: "ops",
    orgId: null,
  });
  return spot;
}

async function claim(
  cfg: EngineConfig,
  h: Host,
  offer?: { jobId: string; generation: number },
): Promise<JobTicket | null> {
  const r = await claimJob(t.db(), cfg, { sessionId: h.sessionId, claimRequestId: randomUUID(), offer: offer ?? null });
  return r.kind === "claimed" ? r.ticket : null;
}

async function jobOf(runId: string) {
  const rows = await t.db().$queryRaw<
    {
      id: string;
      status: string;
      tier: string;
      dispatch_generation: number;
      platform_retries: number;
      interruptible_excluded: boolean;
    }[]
  >`SELECT id, status, tier, dispatch_generation, platform_retries, interruptible_excluded FROM job_run WHERE run_id = ${runId}::uuid`;
  const j = rows[0];
  if (!j) throw new Error("no job");
  return j;
}

async function reportPlatformFailure(ticket: JobTicket, cause: string) {
  return completeAttempt(t.db(), TEST_CFG, {
    attemptId: ticket.attemptId,
    jobId: ticket.jobId,
    epoch: ticket.epoch,
    outcome: "platform_failure",
    cause,
    sandboxDestroyed: true,
  });
}

describe.each(["fifo", "fair"] as const)("an interruptible pool in the claim (%s)", (policy) => {
  const cfg: EngineConfig = { ...TEST_CFG, dispatchPolicy: policy };

  it("takes background work of the pool it serves and never an interactive or scheduled job", async () => {
    const tenant = await seedTenant(t.db());
    const spot = await host(tenant, await spotPool(tenant));
    const interactive = await seedFrozenRun(t.db(), tenant, def(tiered("interactive")));
    const scheduled = await seedFrozenRun(t.db(), tenant, def(tiered("scheduled")));
    const background = await seedFrozenRun(t.db(), tenant, def(tiered("background")));
    const got = await claim(cfg, spot);
    expect(got?.runId).toBe(background);
    // The foreground jobs stay queued for on-demand capacity, however often the spot host asks.
    expect(await claim(cfg, spot)).toBeNull();
    expect(await claim(cfg, spot)).toBeNull();
    expect((await jobOf(interactive)).status).toBe("ready");
    expect((await jobOf(scheduled)).status).toBe("ready");
    // The attempt holds its org's slot in the served pool and says where it ran.
    const rows = await t.db().$queryRaw<{ pool: string; on_interruptible: boolean }[]>`
      SELECT pool, on_interruptible FROM attempt WHERE id = ${got?.attemptId ?? ""}::uuid`;
    expect(rows).toEqual([{ pool: tenant.pool, on_interruptible: true }]);
    const onDemand = await host(tenant, tenant.pool);
    const a = await claim(cfg, onDemand);
    const b = await claim(cfg, onDemand);
    expect(new Set([a?.runId, b?.runId])).toEqual(new Set([interactive, scheduled]));
  });
});

describe("an interruptible pool, from the hostile side", () => {
  it("refuses a foreground job even when the claim names it (FIFO hint)", async () => {
    const tenant = await seedTenant(t.db());
    const spot = await host(tenant, await spotPool(tenant));
    const fg = await seedFrozenRun(t.db(), tenant, def(tiered("interactive")));
    const job = await jobOf(fg);
    const fifo: EngineConfig = { ...TEST_CFG, dispatchPolicy: "fifo" };
    expect(await claim(fifo, spot, { jobId: job.id, generation: job.dispatch_generation })).toBeNull();
    expect((await jobOf(fg)).status).toBe("ready");
  });

  it("re-checks on the locked row whatever a candidate list offered", () => {
    const session = { interruptible: true, serves: "default" };
    expect(
      interruptibleClaimRefusal(session, { tier: "interactive", pool: "default", interruptible_excluded: false }),
    ).toBe("interruptible_not_background");
    expect(
      interruptibleClaimRefusal(session, { tier: "background", pool: "other", interruptible_excluded: false }),
    ).toBe("interruptible_other_pool");
    expect(
      interruptibleClaimRefusal(session, { tier: "background", pool: "default", interruptible_excluded: true }),
    ).toBe("interruptible_reclaimed_before");
    expect(
      interruptibleClaimRefusal(session, { tier: "background", pool: "default", interruptible_excluded: false }),
    ).toBeNull();
    expect(
      interruptibleClaimRefusal(
        { interruptible: false, serves: null },
        { tier: "interactive", pool: "x", interruptible_excluded: false },
      ),
    ).toBeNull();
  });

  it("refuses flags that would let reclaimed work land on interruptible capacity again", async () => {
    const tenant = await seedTenant(t.db());
    const spot = await spotPool(tenant);
    const other = `spot2-${randomUUID().slice(0, 8)}`;
    await setPoolPolicy(t.db(), { name: other, minIsolation: "process", development: true, actor: "test" });
    const refused = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: unknown) => (isDomainError(e) ? e.code : String(e)),
      );
    expect(
      await refused(
        setPoolInterruptible(t.db(), { pool: other, interruptible: true, serves: spot, actor: "x", orgId: null }),
      ),
    ).toBe("POOL.INTERRUPTIBLE_REFUSED");
    expect(
      await refused(
        setPoolInterruptible(t.db(), { pool: other, interruptible: true, serves: other, actor: "x", orgId: null }),
      ),
    ).toBe("POOL.INTERRUPTIBLE_REFUSED");
    expect(
      await refused(setPoolInterruptible(t.db(), { pool: other, interruptible: true, actor: "x", orgId: null })),
    ).toBe("POOL.INTERRUPTIBLE_REFUSED");
    // An org admin cannot flag a pool its org does not own (scoped in the query).
    expect(
      await refused(
        setPoolInterruptible(t.db(), {
          pool: other,
          interruptible: true,
          serves: tenant.pool,
          actor: "x",
          orgId: tenant.orgId,
        }),
      ),
    ).toBe("POOL.NOT_INTERRUPTIBLE");
  });
});

describe("a reclaim", () => {
  it("re-dispatches the job to on-demand capacity with cause host.reclaimed, spending no retry", async () => {
    const tenant = await seedTenant(t.db());
    const spot = await host(tenant, await spotPool(tenant));
    const run = await seedFrozenRun(t.db(), tenant, def(tiered("background")));
    const first = await claim(TEST_CFG, spot);
    expect(first?.runId).toBe(run);
    if (!first) return;
    expect(await reportPlatformFailure(first, dispatch.RECLAIMED_CAUSE)).toEqual({
      accepted: true,
      jobOutcome: "retry_scheduled",
    });
    expect(await jobOf(run)).toMatchObject({ status: "ready", platform_retries: 0, interruptible_excluded: true });
    // Not to an interruptible pool again for this job; on-demand capacity takes it.
    expect(await claim(TEST_CFG, spot)).toBeNull();
    const onDemand = await host(tenant, tenant.pool);
    const second = await claim(TEST_CFG, onDemand);
    expect(second?.jobId).toBe(first.jobId);
    const attempts = await t.db().$queryRaw<
      { epoch: number; outcome: string | null; cause: string | null; on_interruptible: boolean }[]
    >`
      SELECT epoch, outcome, cause, on_interruptible FROM attempt WHERE job_id = ${first.jobId}::uuid ORDER BY epoch`;
    expect(attempts).toEqual([
      { epoch: 1, outcome: "platform_failure", cause: "host.reclaimed", on_interruptible: true },
      { epoch: 2, outcome: null, cause: null, on_interruptible: false },
    ]);
    // The fleet view counts the reclaim apart from platform failures.
    const fleet = await listFleet(t.db(), { orgId: tenant.orgId, leaseTtlMs: TEST_CFG.leaseTtlMs });
    const spotRow = fleet.find((h) => h.id === spot.runnerId);
    expect(spotRow).toMatchObject({ interruptible: true, reclaimsLastHour: 1, platformFailuresLastHour: 0 });
  });

  it("from an on-demand host naming the cause is an ordinary platform failure (budget and backoff)", async () => {
    const tenant = await seedTenant(t.db());
    const onDemand = await host(tenant, tenant.pool);
    const run = await seedFrozenRun(t.db(), tenant, def(tiered("background")));
    const ticket = await claim(TEST_CFG, onDemand);
    if (!ticket) throw new Error("no claim");
    await reportPlatformFailure(ticket, dispatch.RECLAIMED_CAUSE);
    expect(await jobOf(run)).toMatchObject({ platform_retries: 1, interruptible_excluded: false });
  });
});

describe("the share of background minutes on interruptible capacity", () => {
  it("divides interruptible minutes by every background minute of the pool's queue", async () => {
    const tenant = await seedTenant(t.db());
    const spotName = await spotPool(tenant);
    const spot = await host(tenant, spotName);
    const onDemand = await host(tenant, tenant.pool);
    const runs = [
      await seedFrozenRun(t.db(), tenant, def(tiered("background"))),
      await seedFrozenRun(t.db(), tenant, def(tiered("background"))),
      await seedFrozenRun(t.db(), tenant, def(tiered("interactive"))),
    ];
    const onSpot = await claim(TEST_CFG, spot);
    const rest = [await claim(TEST_CFG, onDemand), await claim(TEST_CFG, onDemand)];
    expect(onSpot && rest.every(Boolean)).toBe(true);
    // Fixed durations: 30 min on spot, 20 min background on demand, 50 min interactive (not eligible).
    const minutes = new Map<string, number>([[onSpot?.attemptId ?? "", 30]]);
    for (const r of rest) {
      if (!r) continue;
      minutes.set(r.attemptId, r.runId === runs[2] ? 50 : 20);
    }
    for (const [id, m] of minutes)
      await t.db().$executeRaw`
        UPDATE attempt SET claimed_at = now() - make_interval(mins => ${m + 5}), finished_at = now() - interval '5 minutes',
          status = 'completed', outcome = 'success' WHERE id = ${id}::uuid`;
    const [share] = await interruptibleShares(t.db(), { orgId: tenant.orgId, windowHours: 24, pool: tenant.pool });
    expect(share?.pool).toBe(tenant.pool);
    expect(share?.eligibleMinutes).toBeCloseTo(50, 3);
    expect(share?.interruptibleMinutes).toBeCloseTo(30, 3);
    expect(share?.share).toBeCloseTo(0.6, 3);
    expect(share).toMatchObject({ target: 0.55, meetsTarget: true, interruptiblePools: [spotName], reclaims: 0 });
    // Another org sees none of these minutes.
    const other = await seedTenant(t.db());
    expect(await interruptibleShares(t.db(), { orgId: other.orgId, windowHours: 24, pool: tenant.pool })).toEqual([]);
  });
});

describe("fleet stats", () => {
  it("persists what the agent reports and lists it for the host's org only", async () => {
    const tenant = await seedTenant(t.db());
    const h = await host(tenant, tenant.pool, "builder-1");
    await claim(TEST_CFG, h).then(() => undefined);
    await seedFrozenRun(t.db(), tenant, def(tiered("interactive", "compile")));
    const running = await claim(TEST_CFG, h);
    expect(
      await recordSessionStats(t.db(), {
        sessionId: h.sessionId,
        agentTokenId: h.agentTokenId,
        stats: { agentVersion: "1.2.3", warmPool: { size: 2, hits: 7, misses: 3 }, slots: { inUse: 1, total: 4 } },
      }),
    ).toEqual({ reclaimRequested: false });
    const [row] = await listFleet(t.db(), { orgId: tenant.orgId, leaseTtlMs: TEST_CFG.leaseTtlMs });
    expect(row).toMatchObject({
      id: h.runnerId,
      name: "builder-1",
      state: "online",
      agentVersion: "1.2.3",
      warmPool: { size: 2, hits: 7, misses: 3 },
      slots: { inUse: 1, total: 4 },
      runningJobs: [{ jobId: running?.jobId, runId: running?.runId, name: "compile" }],
      platformFailuresLastHour: 0,
    });
    expect(row?.statsAt).not.toBeNull();
    // Another org sees nothing; another credential cannot write this session's stats.
    const other = await seedTenant(t.db());
    expect(await listFleet(t.db(), { orgId: other.orgId, leaseTtlMs: TEST_CFG.leaseTtlMs })).toEqual([]);
    await expect(
      recordSessionStats(t.db(), {
        sessionId: h.sessionId,
        agentTokenId: other.agentTokenId,
        stats: { agentVersion: "6.6.6", warmPool: { size: 0, hits: 0, misses: 0 }, slots: { inUse: 0, total: 1 } },
      }),
    ).rejects.toMatchObject({ code: "SESSION.NOT_FOUND" });
  });

  it("carries an operator's reclaim notice to the agent, audited, and only for interruptible hosts", async () => {
    const tenant = await seedTenant(t.db());
    const spotName = await spotPool(tenant);
    const spot = await host(tenant, spotName, "spot-1");
    const plain = await host(tenant, tenant.pool, "plain-1");
    await expect(
      requestReclaim(t.db(), { pool: tenant.pool, host: plain.runnerId, orgId: null, actor: "ops" }),
    ).rejects.toMatchObject({
      code: "POOL.NOT_INTERRUPTIBLE",
    });
    const other = await seedTenant(t.db());
    await expect(
      requestReclaim(t.db(), { pool: spotName, host: "spot-1", orgId: other.orgId, actor: "x" }),
    ).rejects.toMatchObject({
      code: "FLEET.HOST_NOT_FOUND",
    });
    expect(await requestReclaim(t.db(), { pool: spotName, host: "spot-1", orgId: null, actor: "ops" })).toMatchObject({
      runnerId: spot.runnerId,
      sessions: 1,
    });
    const stats = { agentVersion: "1", warmPool: { size: 0, hits: 0, misses: 0 }, slots: { inUse: 0, total: 4 } };
    expect(
      await recordSessionStats(t.db(), { sessionId: spot.sessionId, agentTokenId: spot.agentTokenId, stats }),
    ).toEqual({
      reclaimRequested: true,
    });
    const audit = await t.db().$queryRaw<{ kind: string; actor: string; subject: string }[]>`
      SELECT kind, actor, subject FROM audit_event WHERE org_id = ${tenant.orgId}::uuid AND kind = 'runner.reclaim_requested'`;
    expect(audit).toEqual([{ kind: "runner.reclaim_requested", actor: "ops", subject: spot.runnerId }]);
  });
});
