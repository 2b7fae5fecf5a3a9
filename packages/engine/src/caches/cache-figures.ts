import type { DbOrTx } from "@kiln/db";

export interface JobCacheFigures {
  jobId: string;
  restoreResult: "hit" | "miss" | null;
  restoreTier: "local" | "remote" | null;
  restoreExact: boolean | null;
  restoreReason: string | null;
  bytesRestored: number | null;
  restoreMs: number | null;
  saveResult: string | null;
  saveReason: string | null;
  bytesSaved: number | null;
  saveMs: number | null;
}

/** Per job of a run: the figures of each job's latest attempt that reported any. Org-scoped in the query. */
export async function runCacheFigures(db: DbOrTx, q: { orgId: string; runId: string }): Promise<JobCacheFigures[]> {
  const rows = await db.$queryRaw<
    {
      job_id: string;
      restore_result: "hit" | "miss" | null;
      restore_tier: "local" | "remote" | null;
      restore_exact: boolean | null;
      restore_reason: string | null;
      bytes_restored: bigint | null;
      restore_ms: number | null;
      save_result: string | null;
      save_reason: string | null;
      bytes_saved: bigint | null;
      save_ms: number | null;
    }[]
  >`
    SELECT DISTINCT ON (s.job_id) s.job_id, s.restore_result, s.restore_tier, s.restore_exact, s.restore_reason, s.bytes_restored, s.restore_ms,
           s.save_result, s.save_reason, s.bytes_saved, s.save_ms
    FROM cache_job_stat s JOIN attempt a ON a.id = s.attempt_id
    WHERE s.org_id = ${q.orgId}::uuid AND s.run_id = ${q.runId}::uuid
    ORDER BY s.job_id, a.epoch DESC`;
  return rows.map((r) => ({
    jobId: r.job_id,
    restoreResult: r.restore_result,
    restoreTier: r.restore_tier,
    restoreExact: r.restore_exact,
    restoreReason: r.restore_reason,
    bytesRestored: r.bytes_restored === null ? null : Number(r.bytes_restored),
    restoreMs: r.restore_ms,
    saveResult: r.save_result,
    saveReason: r.save_reason,
    bytesSaved: r.bytes_saved === null ? null : Number(r.bytes_saved),
    saveMs: r.save_ms,
  }));
}

export interface OrgCacheFigures {
  trustClass: "trusted" | "untrusted";
  restores: number;
  hits: number;
  hitRate: number | null;
  /**
   * Estimate: per job name, the median step time of its attempts that missed minus that of the ones
   * that hit (restore time included), times the hits; never negative. A poor hit (transfer costs
   * more than the rebuild) lowers it, as seed 000 section 10 asks.
   */
  estimatedSavedMs: number;
}

export async function orgCacheFigures(db: DbOrTx, q: { orgId: string; sinceDays: number }): Promise<OrgCacheFigures[]> {
  const rows = await db.$queryRaw<
    { trust_class: "trusted" | "untrusted"; restores: bigint; hits: bigint; saved_ms: number | null }[]
  >`
    WITH s AS (
      SELECT s.trust_class, s.restore_result, j.name, r.repo_id, COALESCE(a.execution_ms, 0) + COALESCE(s.restore_ms, 0) AS cost_ms
      FROM cache_job_stat s JOIN attempt a ON a.id = s.attempt_id JOIN job_run j ON j.id = s.job_id JOIN workflow_run r ON r.id = s.run_id
      WHERE s.org_id = ${q.orgId}::uuid AND s.restore_result IS NOT NULL AND s.updated_at > now() - make_interval(days => ${q.sinceDays}::int)
    ), per_job AS (
      SELECT trust_class, repo_id, name,
             count(*) FILTER (WHERE restore_result = 'hit') AS hits,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY cost_ms) FILTER (WHERE restore_result = 'miss') AS miss_ms,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY cost_ms) FILTER (WHERE restore_result = 'hit') AS hit_ms
      FROM s GROUP BY trust_class, repo_id, name
    )
    SELECT t.trust_class, t.restores, t.hits, p.saved_ms
    FROM (SELECT trust_class, count(*) AS restores, count(*) FILTER (WHERE restore_result = 'hit') AS hits FROM s GROUP BY trust_class) t
    LEFT JOIN (SELECT trust_class, sum(GREATEST(0, miss_ms - hit_ms) * hits)::float8 AS saved_ms FROM per_job WHERE miss_ms IS NOT NULL AND hit_ms IS NOT NULL GROUP BY trust_class) p
      ON p.trust_class = t.trust_class
    ORDER BY t.trust_class`;
  return rows.map((r) => {
    const restores = Number(r.restores);
    const hits = Number(r.hits);
    return {
      trustClass: r.trust_class,
      restores,
      hits,
      hitRate: restores > 0 ? hits / restores : null,
      estimatedSavedMs: Math.round(r.saved_ms ?? 0),
    };
  });
}
