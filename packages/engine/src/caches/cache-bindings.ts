import { withTx, type Db, type Tx } from "@kiln/db";
import type { CacheStore } from "./cache-context.ts";
import { recordCacheTransition } from "./cache-journal.ts";
import { cacheObjectExists } from "./cache-store-ops.ts";

export interface BoundEntry {
  id: string;
  sha256: string;
}

/** The entry currently bound to a key, locked so a concurrent binder waits for this decision. */
export async function lockBinding(tx: Tx, cacheKey: string): Promise<BoundEntry | null> {
  const rows = await tx.$queryRaw<BoundEntry[]>`
    SELECT e.id, e.sha256 FROM cache_binding b JOIN cache_entry e ON e.id = b.entry_id
    WHERE b.cache_key = ${cacheKey} FOR UPDATE OF b`;
  return rows[0] ?? null;
}

/** A second writer with other bytes for the same key: kept for admins, never an overwrite. */
export async function recordConflict(
  tx: Tx,
  c: {
    orgId: string;
    repoId: string;
    cacheKey: string;
    bound: BoundEntry;
    rejectedEntryId: string;
    rejectedSha256: string;
    attemptId: string;
  },
): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO cache_conflict (org_id, repo_id, cache_key, bound_entry_id, bound_sha256, rejected_entry_id, rejected_sha256, attempt_id)
    VALUES (${c.orgId}::uuid, ${c.repoId}::uuid, ${c.cacheKey}, ${c.bound.id}::uuid, ${c.bound.sha256}, ${c.rejectedEntryId}::uuid, ${c.rejectedSha256},
            ${c.attemptId}::uuid)
    ON CONFLICT (rejected_entry_id) DO NOTHING`;
}

/**
 * A key bound to an entry whose blob the store no longer has (lost, or deleted behind the control
 * plane's back) would miss on every restore and refuse every later save as a conflict until its
 * entry went idle for a week. When a trusted writer comes with other bytes, the bound blob is
 * looked up once, outside any transaction: only a definite "not found" evicts the dead entry
 * (reason blob_missing), so the first writer among entries that exist wins. A store error leaves
 * the binding as it is.
 */
export async function releaseLostBinding(db: Db, store: CacheStore, cacheKey: string, sha256: string): Promise<void> {
  const rows = await db.$queryRaw<
    {
      id: string;
      sha256: string;
      object_key: string;
      org_id: string;
      run_id: string;
      job_id: string;
      attempt_id: string;
    }[]
  >`
    SELECT e.id, e.sha256, e.object_key, e.org_id, e.run_id, e.job_id, e.attempt_id
    FROM cache_binding b JOIN cache_entry e ON e.id = b.entry_id WHERE b.cache_key = ${cacheKey}`;
  const bound = rows[0];
  if (!bound || bound.sha256 === sha256) return;
  if (await cacheObjectExists(store, bound.object_key)) return;
  await withTx(db, "cache-release-lost", async (tx) => {
    const n =
      await tx.$executeRaw`UPDATE cache_entry SET state = 'evicted', evicted_at = now() WHERE id = ${bound.id}::uuid AND state = 'bound'`;
    if (n !== 1) return;
    await tx.$executeRaw`DELETE FROM cache_binding WHERE entry_id = ${bound.id}::uuid`;
    await recordCacheTransition(tx, {
      orgId: bound.org_id,
      runId: bound.run_id,
      jobId: bound.job_id,
      attemptId: bound.attempt_id,
      from: "bound",
      to: "evicted",
      reason: "blob_missing",
      data: { entry_id: bound.id, cache_key: cacheKey },
    });
  });
}
