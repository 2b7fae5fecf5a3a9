// Retention of logs and run metadata (issue 21, docs/adr/0036): a log's segments are stamped when
// archived, evicted whole at the class's window (segments, index and journal deleted, reads 410),
// and run metadata goes only after everything of the run has; one pass evicts exactly its plan.
import { DEFAULT_RETENTION_WINDOWS as W, dayExpiresAt, retentionDay } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { appendLogChunks } from "../../src/logs/append-log-chunks.ts";
import { archiveLogs } from "../../src/logs/archive-logs.ts";
import { authorizeLogRead } from "../../src/logs/authorize-log-read.ts";
import { assertLogRetained, loadLogHead } from "../../src/logs/log-head.ts";
import { s3LogStore } from "../../src/logs/log-object-store.ts";
import { sealLog } from "../../src/logs/seal-log.ts";
import { applyBucketLifecycle, BUCKET_LIFECYCLE_RULES } from "../../src/retention/bucket-lifecycle.ts";
import { planRetentionPass, runRetentionPass } from "../../src/retention/run-retention.ts";
import { useS3 } from "../artifacts/support.ts";
import { ChunkCutter, claimedAttempt, LOG_CFG, useJournalPool } from "../logs/support.ts";
import { seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import { DAY, justBefore, sealedArtifact } from "./support.ts";

const t = useTestDb();
const pool = useJournalPool(t.url);
const s3 = useS3();
const none = { stdout: 0, stderr: 0 };

/** A finished run whose one attempt wrote ~200 KiB of log, archived into several segments. */
async function archivedLog(tenant: Awaited<ReturnType<typeof seedTenant>>, ref: string) {
  const a = await claimedAttempt(t.db(), tenant);
  await t.db().$executeRaw`UPDATE workflow_run SET ref = ${ref}, trigger = 'push' WHERE id = ${a.runId}::uuid`;
  const cut = new ChunkCutter();
  for (let i = 0; i < 24; i++)
    await appendLogChunks(pool(), LOG_CFG, a.writer, [cut.cut("stdout", Buffer.alloc(8192, 97 + (i % 26)))]);
  await sealLog(t.db(), a.writer, { nextSeq: cut.nextSeq, bytes: cut.bytes, dropped: none });
  await completeAttempt(t.db(), TEST_CFG, {
    attemptId: a.attemptId,
    jobId: a.jobId,
    epoch: a.epoch,
    outcome: "success",
    sandboxDestroyed: true,
  });
  await archiveLogs(pool(), s3LogStore(s3.store().s3, s3.store().bucket), LOG_CFG);
  return a;
}

async function logRow(attemptId: string) {
  const r = await t.db().$queryRaw<
    { retention_class: string; expires_at: Date; created_at: Date; index_key: string; segs: bigint; chunks: bigint }[]
  >`SELECT l.retention_class, l.expires_at, l.created_at, l.index_key,
           (SELECT count(*) FROM log_segment s WHERE s.attempt_id = l.attempt_id) AS segs,
           (SELECT count(*) FROM log_chunk c WHERE c.attempt_id = l.attempt_id) AS chunks
    FROM log_attempt l WHERE l.attempt_id = ${attemptId}::uuid`;
  if (!r[0]) throw new Error("no log");
  return r[0];
}

async function segmentKeys(attemptId: string): Promise<string[]> {
  const r = await t.db().$queryRaw<{ object_key: string; retention_class: string; expires_at: Date }[]>`
    SELECT object_key, retention_class, expires_at FROM log_segment WHERE attempt_id = ${attemptId}::uuid`;
  return r.map((s) => s.object_key);
}

describe("log retention", () => {
  it("stamps every archived segment with the log's class and expiry, evicts the log whole at it, and reads then answer 410", async () => {
    const tenant = await seedTenant(t.db());
    const a = await archivedLog(tenant, "refs/heads/topic");
    const row = await logRow(a.attemptId);
    expect(row.retention_class).toBe("other");
    expect(row.expires_at).toEqual(dayExpiresAt(retentionDay(row.created_at), W.log.other));
    expect(Number(row.segs)).toBeGreaterThanOrEqual(2);
    const segs = await t.db().$queryRaw<{ retention_class: string; expires_at: Date }[]>`
      SELECT retention_class, expires_at FROM log_segment WHERE attempt_id = ${a.attemptId}::uuid`;
    expect(
      segs.every((s) => s.retention_class === "other" && s.expires_at.getTime() === row.expires_at.getTime()),
    ).toBe(true);
    const keys = [...(await segmentKeys(a.attemptId)), row.index_key];
    const logs = s3LogStore(s3.store().s3, s3.store().bucket);

    const opts = { windows: W, orgId: tenant.orgId };
    expect((await planRetentionPass(t.db(), { ...opts, at: justBefore(row.expires_at) })).evict).toEqual([]);
    const plan = await planRetentionPass(t.db(), { ...opts, at: row.expires_at });
    expect(plan.evict).toEqual([
      expect.objectContaining({ kind: "log", id: a.attemptId, class: "other", reason: "expired" }),
    ]);
    const pass = await runRetentionPass(t.db(), s3.store(), { ...opts, at: row.expires_at });
    expect(pass.evicted).toEqual({ artifact: 0, log: 1, run_metadata: 0 });
    for (const k of keys) await expect(logs.get(k)).rejects.toThrow();
    expect(await logRow(a.attemptId)).toMatchObject({ segs: 0n, chunks: 0n });
    const head = await loadLogHead(pool(), a.jobId, a.epoch);
    expect(() => assertLogRetained(head!)).toThrow(expect.objectContaining({ code: "LOG.EXPIRED" }));
    expect((await authorizeLogRead(t.db(), { orgId: tenant.orgId, jobId: a.jobId })).expiredEpochs).toEqual([a.epoch]);
    // The archiver leaves an evicted log alone: no fresh index for it.
    await archiveLogs(pool(), logs, LOG_CFG);
    await expect(logs.get(row.index_key)).rejects.toThrow();
    // Run it twice: nothing more to do.
    expect(await runRetentionPass(t.db(), s3.store(), { ...opts, at: row.expires_at })).toMatchObject({
      evicted: { artifact: 0, log: 0, run_metadata: 0 },
      objectsDeleted: 0,
    });
  });

  it("keeps a default-branch log 90 days and a release log 400", async () => {
    const tenant = await seedTenant(t.db());
    const main = await logRow((await archivedLog(tenant, "refs/heads/main")).attemptId);
    const tag = await logRow((await archivedLog(tenant, "refs/tags/v9")).attemptId);
    expect(main.retention_class).toBe("default_branch");
    expect(main.expires_at).toEqual(dayExpiresAt(retentionDay(main.created_at), 90));
    expect(tag.retention_class).toBe("release");
    expect(tag.expires_at).toEqual(dayExpiresAt(retentionDay(tag.created_at), 400));
  });
});

describe("run metadata and one pass", () => {
  it("evicts artifacts, logs and then the runs they kept alive in one pass, exactly as planned", async () => {
    const tenant = await seedTenant(t.db());
    const logged = await archivedLog(tenant, "refs/heads/topic");
    const built = await sealedArtifact(t.db(), s3.store(), tenant, "refs/heads/topic");
    const runs = await t.db().$queryRaw<{ id: string; expires_at: Date | null }[]>`
      SELECT id::text, expires_at FROM workflow_run WHERE org_id = ${tenant.orgId}::uuid`;
    // Runs are stamped as they complete (retention-run-stamp.test.ts); one completed before that
    // change has no stamp, and the pass stamps it (stampFinishedRuns, the safety net).
    expect(runs.every((r) => r.expires_at !== null)).toBe(true);
    await t.db().$executeRaw`
      UPDATE workflow_run SET retention_class = NULL, expires_at = NULL WHERE id = ${built.runId}::uuid`;
    const at = new Date(Date.now() + 402 * DAY);
    const opts = { windows: W, orgId: tenant.orgId, at };
    const plan = await planRetentionPass(t.db(), opts);
    expect(plan.evict.map((e) => [e.kind, e.id]).sort()).toEqual(
      [
        ["artifact", built.genId],
        ["log", logged.attemptId],
        ["run_metadata", logged.runId],
        ["run_metadata", built.runId],
      ].sort(),
    );
    expect(plan.kept).toEqual([]);
    const pass = await runRetentionPass(t.db(), s3.store(), opts);
    expect(pass.evicted).toEqual({ artifact: 1, log: 1, run_metadata: 2 });
    const audited = await t.db().$queryRaw<{ subject: string }[]>`
      SELECT subject FROM audit_event WHERE org_id = ${tenant.orgId}::uuid AND kind = 'retention.evicted'`;
    expect(audited.map((r) => r.subject).sort()).toEqual(plan.evict.map((e) => `${e.kind}:${e.id}`).sort());
    const scrubbed = await t.db().$queryRaw<{ definition: unknown; inputs: unknown; expired: boolean }[]>`
      SELECT definition, inputs, expired_at IS NOT NULL AS expired FROM workflow_run WHERE id = ${built.runId}::uuid`;
    expect(scrubbed).toEqual([{ definition: null, inputs: {}, expired: true }]);
    expect((await planRetentionPass(t.db(), opts)).evict).toEqual([]);
  });
});

describe("bucket lifecycle rules", () => {
  it("declares the 7-day multipart abort and 1-day noncurrent expiry, and reports honestly that s3rver keeps neither", async () => {
    expect(BUCKET_LIFECYCLE_RULES).toEqual([
      expect.objectContaining({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 }, Status: "Enabled" }),
      expect.objectContaining({ NoncurrentVersionExpiration: { NoncurrentDays: 1 }, Status: "Enabled" }),
    ]);
    // s3rver answers PutBucketLifecycleConfiguration with NotImplemented. It has no versioning at
    // all (one object per key; ?versioning is served as a plain listing, so no Status comes back):
    // there are no noncurrent versions to expire, which is what "never_enabled" says.
    expect(await applyBucketLifecycle(s3.store().s3, s3.store().bucket)).toEqual({
      lifecycle: "unsupported",
      versioning: "never_enabled",
    });
  });
});
