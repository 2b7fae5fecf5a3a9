import type { Db } from "@kiln/db";
import { dispatch } from "@kiln/domain";

// The share of eligible background job-minutes that ran on interruptible capacity, per on-demand
// pool (issue 22, seed 002's >= 55% target, docs/adr/0035). Eligible: every background-tier attempt
// in the pool's queue, wherever it ran (reclaimed work re-run on demand counts against the share: it
// is exactly the cost the target weighs). Minutes are attempt wall time, claim to finish (running
// attempts up to now), in the window.

export interface PoolShare extends dispatch.ShareReport {
  pool: string;
  /** The interruptible pools that serve this pool's queue. */
  interruptiblePools: string[];
  /** Background attempts reclaimed in the window. */
  reclaims: number;
}

export async function interruptibleShares(
  db: Db,
  input: {
    /** Null: every pool (operators). An org: only its own attempts, in every pool (org admins). */
    orgId: string | null;
    windowHours: number;
    pool?: string | null;
  },
): Promise<PoolShare[]> {
  const hours = Math.min(Math.max(input.windowHours, 1), 24 * 90);
  const rows = await db.$queryRaw<
    { pool: string; eligible: number; interruptible: number; reclaims: number; serving: string[] | null }[]
  >`
    WITH w AS (
      SELECT a.pool, a.on_interruptible, a.cause,
             EXTRACT(EPOCH FROM (COALESCE(a.finished_at, now()) - GREATEST(a.claimed_at, now() - make_interval(hours => ${hours}::int)))) / 60.0 AS minutes
      FROM attempt a JOIN job_run j ON j.id = a.job_id
      WHERE j.tier = 'background' AND COALESCE(a.finished_at, now()) > now() - make_interval(hours => ${hours}::int)
        AND (${input.orgId}::uuid IS NULL OR a.org_id = ${input.orgId}::uuid)
        AND (${input.pool ?? null}::text IS NULL OR a.pool = ${input.pool ?? null}::text)),
    pools AS (
      SELECT pool FROM w UNION SELECT serves FROM pool WHERE interruptible
        AND (${input.pool ?? null}::text IS NULL OR serves = ${input.pool ?? null}::text) AND ${input.orgId}::uuid IS NULL)
    SELECT p.pool,
           COALESCE((SELECT sum(GREATEST(minutes, 0)) FROM w WHERE w.pool = p.pool), 0)::float8 AS eligible,
           COALESCE((SELECT sum(GREATEST(minutes, 0)) FROM w WHERE w.pool = p.pool AND w.on_interruptible), 0)::float8 AS interruptible,
           (SELECT count(*) FROM w WHERE w.pool = p.pool AND w.cause = ${dispatch.RECLAIMED_CAUSE})::int AS reclaims,
           ARRAY(SELECT name FROM pool x WHERE x.serves = p.pool AND x.interruptible ORDER BY name) AS serving
    FROM pools p ORDER BY p.pool`;
  return rows.map((r) => ({
    pool: r.pool,
    interruptiblePools: r.serving ?? [],
    reclaims: r.reclaims,
    ...dispatch.interruptibleShare({ eligibleMinutes: r.eligible, interruptibleMinutes: r.interruptible }),
  }));
}
