import { Prisma, type Db } from "@kiln/db";
import { notWaitingForMinutesSql } from "../metering/index.ts";

/** One scrape's reading of the fleet's state from PostgreSQL (all ages in seconds). */
export interface FleetSnapshot {
  pools: string[];
  jobOutcomes: Record<string, number>;
  attemptOutcomes: Record<string, number>;
  platformRetries: number;
  oldestEligible: Map<string, number>;
  readyJobs: Map<string, number>;
  reservations: Map<string, number>;
  occupancy: Map<string, number>;
  queueWaitP95: Map<string, number>;
  reconcilerLag: number;
  archiveLag: number;
  tlogUncovered: number;
  shredLeaks: number;
  unboundGenerationAge: number;
  cacheEntries: number;
  cacheBytes: number;
  cacheEvictions: number;
}

type PoolRow = { pool: string; v: number | null };
type ScalarRow = { v: number | null };

const byPool = (rows: PoolRow[]) => new Map(rows.map((r) => [r.pool, Number(r.v ?? 0)]));
const scalar = (rows: ScalarRow[]) => Number(rows[0]?.v ?? 0);

/**
 * Reads every fleet gauge in one round of read-only queries. Each is an index range or a small
 * table's scan, except the outcome counts (a count over job_run and attempt: see docs/adr/0043 for
 * the cost and the rollup that replaces it when those tables grow past a few million rows).
 */
export async function readFleetSnapshot(db: Db): Promise<FleetSnapshot> {
  const [pools, jobs, attempts, retries, eligible, ready, reserved, occupied, waits] = await Promise.all([
    db.$queryRaw<{ name: string }[]>`SELECT name FROM pool ORDER BY name`,
    db.$queryRaw<{ outcome: string; n: number }[]>`
      SELECT outcome, count(*)::float8 AS n FROM job_run WHERE outcome IS NOT NULL GROUP BY outcome`,
    db.$queryRaw<{ outcome: string; n: number }[]>`
      SELECT outcome, count(*)::float8 AS n FROM attempt WHERE outcome IS NOT NULL GROUP BY outcome`,
    db.$queryRaw<ScalarRow[]>`SELECT COALESCE(sum(platform_retries), 0)::float8 AS v FROM job_run`,
    // Eligible: READY, out of retry backoff, and not held back by its own org's hard cap or minute
    // quota (a tenant over its entitlement has no wait guarantee, seed 002; ADR 0045). Its age
    // counts from when it became so.
    db.$queryRaw<PoolRow[]>`
      SELECT pool, EXTRACT(EPOCH FROM now() - min(GREATEST(COALESCE(ready_at, created_at), COALESCE(next_attempt_at, ready_at, created_at))))::float8 AS v
      FROM job_run WHERE status = 'ready' AND (next_attempt_at IS NULL OR next_attempt_at <= now())
        AND wait_reason IS DISTINCT FROM 'org_cap'
        AND ${notWaitingForMinutesSql(Prisma.sql`job_run.pool`, Prisma.sql`job_run.org_id`)}
      GROUP BY pool`,
    db.$queryRaw<PoolRow[]>`SELECT pool, count(*)::float8 AS v FROM job_run WHERE status = 'ready' GROUP BY pool`,
    db.$queryRaw<PoolRow[]>`SELECT pool, sum(running)::float8 AS v FROM org_pool_usage GROUP BY pool`,
    db.$queryRaw<PoolRow[]>`SELECT pool, count(*)::float8 AS v FROM attempt WHERE status = 'running' GROUP BY pool`,
    db.$queryRaw<PoolRow[]>`
      SELECT a.pool, (percentile_cont(0.95) WITHIN GROUP (ORDER BY a.queued_ms) / 1000)::float8 AS v
      FROM attempt a JOIN job_run j ON j.id = a.job_id
      WHERE a.claimed_at >= now() - interval '5 minutes' AND a.queued_ms IS NOT NULL AND j.tier = 'interactive'
      GROUP BY a.pool`,
  ]);
  const lags = await readLags(db);
  const maps = {
    oldestEligible: byPool(eligible),
    readyJobs: byPool(ready),
    reservations: byPool(reserved),
    occupancy: byPool(occupied),
    queueWaitP95: byPool(waits),
  };
  const poolNames = new Set(pools.map((p) => p.name));
  for (const m of Object.values(maps)) for (const k of m.keys()) poolNames.add(k);
  return {
    pools: [...poolNames].sort(),
    jobOutcomes: Object.fromEntries(jobs.map((r) => [r.outcome, Number(r.n)])),
    attemptOutcomes: Object.fromEntries(attempts.map((r) => [r.outcome, Number(r.n)])),
    platformRetries: scalar(retries),
    ...maps,
    ...lags,
  };
}

async function readLags(db: Db) {
  const [reconciler, archive, tlog, leaks, unbound, cache] = await Promise.all([
    // An expired lease the reconciler has not fenced yet: its pass is late or failing.
    db.$queryRaw<ScalarRow[]>`
      SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(lease_expires_at)), 0)::float8 AS v
      FROM attempt WHERE status = 'running' AND lease_expires_at < now()`,
    db.$queryRaw<ScalarRow[]>`
      SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(c.created_at)), 0)::float8 AS v
      FROM log_chunk c JOIN log_attempt l ON l.attempt_id = c.attempt_id WHERE c.seq >= l.archived_seq`,
    // Age of the oldest entry no signed checkpoint covers; an idle log with a fresh-enough last
    // checkpoint is not late (checkpoints are signed only when the log grew).
    db.$queryRaw<ScalarRow[]>`
      SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS v FROM tlog_entry
      WHERE idx >= COALESCE((SELECT max(size) FROM tlog_checkpoint), 0)`,
    db.$queryRaw<ScalarRow[]>`
      SELECT count(*)::float8 AS v FROM (
        SELECT DISTINCT ON (object_key, path) outcome FROM shred_sample ORDER BY object_key, path, seq DESC) l
      WHERE l.outcome = 'leak'`,
    // The garbage collector's candidates (collect-garbage.ts): nothing binds them any more.
    db.$queryRaw<ScalarRow[]>`
      SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(COALESCE(g.abandoned_at, a.finished_at, g.created_at))), 0)::float8 AS v
      FROM artifact_generation g JOIN attempt a ON a.id = g.attempt_id JOIN job_run j ON j.id = g.job_id
      WHERE g.object_deleted_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM artifact_binding b WHERE b.generation_id = g.id)
        AND (g.state = 'abandoned' OR a.status = 'completed' OR j.current_epoch <> a.epoch)`,
    // Evicted rows are kept (state 'evicted'), so their count only grows: a counter.
    db.$queryRaw<{ n: number; bytes: number; evicted: number }[]>`
      SELECT (count(*) FILTER (WHERE state = 'bound'))::float8 AS n,
             COALESCE(sum(size_bytes) FILTER (WHERE state = 'bound'), 0)::float8 AS bytes,
             (count(*) FILTER (WHERE evicted_at IS NOT NULL))::float8 AS evicted
      FROM cache_entry`,
  ]);
  return {
    reconcilerLag: scalar(reconciler),
    archiveLag: scalar(archive),
    tlogUncovered: scalar(tlog),
    shredLeaks: scalar(leaks),
    unboundGenerationAge: scalar(unbound),
    cacheEntries: Number(cache[0]?.n ?? 0),
    cacheBytes: Number(cache[0]?.bytes ?? 0),
    cacheEvictions: Number(cache[0]?.evicted ?? 0),
  };
}
