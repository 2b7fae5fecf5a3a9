// Run metadata is classified when the run completes (issue 21, docs/adr/0036): every path that
// completes a workflow_run writes its retention class and expiry in that same transaction, from the
// windows the caller was configured with, so no finished run waits for the retention worker.
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DEFAULT_RETENTION_WINDOWS, dayExpiresAt, retentionDay, type RetentionWindows } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { reconcile } from "../../src/attempts/reconcile.ts";
import { claimJob } from "../../src/dispatch/claim-job.ts";
import { cancelRun } from "../../src/runs/cancel-run.ts";
import { freezeRun } from "../../src/runs/freeze-run.ts";
import type { EngineConfig } from "../../src/config/engine-config.ts";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "../support.ts";

const t = useTestDb();
// Not the defaults (run metadata is 400 days for every class there): configured windows must be
// the ones that reach each path, and the classes must come out with different expiries.
const WINDOWS: RetentionWindows = {
  ...DEFAULT_RETENTION_WINDOWS,
  run_metadata: { release: 380, default_branch: 120, other: 30 },
};
const CFG: EngineConfig = { ...TEST_CFG, retryBudget: 0, retention: WINDOWS };

interface Stamped {
  status: string;
  outcome: string;
  retention_class: string | null;
  expires_at: Date | null;
  finished_at: Date;
  same_commit: boolean;
}

/**
 * The run's stamp, and whether the row as it stands was last written by the transaction that
 * recorded its completion (xmin of both rows): a later stamp, by the worker, would fail that.
 */
async function stamped(runId: string): Promise<Stamped> {
  const r = await t.db().$queryRaw<Stamped[]>`
    SELECT r.status, r.outcome, r.retention_class, r.expires_at, r.finished_at,
           r.xmin::text = (SELECT e.xmin::text FROM transition_event e
                           WHERE e.run_id = r.id AND e.entity = 'run' AND e.to_state = 'completed') AS same_commit
    FROM workflow_run r WHERE r.id = ${runId}::uuid`;
  if (!r[0]) throw new Error("no run");
  return r[0];
}

function expectStamp(s: Stamped, outcome: string, cls: "release" | "default_branch" | "other"): void {
  expect([s.status, s.outcome, s.retention_class, s.same_commit]).toEqual(["completed", outcome, cls, true]);
  expect(s.expires_at).toEqual(dayExpiresAt(retentionDay(s.finished_at), WINDOWS.run_metadata[cls]));
}

async function runOn(tenant: Tenant, ref: string): Promise<string> {
  const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB), "trusted", ref);
  await t.db().$executeRaw`UPDATE workflow_run SET trigger = 'push' WHERE id = ${runId}::uuid`;
  return runId;
}

async function claim(tenant: Tenant, runId: string) {
  const r = await claimJob(t.db(), CFG, { sessionId: await newSession(t.db(), tenant), claimRequestId: randomUUID() });
  if (r.kind !== "claimed" || r.ticket.runId !== runId) throw new Error(`claim failed: ${r.kind}`);
  return r.ticket;
}

function done(
  a: { attemptId: string; jobId: string; epoch: number },
  outcome: "success" | "user_failure" | "cancelled",
) {
  return { attemptId: a.attemptId, jobId: a.jobId, epoch: a.epoch, outcome, sandboxDestroyed: true };
}

describe("run metadata stamped at completion", () => {
  it("the agent's completion: a default-branch success and a release-tag failure, with their own expiries", async () => {
    const tenant = await seedTenant(t.db());
    const main = await runOn(tenant, "refs/heads/main");
    const a = await claim(tenant, main);
    await completeAttempt(t.db(), CFG, done(a, "success"));
    const tag = await runOn(tenant, "refs/tags/v1.2.0");
    const b = await claim(tenant, tag);
    await completeAttempt(t.db(), CFG, done(b, "user_failure"));
    const [m, r] = [await stamped(main), await stamped(tag)];
    expectStamp(m, "success", "default_branch");
    expectStamp(r, "user_failure", "release");
    expect(r.expires_at?.getTime()).toBeGreaterThan(m.expires_at?.getTime() ?? Infinity);
  });

  it("a lease that ran out (the reconciler's fence) and a cancelled run, pending, running or stopping", async () => {
    const tenant = await seedTenant(t.db());
    const silent = await runOn(tenant, "refs/heads/topic");
    const s = await claim(tenant, silent);
    await t.db()
      .$executeRaw`UPDATE attempt SET lease_expires_at = now() - interval '1 second' WHERE id = ${s.attemptId}::uuid`;
    await reconcile(t.db(), CFG);
    expectStamp(await stamped(silent), "platform_failure", "other");

    const pending = await t.db().$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, ref, commit_sha, workflow_path, inputs)
      VALUES (${tenant.orgId}::uuid, ${tenant.repoId}::uuid, 'pending', 'trusted', 'push', 'refs/tags/v2.0.0',
              ${"b".repeat(40)}, '.kiln/workflow.yaml', '{}'::jsonb) RETURNING id::text`;
    const stopping = await runOn(tenant, "refs/heads/topic");
    const c = await claim(tenant, stopping);
    const ready = await runOn(tenant, "refs/heads/main"); // its job stays ready: nothing claims it
    for (const runId of [pending[0]?.id ?? "", ready, stopping])
      await cancelRun(t.db(), { runId, orgId: tenant.orgId, actor: "tester", retention: WINDOWS });
    expectStamp(await stamped(pending[0]?.id ?? ""), "cancelled", "release");
    expectStamp(await stamped(ready), "cancelled", "default_branch");
    expect((await stamped(stopping)).retention_class).toBeNull(); // still cancelling: not completed
    await completeAttempt(t.db(), CFG, done(c, "cancelled"));
    expectStamp(await stamped(stopping), "cancelled", "other");
  });

  it("a run whose freeze fails", async () => {
    const tenant = await seedTenant(t.db());
    const rows = await t.db().$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, ref, commit_sha, workflow_path, inputs)
      VALUES (${tenant.orgId}::uuid, ${tenant.repoId}::uuid, 'pending', 'trusted', 'push', 'refs/heads/main',
              ${"c".repeat(40)}, '.kiln/workflow.yaml', '{}'::jsonb) RETURNING id::text`;
    const runId = rows[0]?.id ?? "";
    // Local repositories off: the repo's file:// URL is refused before any git runs.
    const out = await freezeRun(t.db(), {
      runId,
      gitCacheDir: mkdtempSync(path.join(tmpdir(), "kiln-stamp-")),
      source: { localReposRoot: null },
      finalTry: true,
      retention: WINDOWS,
    });
    expect(out).toBe("invalid");
    expectStamp(await stamped(runId), "blocked_by_policy", "default_branch");
  });
});
