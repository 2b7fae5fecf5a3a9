// The re-sealer (docs/adr/0037 "Reseal"): an artifact's data key is its day's and dies at the day's
// due, taking every object sealed under it along. One that must outlive that — held, named by an
// environment pointer or its history, consumed by a pending promotion or an unfinished run (the
// retention worker's blockers, artifact-blockers.ts) — is sealed again under a key that dies later,
// into a new object, before its key is due. The old object is left to its key: it becomes
// unreadable at the old due like everything else sealed under it (the sampler then proves it).
import { randomUUID } from "node:crypto";
import { sqlPool, withTx, type Db } from "@kiln/db";
import { artifactObjectKey, DEFAULT_RETENTION_WINDOWS, DomainError, resealKeyAt } from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { newArtifactSalt } from "./artifact-seal.ts";
import { recordArtifactTransition } from "./artifact-journal.ts";
import { deleteObject } from "./store-ops.ts";
import { ARTIFACT_BLOCKER_COLUMNS, ARTIFACT_BLOCKERS } from "../shared/artifact-blockers.ts";
import { dataKeyForRead, dataKeyForWrite, runShredScope, type ShredKeyDeps } from "../shredding/index.ts";
import { resealObject } from "./reseal-copy.ts";

/** How far ahead of a key's due the re-sealer acts: two days leave a missed day of passes room. */
export const DEFAULT_RESEAL_LOOKAHEAD_MS = 2 * 86_400_000;

export interface ResealOptions {
  now: Date;
  lookaheadMs?: number;
  limit?: number;
}

export interface ResealReport {
  resealed: number;
  /** Another re-sealer held the generation, or had already moved it (or retention expired it). */
  skipped: number;
  failed: { generationId: string; error: string }[];
}

interface Candidate {
  id: string;
  org_id: string;
  run_id: string;
  job_id: string;
  attempt_id: string;
  epoch: number;
  name: string;
  object_key: string;
  size_bytes: bigint;
  sha256: string;
  shred_key_id: string;
  shred_chunk_size: number;
  shred_due_at: Date;
  reseal_count: number;
  part_size: bigint;
  part_count: number;
}

// Sealed, bound, live generations whose key dies within the look-ahead and that something still
// needs. Those already past their due are not here: their key refuses reads, nothing can move them.
const CANDIDATES = `
  SELECT * FROM (
    SELECT g.id::text, g.org_id::text, g.run_id::text, g.job_id::text, g.attempt_id::text, g.epoch, g.name,
      g.object_key, g.size_bytes, g.sha256, g.shred_key_id::text, g.shred_chunk_size, g.shred_due_at,
      g.reseal_count, g.part_size, g.part_count,${ARTIFACT_BLOCKER_COLUMNS}
    FROM artifact_generation g
    JOIN workflow_run r ON r.id = g.run_id
    WHERE g.shred_key_id IS NOT NULL AND g.expired_at IS NULL AND g.state = 'sealed'
      AND g.object_deleted_at IS NULL AND g.shred_due_at > $1 AND g.shred_due_at <= $2
      AND EXISTS (SELECT 1 FROM artifact_binding b WHERE b.generation_id = g.id)
  ) c
  WHERE ${ARTIFACT_BLOCKERS.map((b) => `c.${b}`).join(" OR ")}
  ORDER BY c.shred_due_at, c.id LIMIT $3`;

/** One pass; `store.shred` unset (shredding off) is a pass with nothing to do. */
export async function resealHeldArtifacts(db: Db, store: ArtifactStore, o: ResealOptions): Promise<ResealReport> {
  const report: ResealReport = { resealed: 0, skipped: 0, failed: [] };
  const shred = store.shred;
  if (!shred) return report;
  const lookahead = o.lookaheadMs ?? DEFAULT_RESEAL_LOOKAHEAD_MS;
  const horizon = new Date(o.now.getTime() + lookahead);
  const rows = await db.$queryRawUnsafe<Candidate[]>(CANDIDATES, o.now, horizon, o.limit ?? 100);
  for (const c of rows) {
    try {
      const r = await withGenerationLock(db, c.id, () => resealOne(db, store, shred, c, o.now, horizon));
      if (r === "resealed") report.resealed++;
      else report.skipped++;
    } catch (e) {
      // One artifact that cannot be moved (its bytes do not match, the store is down) must not stop
      // the others, whose keys die just as surely; the job logs each failure and the next pass retries.
      report.failed.push({ generationId: c.id, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
    }
  }
  return report;
}

/**
 * Re-sealers of one generation run one at a time (a session advisory lock on its own connection,
 * held across the store work, as the finaliser does); a second one skips it. The guarded update at
 * the end is what makes a lost race harmless even so.
 */
async function withGenerationLock(
  db: Db,
  id: string,
  work: () => Promise<"resealed" | "skipped">,
): Promise<"resealed" | "skipped"> {
  const client = await sqlPool(db).connect();
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on("error", onError);
  try {
    const got = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 37)) AS ok", [
      id,
    ]);
    if (!got.rows[0]?.ok) return "skipped";
    try {
      return await work();
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 37))", [id]).catch(() => {
        broken = true; // a dead session released its locks with it
      });
    }
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
}

