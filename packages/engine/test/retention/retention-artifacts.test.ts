// Retention by provenance for artifacts (issue 21, docs/adr/0036): classes stamped at seal time,
// every class boundary on a controlled clock, the worker and its plan agreeing, and what must never
// be evicted (a pointer, a rollback target, a held artifact).
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { dayExpiresAt, DEFAULT_RETENTION_WINDOWS as W, retentionDay } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { downloadArtifact } from "../../src/artifacts/download-artifact.ts";
import { listJobArtifacts } from "../../src/artifacts/job-artifacts.ts";
import { addRetentionHold, removeRetentionHold } from "../../src/retention/retention-holds.ts";
import { setReleasePatterns } from "../../src/retention/retention-settings.ts";
import { planRetentionPass, runRetentionPass } from "../../src/retention/run-retention.ts";
import { useS3 } from "../artifacts/support.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { justBefore, promoteThrough, sealedArtifact, stamp } from "./support.ts";

const t = useTestDb();
const s3 = useS3();
const admin = (orgId: string) => ({ orgId, role: "admin" as const, actor: "token:admin" });

/** The run is running again (a platform retry of one of its jobs is pending). */
const reopen = (runId: string) =>
  t.db().$executeRaw`UPDATE workflow_run SET status = 'running', outcome = NULL WHERE id = ${runId}::uuid`;

async function objectThere(key: string): Promise<boolean> {
  try {
    await s3.store().s3.send(new HeadObjectCommand({ Bucket: s3.store().bucket, Key: key }));
    return true;
  } catch {
    return false;
  }
}

describe("classes at seal time", () => {
  it("classifies from the run's trigger and ref and stamps the class's expiry for the seal's day", async () => {
    const tenant = await seedTenant(t.db());
    await setReleasePatterns(t.db(), admin(tenant.orgId), { repoId: tenant.repoId, patterns: ["release/*"] });
    const cases = [
      ["refs/tags/v1.0.0", "push", "release"],
      ["refs/heads/release/2026.12", "push", "release"],
      ["refs/heads/main", "push", "default_branch"],
      ["refs/heads/feature/x", "push", "other"],
      ["refs/heads/main", "pull_request", "other"],
    ] as const;
    for (const [ref, trigger, cls] of cases) {
      const a = await sealedArtifact(t.db(), s3.store(), tenant, ref, trigger);
      const s = await stamp(t.db(), a.genId);
      expect([ref, trigger, s.cls]).toEqual([ref, trigger, cls]);
      expect(s.expiresAt).toEqual(dayExpiresAt(retentionDay(s.createdAt), W.artifact[cls]));
      const [listed] = await listJobArtifacts(t.db(), { orgId: tenant.orgId, jobId: a.jobId });
      expect(listed).toMatchObject({ retention_class: cls, expires_at: s.expiresAt.toISOString(), expired_at: null });
    }
  });
});

