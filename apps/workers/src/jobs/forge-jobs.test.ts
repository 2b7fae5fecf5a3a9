import { createLogger } from "@kiln/logger";
import { DEFAULT_FORGE_CONFIG, parseSecretsKey, setRepoForge, type ForgeConfig } from "@kiln/engine";
import { def, seedFrozenRun, seedTenant, useTestDb, type Tenant } from "@kiln/engine/testing";
import { startFakeForge, type FakeForge } from "@kiln/testkit";
import { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runForgeReconcile } from "./forge-reconcile.job.ts";
import { forgeStatusJob } from "./forge-status.job.ts";
import type { WorkerDeps } from "./job-definition.ts";

// Run-it-twice (conventions rule 9) for the forge jobs, against the fake forge and a real pg-boss.
const t = useTestDb();
let forge: FakeForge;
let boss: PgBoss;
let cfg: ForgeConfig;
const TOKEN = "ghp_workerjobtoken0001";

beforeAll(async () => {
  forge = await startFakeForge();
  cfg = {
    ...DEFAULT_FORGE_CONFIG,
    apiUrl: forge.url,
    publicUrl: "https://kiln.example.com",
    secretsKey: parseSecretsKey(Buffer.alloc(32, 3).toString("base64")),
  };
  boss = new PgBoss({ connectionString: t.url(), max: 2 });
  boss.on("error", () => undefined);
  await boss.start();
  await boss.createQueue(forgeStatusJob.name, { policy: "stately", retryLimit: 2 });
});
afterAll(async () => {
  await boss?.stop({ graceful: false });
  await forge?.stop();
});

function deps(): WorkerDeps {
  return { db: t.db(), boss, forge: cfg, log: createLogger({ service: "test" }) } as unknown as WorkerDeps;
}
const job = {
  id: "test",
  name: forgeStatusJob.name,
  data: {},
  expireInSeconds: 60,
  heartbeatSeconds: null,
  retryCount: 0,
  signal: new AbortController().signal,
};

async function connectedRun(): Promise<{ tenant: Tenant; runId: string }> {
  const tenant = await seedTenant(t.db());
  // The forge shows the repo to the token before Kiln stores it (issue 28).
  forge.addRepo(tenant.repoName, { token: TOKEN });
  await setRepoForge(t.db(), cfg, { repoId: tenant.repoId, token: TOKEN, actor: "cli:test" });
  const runId = await seedFrozenRun(t.db(), tenant, def("version: 1\njobs:\n  - name: a\n    steps: [x]\n"));
  await t.db().$executeRaw`INSERT INTO transition_event (org_id, run_id, entity, from_state, to_state, reason)
    VALUES (${tenant.orgId}::uuid, ${runId}::uuid, 'run', NULL, 'pending', 'accepted')`;
  return { tenant, runId };
}

const queued = (runId: string) =>
  t.db().$queryRaw<{ n: number; later: boolean }[]>`
    SELECT count(*)::int AS n, bool_and(start_after > now() + interval '20 seconds') AS later
    FROM pgboss.job WHERE name = 'forge-status' AND data->>'runId' = ${runId} AND state = 'created'`;

describe("forge-status job", () => {
  it("delivers once; the second run sends nothing", async () => {
    const { runId } = await connectedRun();
    await forgeStatusJob.handle(deps(), { runId }, job);
    const n = forge.requests.length;
    expect(n).toBeGreaterThan(0);
    await forgeStatusJob.handle(deps(), { runId }, job);
    expect(forge.requests.length).toBe(n);
  });

  it("a rate limit re-queues the delivery for when the forge said, once however often it runs", async () => {
    const { runId, tenant } = await connectedRun();
    forge.rateLimit({ flavour: "secondary", status: 403, retryAfterS: 45, times: 1 });
    await forgeStatusJob.handle(deps(), { runId }, job);
    await forgeStatusJob.handle(deps(), { runId }, job);
    expect(await queued(runId)).toEqual([{ n: 1, later: true }]);
    expect(forge.statuses(tenant.repoName, "a".repeat(40))).toHaveLength(0);
  });

  it("an outage throws so pg-boss retries", async () => {
    const { runId } = await connectedRun();
    forge.fail({ status: 503, times: 1 });
    await expect(forgeStatusJob.handle(deps(), { runId }, job)).rejects.toThrow(/503/);
  });
});

describe("forge-reconcile job", () => {
  it("re-queues undelivered statuses once (stately) and a second pass adds nothing", async () => {
    const { runId } = await connectedRun();
    forge.fail({ status: 503, times: 1 });
    await expect(forgeStatusJob.handle(deps(), { runId }, job)).rejects.toThrow();
    await t.db()
      .$executeRaw`UPDATE forge_status SET updated_at = now() - interval '1 minute' WHERE run_id = ${runId}::uuid`;
    const first = await runForgeReconcile(deps());
    expect(first.resent).toBeGreaterThanOrEqual(1);
    await runForgeReconcile(deps());
    expect((await queued(runId))[0]?.n).toBe(1);
  });

  it("runs with no hooks configured and reports nothing to do", async () => {
    const r = await runForgeReconcile(deps());
    expect(r.hooks.every((h) => h.redelivered === 0)).toBe(true);
  });
});
