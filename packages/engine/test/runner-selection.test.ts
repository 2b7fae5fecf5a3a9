import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { claimJob } from "../src/dispatch/claim-job.ts";
import { setPoolPolicy } from "../src/dispatch/pool-policy.ts";
import { queueInfoForRun } from "../src/dispatch/queue-view.ts";
import { registerSession } from "../src/dispatch/register-session.ts";
import type { EngineConfig } from "../src/config/engine-config.ts";
import { createAgentToken } from "../src/tenants/admin.ts";
import { def, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "./support.ts";

// Runner selection (issue 20, ADR 0031): runs_on labels and sizes in the claim, on both dispatch
// policies, and the waiting reason a job no connected host can serve shows.

const t = useTestDb();

async function host(
  tenant: Tenant,
  runner: { runner_labels?: string[]; sizes?: ("small" | "medium" | "large")[] } = {},
  pool = tenant.pool,
): Promise<string> {
  const cred = pool === tenant.pool ? { id: tenant.agentTokenId } : await createAgentToken(t.db(), { pool });
  const s = await registerSession(t.db(), TEST_CFG, {
    agentTokenId: cred.id,
    pool,
    body: {
      hostname: `h-${randomUUID().slice(0, 6)}`,
      capacity: 4,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
      ...runner,
    },
  });
  return s.sessionId;
}

async function claim(cfg: EngineConfig, sessionId: string) {
  const r = await claimJob(t.db(), cfg, { sessionId, claimRequestId: randomUUID() });
  return r.kind === "claimed" ? r.ticket : null;
}

const job = (runsOn: string) => `version: 1\njobs:\n  - name: build\n    runs_on: ${runsOn}\n    steps: [echo hi]\n`;

async function onlyJob(runId: string): Promise<string> {
  const rows = await t.db().$queryRaw<{ id: string }[]>`SELECT id FROM job_run WHERE run_id = ${runId}::uuid`;
  return rows[0]?.id ?? "";
}

describe.each(["fifo", "fair"] as const)("runner selection in the claim (%s)", (policy) => {
  const cfg: EngineConfig = { ...TEST_CFG, dispatchPolicy: policy };

  it("keeps a labelled job from a host without the label, which still takes the work behind it", async () => {
    const tenant = await seedTenant(t.db());
    const plain = await host(tenant);
    const gpuRun = await seedFrozenRun(t.db(), tenant, def(job("{labels: [gpu]}")));
    const plainRun = await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    // The older labelled job is at the head of the queue: the plain host must get past it.
    expect((await claim(cfg, plain))?.runId).toBe(plainRun);
    expect(await claim(cfg, plain)).toBeNull();
    expect((await queueInfoForRun(t.db(), cfg, gpuRun)).get(await onlyJob(gpuRun))).toMatchObject({
      reason: "no_eligible_host",
      position: null,
      waiting: { code: "host_lacks_labels", message: `no host in pool ${tenant.pool} has labels [gpu]` },
    });
    // Such an agent connects: it takes the job.
    const gpu = await host(tenant, { runner_labels: ["gpu", "cuda12"] });
    const ticket = await claim(cfg, gpu);
    expect(ticket?.runId).toBe(gpuRun);
    expect(ticket?.job.size).toBe("small");
  });

  it("gives a large job only to a host serving large, with the size on the ticket", async () => {
    const tenant = await seedTenant(t.db());
    const small = await host(tenant);
    const run = await seedFrozenRun(t.db(), tenant, def(job("{size: large}")));
    expect(await claim(cfg, small)).toBeNull();
    expect((await queueInfoForRun(t.db(), cfg, run)).get(await onlyJob(run))?.waiting).toEqual({
      code: "host_lacks_size",
      message: `no host in pool ${tenant.pool} serves size large`,
    });
    const large = await host(tenant, { sizes: ["large"] });
    const ticket = await claim(cfg, large);
    expect(ticket?.job.size).toBe("large");
    // A host serving only large takes no small (unsized) job.
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    expect(await claim(cfg, large)).toBeNull();
    expect(await claim(cfg, small)).not.toBeNull();
  });
});

describe("runs_on.pool, from the hostile side", () => {
  it("never places a job on another org's pool by naming it, whatever labels it asks for", async () => {
    const victim = await seedTenant(t.db());
    const attacker = await seedTenant(t.db());
    const owned = `own-${randomUUID().slice(0, 8)}`;
    await setPoolPolicy(t.db(), { name: owned, minIsolation: "process", ownerOrg: victim.slug, actor: "test" });
    const victimHost = await host(victim, { runner_labels: ["gpu"] }, owned);
    const run = await seedFrozenRun(t.db(), attacker, def(job(`{pool: ${owned}, labels: [gpu]}`)));
    const rows = await t.db().$queryRaw<{ pool: string }[]>`SELECT pool FROM job_run WHERE run_id = ${run}::uuid`;
    expect(rows).toEqual([{ pool: owned }]);
    expect(await claim(TEST_CFG, victimHost)).toBeNull();
    expect((await queueInfoForRun(t.db(), TEST_CFG, run)).get(await onlyJob(run))?.waiting?.code).toBe(
      "pool_not_for_org",
    );
  });
});