describe("the retention worker", () => {
  it("evicts each class exactly at its expiry, never a millisecond before", async () => {
    const tenant = await seedTenant(t.db());
    for (const [ref, days] of [
      ["refs/tags/v2", 400],
      ["refs/heads/main", 90],
      ["refs/heads/topic", 14],
    ] as const) {
      const a = await sealedArtifact(t.db(), s3.store(), tenant, ref);
      const { expiresAt, createdAt } = await stamp(t.db(), a.genId);
      // At least `days` full days after the upload, at most one more (the day bucket).
      expect(expiresAt.getTime() - createdAt.getTime()).toBeGreaterThan(days * 86_400_000);
      expect(expiresAt.getTime() - createdAt.getTime()).toBeLessThanOrEqual((days + 1) * 86_400_000);
      const opts = { windows: W, orgId: tenant.orgId };
      const before = await planRetentionPass(t.db(), { ...opts, at: justBefore(expiresAt) });
      expect(before.evict.find((e) => e.id === a.genId)).toBeUndefined();
      const at = await planRetentionPass(t.db(), { ...opts, at: expiresAt });
      expect(at.evict.find((e) => e.id === a.genId)).toMatchObject({ kind: "artifact", reason: "expired" });
      const pass = await runRetentionPass(t.db(), s3.store(), { ...opts, at: justBefore(expiresAt) });
      expect(pass.evicted.artifact).toBe(0);
    }
  });

  it("evicts what the plan lists and nothing else, audits it, deletes the bytes, answers 410; a second run is a no-op", async () => {
    const tenant = await seedTenant(t.db());
    const a = await sealedArtifact(t.db(), s3.store(), tenant, "refs/heads/topic");
    const { expiresAt } = await stamp(t.db(), a.genId);
    const opts = { windows: W, orgId: tenant.orgId, at: expiresAt };
    const plan = await planRetentionPass(t.db(), opts);
    expect(plan.evict.filter((e) => e.kind === "artifact")).toEqual([
      {
        kind: "artifact",
        id: a.genId,
        org_id: tenant.orgId,
        class: "other",
        expires_at: expiresAt.toISOString(),
        reason: "expired",
      },
    ]);
    // The plan changed nothing.
    expect(await objectThere(a.objectKey)).toBe(true);
    expect((await listJobArtifacts(t.db(), { orgId: tenant.orgId, jobId: a.jobId }))[0]?.expired_at).toBeNull();

    const first = await runRetentionPass(t.db(), s3.store(), opts);
    expect(first.evicted.artifact).toBe(1);
    expect(first.objectsDeleted).toBeGreaterThanOrEqual(1);
    expect(await objectThere(a.objectKey)).toBe(false);
    const listed = (await listJobArtifacts(t.db(), { orgId: tenant.orgId, jobId: a.jobId }))[0];
    expect(listed?.expired_at).toBe(expiresAt.toISOString());
    const binding = await t.db().$queryRaw<{ expired_at: Date | null }[]>`
      SELECT expired_at FROM artifact_binding WHERE generation_id = ${a.genId}::uuid`;
    expect(binding[0]?.expired_at).toEqual(expiresAt);
    await expect(
      downloadArtifact(t.db(), s3.store(), { artifactId: a.genId, reader: { orgId: tenant.orgId } }),
    ).rejects.toMatchObject({ code: "ARTIFACT.EXPIRED" });
    const audit = await t.db().$queryRaw<{ actor: string; data: Record<string, unknown> }[]>`
      SELECT actor, data FROM audit_event WHERE kind = 'retention.evicted' AND subject = ${`artifact:${a.genId}`}`;
    expect(audit).toEqual([
      {
        actor: "system:retention",
        data: {
          kind: "artifact",
          id: a.genId,
          org_id: tenant.orgId,
          class: "other",
          expires_at: expiresAt.toISOString(),
          reason: "expired",
          evicted_at: expiresAt.toISOString(),
        },
      },
    ]);

    const snapshot = () => t.db().$queryRaw<{ n: bigint }[]>`
      SELECT (SELECT count(*) FROM audit_event WHERE org_id = ${tenant.orgId}::uuid)
           + (SELECT count(*) FROM transition_event WHERE org_id = ${tenant.orgId}::uuid) AS n`;
    const rows = await snapshot();
    const second = await runRetentionPass(t.db(), s3.store(), opts);
    expect(second.evicted).toEqual({ artifact: 0, log: 0, run_metadata: 0 });
    expect(second.objectsDeleted).toBe(0);
    expect(await snapshot()).toEqual(rows);
  });

  it("never evicts the live pointer, a rollback target or a held artifact; lifting the hold lets it go", async () => {
    const tenant = await seedTenant(t.db());
    const old = await sealedArtifact(t.db(), s3.store(), tenant, "refs/heads/topic");
    const live = await sealedArtifact(t.db(), s3.store(), tenant, "refs/heads/topic");
    const held = await sealedArtifact(t.db(), s3.store(), tenant, "refs/heads/topic");
    await promoteThrough(t.db(), tenant, [old, live]);
    await addRetentionHold(t.db(), admin(tenant.orgId), { artifactId: held.genId, reason: "legal hold #12" });
    const at = new Date((await stamp(t.db(), held.genId)).expiresAt.getTime() + 400 * 86_400_000);
    const opts = { windows: W, orgId: tenant.orgId, at };
    const plan = await planRetentionPass(t.db(), opts);
    const keptFor = (id: string) => plan.kept.find((k) => k.id === id)?.reason;
    expect(keptFor(live.genId)).toBe("environment_pointer");
    expect(keptFor(old.genId)).toBe("pointer_history");
    expect(keptFor(held.genId)).toBe("hold");
    expect(plan.evict.filter((e) => e.kind === "artifact")).toEqual([]);
    const pass = await runRetentionPass(t.db(), s3.store(), opts);
    expect(pass.evicted.artifact).toBe(0);
    for (const a of [old, live, held]) expect(await objectThere(a.objectKey)).toBe(true);
    // Their runs' metadata stays too: the artifacts are live data of those runs.
    expect(plan.kept.filter((k) => k.kind === "run_metadata").map((k) => k.reason)).toEqual([
      "live_data",
      "live_data",
      "live_data",
    ]);

    await removeRetentionHold(t.db(), admin(tenant.orgId), { artifactId: held.genId });
    const again = await runRetentionPass(t.db(), s3.store(), opts);
    expect(again.evicted.artifact).toBe(1);
    expect(await objectThere(held.objectKey)).toBe(false);
    expect(await objectThere(live.objectKey)).toBe(true);
    expect(await objectThere(old.objectKey)).toBe(true);
  });

  it("keeps an artifact its unfinished run may still retry, or a run re-using its job still consumes", async () => {
    const tenant = await seedTenant(t.db());
    const a = await sealedArtifact(t.db(), s3.store(), tenant, "refs/heads/topic");
    const { expiresAt } = await stamp(t.db(), a.genId);
    await reopen(a.runId);
    const plan = await planRetentionPass(t.db(), { windows: W, orgId: tenant.orgId, at: expiresAt });
    expect(plan.kept.find((k) => k.id === a.genId)?.reason).toBe("retryable_run");
    await t.db()
      .$executeRaw`UPDATE workflow_run SET status = 'completed', outcome = 'success' WHERE id = ${a.runId}::uuid`;
    const b = await sealedArtifact(t.db(), s3.store(), tenant, "refs/heads/topic");
    await reopen(b.runId);
    await t.db()
      .$executeRaw`UPDATE job_run SET reused_from_job_id = ${a.jobId}::uuid, reused_from_run_id = ${a.runId}::uuid WHERE id = ${b.jobId}::uuid`;
    const again = await planRetentionPass(t.db(), { windows: W, orgId: tenant.orgId, at: expiresAt });
    expect(again.kept.find((k) => k.id === a.genId)?.reason).toBe("consuming_run");
  });
});
