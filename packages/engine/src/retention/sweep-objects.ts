// Deleting the bytes of what committed as expired: artifact objects, log segments, journals and
// index objects. Idempotent: deleting a deleted object succeeds, and each row is marked only after
// its objects are gone, so a crash between the two is repaired by the next pass.
import { withTx, type Db } from "@kiln/db";
import { deleteObject, type ArtifactStore } from "../artifacts/index.ts";

export async function sweepExpiredObjects(db: Db, store: ArtifactStore, limit = 200): Promise<number> {
  let deleted = 0;
  const gens = await db.$queryRawUnsafe<{ id: string; object_key: string }[]>(
    `SELECT id::text, object_key FROM artifact_generation
     WHERE expired_at IS NOT NULL AND object_deleted_at IS NULL ORDER BY expired_at LIMIT $1`,
    limit,
  );
  for (const g of gens) {
    await deleteObject(store, g.object_key);
    deleted++;
    await withTx(db, "retention-artifact-deleted", async (tx) => {
      await tx.$executeRawUnsafe(
        "UPDATE artifact_generation SET object_deleted_at = now() WHERE id = $1::uuid AND object_deleted_at IS NULL",
        g.id,
      );
      await tx.$executeRawUnsafe("DELETE FROM artifact_part WHERE generation_id = $1::uuid", g.id);
    });
  }
  // An expired log's index object, segments and journal rows go; the archiver skips expired logs.
  const logs = await db.$queryRawUnsafe<{ attempt_id: string; index_key: string | null; keys: string[] }[]>(
    `SELECT l.attempt_id::text, l.index_key,
            COALESCE((SELECT array_agg(s.object_key) FROM log_segment s WHERE s.attempt_id = l.attempt_id), '{}') AS keys
     FROM log_attempt l
     WHERE l.expired_at IS NOT NULL AND l.objects_deleted_at IS NULL
     ORDER BY l.expired_at LIMIT $1`,
    limit,
  );
  for (const l of logs) {
    for (const key of l.keys) await deleteObject(store, key);
    if (l.index_key) await deleteObject(store, l.index_key);
    deleted += l.keys.length + (l.index_key ? 1 : 0);
    await withTx(db, "retention-log-deleted", async (tx) => {
      await tx.$executeRawUnsafe("DELETE FROM log_segment WHERE attempt_id = $1::uuid", l.attempt_id);
      await tx.$executeRawUnsafe("DELETE FROM log_chunk WHERE attempt_id = $1::uuid", l.attempt_id);
      await tx.$executeRawUnsafe(
        "UPDATE log_attempt SET journal_bytes = 0, objects_deleted_at = now() WHERE attempt_id = $1::uuid AND objects_deleted_at IS NULL",
        l.attempt_id,
      );
    });
  }
  return deleted;
}
