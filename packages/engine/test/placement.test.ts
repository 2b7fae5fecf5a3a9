import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { claimJob } from "../src/dispatch/claim-job.ts";
import { listPools, setPoolPolicy } from "../src/dispatch/pool-policy.ts";
import { queueInfoForRun } from "../src/dispatch/queue-view.ts";
import { registerSession } from "../src/dispatch/register-session.ts";
import { getRunPage } from "../src/views/runs/get-run-page.ts";
import { addMember, createAgentToken } from "../src/tenants/index.ts";
import { resolveTenant } from "../src/views/tenants/resolve-tenant.ts";
import { def, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "./support.ts";

// Placement (issue 15, docs/adr/0022), attacked from the hostile side: untrusted work and other
// orgs' jobs offered to hosts that must not run them.

const t = useTestDb();

async function host(pool: string, isolation: "process" | "microvm", orgSlug?: string): Promise<string> {
  const cred = await createAgentToken(t.db(), { pool, ...(orgSlug ? { orgSlug } : {}) });
  const s = await registerSession(t.db(), TEST_CFG, {
    agentTokenId: cred.id,
    pool,
    body: {
      hostname: `${isolation}-${cred.id.slice(0, 6)}`,
      capacity: 4,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation },
    },
  });
  return s.sessionId;
}

async function claim(sessionId: string) {
  const r = await claimJob(t.db(), TEST_CFG, { sessionId, claimRequestId: randomUUID() });
  return r.kind === "claimed" ? r.ticket : null;
}

async function jobIdOf(runId: string): Promise<string> {
  const rows = await t.db().$queryRaw<{ id: string }[]>`SELECT id FROM job_run WHERE run_id = ${runId}::uuid`;
  return rows[0]?.id ?? "";
}

function pool(tenant: Tenant, suffix: string): string {
  return `${tenant.pool}-${suffix}`;
}

describe("placement in the claim", () => {
  it("never gives an untrusted run to a process host, and says why it waits; a microVM host takes it", async () => {
    const tenant = await seedTenant(t.db()); // its pool: a development pool, process hosts admitted
    const proc = await host(tenant.pool, "process");
    const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB), "untrusted");
    expect(await claim(proc)).toBeNull();
    const queue = await queueInfoForRun(t.db(), TEST_CFG, runId);
    expect(queue.get(await jobIdOf(runId))).toMatchObject({
      reason: "no_eligible_host",
      waiting: {
        code: "untrusted_needs_microvm",
        message: "waiting for a VM-isolated host: untrusted runs need microVM isolation",
      },
    });
    const login = `${tenant.slug}-dev`;
    const { userId } = await addMember(t.db(), { orgSlug: tenant.slug, login, role: "member" });
    const scope = await resolveTenant(t.db(), { userId, login, orgSlug: tenant.slug, roles: ["member"] });
    const page = await getRunPage(t.db(), scope, { runId });
    expect(Object.values(page.waiting).map((w) => w.code)).toEqual(["untrusted_needs_microvm"]);

    const vm = await host(tenant.pool, "microvm");
    expect((await claim(vm))?.runId).toBe(runId);
  });

  it("lets a process host pass over an untrusted job at the head of the queue to a trusted one behind it", async () => {
    const tenant = await seedTenant(t.db());
    const proc = await host(tenant.pool, "process");
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB), "untrusted");
    const trusted = await seedFrozenRun(t.db(), tenant, def(ONE_JOB), "trusted");
    expect((await claim(proc))?.runId).toBe(trusted);
    expect(await claim(proc)).toBeNull();
  });

  it("runs untrusted work on process hosts only in an org's own pool that explicitly admits it", async () => {
    const tenant = await seedTenant(t.db());
    const own = pool(tenant, "own");
    await setPoolPolicy(t.db(), {
      name: own,
      minIsolation: "process",
      ownerOrg: tenant.slug,
      untrustedOnProcess: true,
      actor: "test",
    });
    await t.db().$executeRaw`UPDATE job_run SET pool = ${own} WHERE pool = ${tenant.pool} AND status = 'ready'`;
    const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB), "untrusted");
    await t.db().$executeRaw`UPDATE job_run SET pool = ${own} WHERE run_id = ${runId}::uuid`;
    expect((await claim(await host(own, "process")))?.runId).toBe(runId);
  });

  it("keeps a shared pool's process host to the one org its credential is bound to", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    const shared = pool(a, "shared");
    await setPoolPolicy(t.db(), { name: shared, minIsolation: "process", actor: "test" });
    const runA = await seedFrozenRun(t.db(), a, def(ONE_JOB));
    const runB = await seedFrozenRun(t.db(), b, def(ONE_JOB));
    await t.db().$executeRaw`UPDATE job_run SET pool = ${shared} WHERE run_id = ANY(${[runA, runB]}::uuid[])`;
    // Unbound: serves nobody (one kernel, several orgs). The waiting reason says so.
    const unbound = await host(shared, "process");
    expect(await claim(unbound)).toBeNull();
    const q = await queueInfoForRun(t.db(), TEST_CFG, runA);
    expect(q.get(await jobIdOf(runA))?.waiting?.code).toBe("process_host_serves_one_org");
    // Bound to A: A's job only, whatever the shared queue offers.
    const boundA = await host(shared, "process", a.slug);
    expect((await claim(boundA))?.runId).toBe(runA);
    expect(await claim(boundA)).toBeNull();
    // A microVM host of the shared pool serves B.
    expect((await claim(await host(shared, "microvm")))?.runId).toBe(runB);
  });

  it("keeps an org's own pool to that org even for microVM hosts", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    const own = pool(a, "a-only");
    await setPoolPolicy(t.db(), { name: own, minIsolation: "microvm", ownerOrg: a.slug, actor: "test" });
    const runB = await seedFrozenRun(t.db(), b, def(ONE_JOB));
    await t.db().$executeRaw`UPDATE job_run SET pool = ${own} WHERE run_id = ${runB}::uuid`;
    expect(await claim(await host(own, "microvm"))).toBeNull();
  });

  it("re-checks the pool row on every claim: tightening a pool stops the next claim", async () => {
    const tenant = await seedTenant(t.db());
    const proc = await host(tenant.pool, "process");
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    await setPoolPolicy(t.db(), { name: tenant.pool, minIsolation: "microvm", actor: "test" });
    expect(await claim(proc)).toBeNull();
  });
});

