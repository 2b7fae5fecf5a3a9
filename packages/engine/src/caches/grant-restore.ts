import { withTx, type Db, type Tx } from "@kiln/db";
import { allowsPrefixFallback } from "@kiln/domain";
import type { JobClaims } from "../attempts/index.ts";
import type { CacheStore } from "./cache-context.ts";
import { lockCacheScope } from "./cache-scope.ts";
import { presignCacheGet } from "./cache-store-ops.ts";

export type RestoreGrant =
  | { hit: false; key: string }
  | {
      hit: true;
      key: string;
      entryId: string;
      exact: boolean;
      sizeBytes: number;
      sha256: string;
      unpackedBytes: number;
      entryCount: number;
      url: string;
      urlExpiresAt: string;
    };

interface BoundRow {
  id: string;
  object_key: string;
  size_bytes: bigint;
  sha256: string;
  unpacked_bytes: bigint;
  entry_count: number;
}

/**
 * Read wide: any run of the repo reads the trusted namespace, its own ref's entries first, then the
 * default branch's, never another branch's (the ref is key material, and every lookup also names
 * it). Only bound entries count (an upload still in flight, an abandoned conflict or an evicted
 * entry is never handed out). A dependency cache may fall back to the newest bound entry with the
 * same prefix, after every exact match failed; other kinds match exactly.
 */
export async function grantCacheRestore(
  db: Db,
  store: CacheStore,
  claims: JobClaims,
  inputs: { path: string; sha256: string | null }[],
): Promise<RestoreGrant> {
  const found = await withTx(db, "cache-grant-restore", async (tx) => {
    const scope = await lockCacheScope(tx, claims, inputs);
    const where = (ref: string) => ({
      orgId: scope.attempt.orgId,
      repoId: scope.repoId,
      namespace: scope.namespace,
      ref,
    });
    let exact = true;
    let row: BoundRow | null = null;
    for (const r of scope.reads) {
      row = await findExact(tx, where(r.ref), r.key);
      if (row) break;
    }
    if (!row && allowsPrefixFallback(scope.cache.kind)) {
      exact = false;
      for (const r of scope.reads) {
        row = await findByPrefix(tx, where(r.ref), r.prefix);
        if (row) break;
      }
    }
    // Recency drives eviction; the write is a plain touch, not a state change.
    if (row) {
      await tx.$executeRaw`UPDATE cache_entry SET last_used_at = now() WHERE id = ${row.id}::uuid AND state = 'bound'`;
      // What the control plane handed this attempt: its provenance lists it (issue 17), never the
      // agent's own account of what it restored.
      await tx.$executeRaw`
        INSERT INTO cache_restore_grant (attempt_id, entry_id, cache_key, sha256)
        VALUES (${scope.attempt.id}::uuid, ${row.id}::uuid, ${scope.key}, ${row.sha256}) ON CONFLICT DO NOTHING`;
    }
    return { key: scope.key, row, exact };
  });
  if (!found.row) return { hit: false, key: found.key };
  const r = found.row;
  return {
    hit: true,
    key: found.key,
    entryId: r.id,
    exact: found.exact,
    sizeBytes: Number(r.size_bytes),
    sha256: r.sha256,
    unpackedBytes: Number(r.unpacked_bytes),
    entryCount: r.entry_count,
    url: await presignCacheGet(store, r.object_key),
    urlExpiresAt: new Date(Date.now() + store.settings.downloadUrlTtlSec * 1000).toISOString(),
  };
}

type Where = { orgId: string; repoId: string; namespace: string; ref: string };

async function findExact(tx: Tx, w: Where, key: string): Promise<BoundRow | null> {
  const rows = await tx.$queryRaw<BoundRow[]>`
    SELECT e.id, e.object_key, e.size_bytes, e.sha256, e.unpacked_bytes, e.entry_count
    FROM cache_binding b JOIN cache_entry e ON e.id = b.entry_id AND e.state = 'bound'
    WHERE b.cache_key = ${key} AND b.org_id = ${w.orgId}::uuid AND b.repo_id = ${w.repoId}::uuid AND b.namespace = ${w.namespace} AND b.ref = ${w.ref}`;
  return rows[0] ?? null;
}

async function findByPrefix(tx: Tx, w: Where, prefix: string): Promise<BoundRow | null> {
  const rows = await tx.$queryRaw<BoundRow[]>`
    SELECT e.id, e.object_key, e.size_bytes, e.sha256, e.unpacked_bytes, e.entry_count
    FROM cache_binding b JOIN cache_entry e ON e.id = b.entry_id AND e.state = 'bound'
    WHERE b.org_id = ${w.orgId}::uuid AND b.repo_id = ${w.repoId}::uuid AND b.namespace = ${w.namespace} AND b.ref = ${w.ref} AND b.prefix_key = ${prefix}
    ORDER BY b.bound_at DESC, b.cache_key LIMIT 1`;
  return rows[0] ?? null;
}