async function resealOne(
  db: Db,
  store: ArtifactStore,
  shred: ShredKeyDeps,
  c: Candidate,
  now: Date,
  horizon: Date,
): Promise<"resealed" | "skipped"> {
  // Re-read under the lock: a re-sealer that just finished moved it already.
  const still = await db.$queryRaw<{ n: bigint }[]>`
    SELECT count(*) AS n FROM artifact_generation WHERE id = ${c.id}::uuid AND shred_key_id = ${c.shred_key_id}::uuid
      AND reseal_count = ${c.reseal_count} AND state = 'sealed' AND expired_at IS NULL`;
  if (Number(still[0]?.n ?? 0) !== 1) return "skipped";

  // The new key: same org, kind and class, of a day whose key dies after both the old due and the
  // look-ahead (so the next pass does not pick it again at once).
  const scope = await runShredScope(db, c.run_id, "artifact", store.settings.retention ?? DEFAULT_RETENTION_WINDOWS);
  const mustOutlive = new Date(Math.max(c.shred_due_at.getTime(), horizon.getTime()));
  const at = resealKeyAt(now, scope.windowDays, mustOutlive);
  const next = await dataKeyForWrite(shred, {
    orgId: c.org_id,
    kind: "artifact",
    cls: scope.cls,
    windowDays: scope.windowDays,
    at,
  });
  const old = await dataKeyForRead(shred, c.org_id, c.shred_key_id, now).catch((e: unknown) => {
    next.key.fill(0);
    throw e;
  });
  const salt = newArtifactSalt();
  const objectKey = `${artifactObjectKey({
    orgId: c.org_id,
    runId: c.run_id,
    jobId: c.job_id,
    epoch: c.epoch,
    generationId: c.id,
    name: c.name,
  })}.r${c.reseal_count + 1}-${randomUUID().slice(0, 8)}`;
  let stored: number;
  try {
    // A key made earlier for that day under a longer window can die sooner than needed.
    if (next.dueAt.getTime() <= c.shred_due_at.getTime())
      throw new DomainError(
        "SHRED.KEY_UNAVAILABLE",
        `no data key dies after ${c.shred_due_at.toISOString()} (got ${next.id}, due ${next.dueAt.toISOString()})`,
      );
    stored = await resealObject(
      store,
      { objectKey: c.object_key, key: old, sizeBytes: Number(c.size_bytes), sha256: c.sha256 },
      {
        objectKey,
        key: next,
        salt,
        chunkSize: c.shred_chunk_size,
        plan: { partSize: Number(c.part_size), partCount: c.part_count },
      },
    );
  } finally {
    old.key.fill(0);
    next.key.fill(0);
  }
  const won = await withTx(db, "artifact-reseal", async (tx) => {
    // Guarded: only the row as it was read moves; retention expiring it meanwhile wins.
    const n = await tx.$executeRaw`
      UPDATE artifact_generation SET object_key = ${objectKey}, shred_key_id = ${next.id}::uuid, shred_salt = ${salt},
        stored_size_bytes = ${stored}::bigint, shred_due_at = ${next.dueAt}, reseal_count = reseal_count + 1
      WHERE id = ${c.id}::uuid AND shred_key_id = ${c.shred_key_id}::uuid AND reseal_count = ${c.reseal_count}
        AND state = 'sealed' AND expired_at IS NULL`;
    if (n !== 1) return false;
    // The new object, for the deletion sampler once its own key dies (as finalize-upload records one).
    await tx.$executeRaw`
      INSERT INTO shred_object (object_key, org_id, key_id, kind, subject_id, due_at)
      VALUES (${objectKey}, ${c.org_id}::uuid, ${next.id}::uuid, 'artifact', ${c.id}::uuid, ${next.dueAt})
      ON CONFLICT (object_key) DO NOTHING`;
    await recordArtifactTransition(tx, {
      orgId: c.org_id,
      runId: c.run_id,
      jobId: c.job_id,
      attemptId: c.attempt_id,
      from: "sealed",
      to: "sealed",
      reason: "resealed",
      data: {
        generation_id: c.id,
        name: c.name,
        resealed: true,
        from_key: c.shred_key_id,
        to_key: next.id,
        from_due_at: c.shred_due_at.toISOString(),
        to_due_at: next.dueAt.toISOString(),
        reseal_count: c.reseal_count + 1,
      },
    });
    return true;
  });
  if (won) return "resealed";
  // Lost: nothing names the new object.
  await deleteObject(store, objectKey);
  return "skipped";
}
