import { withTx, type Db } from "@kiln/db";
import { planCacheEviction } from "@kiln/domain";
import type { CacheStore } from "./cache-context.ts";
import { recordCacheTransition } from "./cache-journal.ts";
import { deleteCacheObject } from "./cache-store-ops.ts";

export interface CacheEvictionReport {
  evictedIdle: number;
  evictedOverQuota: number;
  abandonedUploads: number;
  objectsDeleted: number;
}

interface EntryRow {
  id: string;
  org_id: string;
  run_id: string;
  job_id: string;
  attempt_id: string;
  cache_key: string;
  size_bytes: bigint;
  last_used_at: Date;
  quota: bigint | null;
}

/**
 * One eviction pass (workers `evict-caches`): idle entries (7 days unused), then LRU beyond each
 * org's quota; uploads never finished are abandoned; then the objects of everything evicted or
 * abandoned are deleted. State first (a guarded update: an entry used since it was planned stays),
 * store work after and idempotent, so a crash is repaired by the next pass and a second pass
 * changes nothing. Only cache_entry rows and caches/ keys are ever touched: never an artifact.
 */
export async function evictCaches(db: Db, store: CacheStore): Promise<CacheEvictionReport> {
  const report: CacheEvictionReport = { evictedIdle: 0, evictedOverQuota: 0, abandonedUploads: 0, objectsDeleted: 0 };
  const rows = await db.$queryRaw<(EntryRow & { now: Date })[]>`
    SELECT e.id, e.org_id, e.run_id, e.job_id, e.attempt_id, e.cache_key, e.size_bytes, e.last_used_at, o.cache_quota_bytes AS quota, now() AS now
    FROM cache_entry e JOIN org o ON o.id = e.org_id WHERE e.state = 'bound'`;
  const nowMs = rows[0]?.now.getTime() ?? 0;
  const quotas = new Map(
    rows.map((r) => [r.org_id, r.quota === null ? store.settings.defaultQuotaBytes : Number(r.quota)]),
  );
  const plan = planCacheEviction(
    rows.map((r) => ({
      id: r.id,
      orgId: r.org_id,
      sizeBytes: Number(r.size_bytes),
      lastUsedAt: r.last_used_at.getTime(),
    })),
    { nowMs, idleMs: store.settings.idleMs, quotaBytes: (org) => quotas.get(org) ?? store.settings.defaultQuotaBytes },
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const [ids, reason] of [
    [plan.idle, "idle"],
    [plan.overQuota, "over_quota"],
  ] as const) {
    for (const id of ids) {
      const e = byId.get(id);
      if (e && (await evictOne(db, e, reason))) {
        if (reason === "idle") report.evictedIdle++;
        else report.evictedOverQuota++;
      }
    }
  }
  report.abandonedUploads = await abandonStaleUploads(db, store.settings.abandonUploadsAfterMs);
  const dead = await db.$queryRaw<{ id: string; object_key: string }[]>`
    SELECT id, object_key FROM cache_entry WHERE state IN ('evicted','abandoned') AND object_deleted_at IS NULL ORDER BY id LIMIT 1000`;
  for (const d of dead) {
    await deleteCacheObject(store, d.object_key);
    await db.$executeRaw`UPDATE cache_entry SET object_deleted_at = now() WHERE id = ${d.id}::uuid AND object_deleted_at IS NULL`;
    report.objectsDeleted++;
  }
  return report;
}

async function evictOne(db: Db, e: EntryRow, reason: "idle" | "over_quota"): Promise<boolean> {
  return withTx(db, "cache-evict", async (tx) => {
    // Guarded: a restore that touched the entry since the plan was made keeps it.
    const n = await tx.$executeRaw`
      UPDATE cache_entry SET state = 'evicted', evicted_at = now()
      WHERE id = ${e.id}::uuid AND state = 'bound' AND last_used_at = ${e.last_used_at}`;
    if (n !== 1) return false;
    await tx.$executeRaw`DELETE FROM cache_binding WHERE entry_id = ${e.id}::uuid`;
    await recordCacheTransition(tx, {
      orgId: e.org_id,
      runId: e.run_id,
      jobId: e.job_id,
      attemptId: e.attempt_id,
      from: "bound",
      to: "evicted",
      reason,
      data: {
        entry_id: e.id,
        cache_key: e.cache_key,
        size_bytes: Number(e.size_bytes),
        last_used_at: e.last_used_at.toISOString(),
      },
    });
    return true;
  });
}

async function abandonStaleUploads(db: Db, afterMs: number): Promise<number> {
  const stale = await db.$queryRaw<
    { id: string; org_id: string; run_id: string; job_id: string; attempt_id: string }[]
  >`
    SELECT id, org_id, run_id, job_id, attempt_id FROM cache_entry
    WHERE state = 'uploading' AND created_at < now() - make_interval(secs => ${afterMs / 1000}::double precision)`;
  let n = 0;
  for (const s of stale) {
    n += await withTx(db, "cache-abandon-stale", async (tx) => {
      const changed = await tx.$executeRaw`
        UPDATE cache_entry SET state = 'abandoned', abandon_reason = 'upload_expired' WHERE id = ${s.id}::uuid AND state = 'uploading'`;
      if (changed === 1) {
        await recordCacheTransition(tx, {
          orgId: s.org_id,
          runId: s.run_id,
          jobId: s.job_id,
          attemptId: s.attempt_id,
          from: "uploading",
          to: "abandoned",
          reason: "upload_expired",
          data: { entry_id: s.id },
        });
      }
      return changed;
    });
  }
  return n;
}