describe("pool policies", () => {
  it("refuses a process host at registration when its pool requires microVMs, naming the fix", async () => {
    const tenant = await seedTenant(t.db());
    const strict = pool(tenant, "strict");
    await expect(host(strict, "process")).rejects.toMatchObject({
      code: "POOL.ISOLATION_TOO_WEAK",
      message: expect.stringContaining("KILN_SANDBOX_DRIVER=microvm"),
    });
    await expect(host(strict, "microvm")).resolves.toBeTruthy();
  });

  it("refuses untrusted-on-process for a shared pool, in the use case and in the database", async () => {
    const tenant = await seedTenant(t.db());
    await expect(
      setPoolPolicy(t.db(), { name: pool(tenant, "x"), minIsolation: "process", untrustedOnProcess: true, actor: "t" }),
    ).rejects.toMatchObject({ code: "POOL.POLICY_REFUSED" });
    await expect(
      t.db().$executeRaw`INSERT INTO pool (name, min_isolation, untrusted_on_process, updated_by)
                         VALUES (${pool(tenant, "y")}, 'process', true, 'raw')`,
    ).rejects.toThrow(/pool_untrusted_on_process_not_shared/);
  });

  it("audits every change with the policy before and after", async () => {
    const tenant = await seedTenant(t.db());
    const name = pool(tenant, "audited");
    await setPoolPolicy(t.db(), { name, minIsolation: "microvm", actor: "alice" });
    await setPoolPolicy(t.db(), { name, minIsolation: "process", ownerOrg: tenant.slug, actor: "bob" });
    const rows = await t.db().$queryRaw<{ actor: string; before: unknown; after: { min_isolation: string } }[]>`
      SELECT actor, before, after FROM pool_change WHERE pool = ${name} ORDER BY id`;
    expect(rows.map((r) => [r.actor, r.before === null, r.after.min_isolation])).toEqual([
      ["alice", true, "microvm"],
      ["bob", false, "process"],
    ]);
  });

  it("lists another org's own pool to nobody but that org", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    const own = pool(a, "mine");
    await setPoolPolicy(t.db(), { name: own, minIsolation: "process", ownerOrg: a.slug, actor: "test" });
    expect((await listPools(t.db(), a.orgId)).map((p) => p.name)).toContain(own);
    expect((await listPools(t.db(), b.orgId)).map((p) => p.name)).not.toContain(own);
  });
});
