import { withTx, type Db } from "@kiln/db";
import type { ArtifactState } from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { recordArtifactTransition } from "./artifact-journal.ts";
import { abortMultipartUpload, deleteObject, listUploadsUnder } from "./store-ops.ts";

export interface ArtifactGcReport {
  /** Generations moved to 'abandoned' by this pass. */
  abandoned: number;
  /** Multipart uploads aborted at the store. */
  abortedUploads: number;
  /** Objects deleted (or confirmed absent). */
  deletedObjects: number;
  /** The store has no AbortMultipartUpload (s3rver): its lifecycle rule must reap those parts. */
  abortUnsupported: number;
}

interface Candidate {
  id: string;
  org_id: string;
  run_id: string;
  job_id: string;
  attempt_id: string;
  name: string;
  state: ArtifactState;
  object_key: string;
  upload_id: string | null;
  store_completed_at: Date | null;
}

/**
 * Metadata-driven garbage collection (seed 000 section 12: "cleanup is not a visibility protocol").
 * Collects generations that can never be bound — not bound, and their attempt finished or is no
 * longer the job's current epoch — once the grace period has passed since that attempt ended, plus
 * the objects of generations abandoned earlier (failed verification). Bound generations are never
 * touched: they stay pinned for consumers and retries (retention is a separate policy).
 *
 * Store work happens before the state change and is idempotent (abort/delete of something already
 * gone is success), so a crash anywhere is repaired by the next pass and a second pass is a no-op.
 */
export async function collectArtifactGarbage(
  db: Db,
  store: ArtifactStore,
  opts: { limit?: number } = {},
): Promise<ArtifactGcReport> {
  const report: ArtifactGcReport = { abandoned: 0, abortedUploads: 0, deletedObjects: 0, abortUnsupported: 0 };
  const graceSec = store.settings.gcGraceMs / 1000;
  const candidates = await db.$queryRaw<Candidate[]>`
    SELECT g.id, j.org_id, g.run_id, g.job_id, g.attempt_id, g.name, g.state, g.object_key, g.upload_id, g.store_completed_at
    FROM artifact_generation g
    JOIN attempt a ON a.id = g.attempt_id
    JOIN job_run j ON j.id = g.job_id
    WHERE g.object_deleted_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM artifact_binding b WHERE b.generation_id = g.id)
      AND (g.state = 'abandoned' OR a.status = 'completed' OR j.current_epoch <> a.epoch)
      AND COALESCE(g.abandoned_at, a.finished_at, g.created_at) <= now() - make_interval(secs => ${graceSec})
    ORDER BY g.created_at LIMIT ${opts.limit ?? 200}`;
  for (const c of candidates) {
    await releaseStorage(store, c, report);
    if (await markCollected(db, c)) report.abandoned++;
    report.deletedObjects++;
  }
  return report;
}

async function releaseStorage(store: ArtifactStore, c: Candidate, report: ArtifactGcReport): Promise<void> {
  if (!c.store_completed_at) {
    // A crash between creating the multipart upload and recording its id leaves an upload only a
    // listing of this generation's (unique) key can find.
    const ids = c.upload_id ? [c.upload_id] : await listUploadsUnder(store, c.object_key);
    if (ids === "unsupported") {
      report.abortUnsupported++;
    } else {
      for (const id of ids) {
        const r = await abortMultipartUpload(store, c.object_key, id);
        if (r === "aborted") report.abortedUploads++;
        if (r === "unsupported") report.abortUnsupported++;
      }
    }
  }
  // Also when the upload was never completed as far as we know: a completion whose answer was lost
  // may have stored the object anyway.
  await deleteObject(store, c.object_key);
}

async function markCollected(db: Db, c: Candidate): Promise<boolean> {
  return withTx(db, "artifact-gc", async (tx) => {
    const rows = await tx.$queryRaw<{ state: ArtifactState }[]>`
      SELECT state FROM artifact_generation WHERE id = ${c.id}::uuid AND object_deleted_at IS NULL FOR UPDATE`;
    const before = rows[0]?.state;
    if (!before) return false;
    // Re-checked under the row lock; the binding trigger refuses to unseal a bound generation anyway.
    const n = await tx.$executeRaw`
      UPDATE artifact_generation
      SET state = 'abandoned', abandoned_at = COALESCE(abandoned_at, now()), abandon_reason = COALESCE(abandon_reason, 'unbound'),
          object_deleted_at = now()
      WHERE id = ${c.id}::uuid AND NOT EXISTS (SELECT 1 FROM artifact_binding b WHERE b.generation_id = ${c.id}::uuid)`;
    if (n !== 1) return false;
    await tx.$executeRaw`DELETE FROM artifact_part WHERE generation_id = ${c.id}::uuid`;
    if (before === "abandoned") return false;
    await recordArtifactTransition(tx, {
      orgId: c.org_id,
      runId: c.run_id,
      jobId: c.job_id,
      attemptId: c.attempt_id,
      from: before,
      to: "abandoned",
      reason: "collected",
      data: { generation_id: c.id, name: c.name },
    });
    return true;
  });
}
