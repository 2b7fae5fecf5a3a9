import { withTx, type Db } from "@kiln/db";
import { lockCurrentAttempt, type JobClaims } from "../attempts/index.ts";

export interface CacheStatsReport {
  restore?: {
    result: "hit" | "miss";
    tier: "local" | "remote" | null;
    exact: boolean | null;
    reason: string | null;
    bytes: number;
    ms: number;
  };
  save?: {
    result: "saved" | "already_bound" | "conflict" | "refused" | "skipped" | "failed";
    reason: string | null;
    bytes: number;
    ms: number;
  };
}

/**
 * The agent's per-attempt figures. Figures, not state: an upsert keyed by attempt, but only from
 * the current epoch, so a zombie cannot rewrite what the run page shows.
 */
export async function recordCacheStats(db: Db, claims: JobClaims, report: CacheStatsReport): Promise<void> {
  await withTx(db, "cache-record-stats", async (tx) => {
    const { attempt } = await lockCurrentAttempt(tx, claims);
    const trust = await tx.$queryRaw<
      { trust_class: string }[]
    >`SELECT trust_class FROM workflow_run WHERE id = ${attempt.runId}::uuid`;
    const r = report.restore;
    const s = report.save;
    await tx.$executeRaw`
      INSERT INTO cache_job_stat (attempt_id, org_id, run_id, job_id, trust_class, restore_result, restore_tier, restore_exact, restore_reason, bytes_restored, restore_ms,
                                  save_result, save_reason, bytes_saved, save_ms)
      VALUES (${attempt.id}::uuid, ${attempt.orgId}::uuid, ${attempt.runId}::uuid, ${attempt.jobId}::uuid, ${trust[0]?.trust_class ?? "untrusted"},
              ${r?.result ?? null}, ${r?.tier ?? null}, ${r?.exact ?? null}, ${r?.reason ?? null}, ${r ? BigInt(r.bytes) : null}::bigint, ${r?.ms ?? null}::int,
              ${s?.result ?? null}, ${s?.reason ?? null}, ${s ? BigInt(s.bytes) : null}::bigint, ${s?.ms ?? null}::int)
      ON CONFLICT (attempt_id) DO UPDATE SET
        restore_result = COALESCE(EXCLUDED.restore_result, cache_job_stat.restore_result),
        restore_tier = CASE WHEN EXCLUDED.restore_result IS NULL THEN cache_job_stat.restore_tier ELSE EXCLUDED.restore_tier END,
        restore_exact = CASE WHEN EXCLUDED.restore_result IS NULL THEN cache_job_stat.restore_exact ELSE EXCLUDED.restore_exact END,
        restore_reason = CASE WHEN EXCLUDED.restore_result IS NULL THEN cache_job_stat.restore_reason ELSE EXCLUDED.restore_reason END,
        bytes_restored = COALESCE(EXCLUDED.bytes_restored, cache_job_stat.bytes_restored),
        restore_ms = COALESCE(EXCLUDED.restore_ms, cache_job_stat.restore_ms),
        save_result = COALESCE(EXCLUDED.save_result, cache_job_stat.save_result),
        save_reason = CASE WHEN EXCLUDED.save_result IS NULL THEN cache_job_stat.save_reason ELSE EXCLUDED.save_reason END,
        bytes_saved = COALESCE(EXCLUDED.bytes_saved, cache_job_stat.bytes_saved),
        save_ms = COALESCE(EXCLUDED.save_ms, cache_job_stat.save_ms),
        updated_at = now()`;
  });
}
