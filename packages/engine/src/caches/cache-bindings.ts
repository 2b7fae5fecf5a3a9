import type { Tx } from "@kiln/db";

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
  c: { orgId: string; repoId: string; cacheKey: string; bound: BoundEntry; rejectedEntryId: string; rejectedSha256: string; attemptId: string },
): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO cache_conflict (org_id, repo_id, cache_key, bound_entry_id, bound_sha256, rejected_entry_id, rejected_sha256, attempt_id)
    VALUES (${c.orgId}::uuid, ${c.repoId}::uuid, ${c.cacheKey}, ${c.bound.id}::uuid, ${c.bound.sha256}, ${c.rejectedEntryId}::uuid, ${c.rejectedSha256},
            ${c.attemptId}::uuid)
    ON CONFLICT (rejected_entry_id) DO NOTHING`;
}
