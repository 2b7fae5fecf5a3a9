import type { DbOrTx } from "@kiln/db";
import { dispatch, UPSTREAM_FAILED_CAUSE } from "@kiln/domain";
import type { TenantScope } from "../tenants/resolve-tenant.ts";
import { listRuns, type RunRow } from "./list-runs.ts";

export interface ActiveJob {
  id: string;
  name: string;
  /** "ready" is queued: waiting for a host to claim it. */
  status: "ready" | "running";
  run_id: string;
  repo_name: string;
  ref: string | null;
  epoch: number;
  host: string | null;
  /** When it became ready (queued) or when the running attempt was claimed. */
  since: string | null;
}

export interface FailureRatio {
  /** Jobs whose final outcome is platform_failure. */
  platform: number;
  /** Jobs that finished in the window, excluding those that never ran because a needed job failed. */
  finished: number;
  /** platform / finished, or null when nothing finished. */
  ratio: number | null;
}

export interface OrgOverview {
  active_jobs: ActiveJob[];
  running_count: number;
  queued_count: number;
  recent_runs: RunRow[];
  infra_failure: { last_hour: FailureRatio; last_7_days: FailureRatio };
  /**
   * Attempts that ended in a platform failure in the last 7 days, including those a retry later made
   * green: the platform's cost either way. Background work preempted for its slot's owner is not a
   * failure (cause capacity.preempted, issue 9) and is not counted.
   */
  platform_failed_attempts_7d: number;
  queue_wait: { window: "1 hour"; samples: number; p50_ms: number | null; p95_ms: number | null };
}

const ACTIVE_LIMIT = 50;

/** The org home page in one round of parallel queries, each scoped by org_id in its WHERE clause. */
export async function getOrgOverview(db: DbOrTx, scope: TenantScope): Promise<OrgOverview> {
  const [active, counts, ratios, attempts, recent] = await Promise.all([
    db.$queryRaw<(Omit<ActiveJob, "since"> & { since: Date | null })[]>`
      SELECT j.id, j.name, j.status, j.run_id, repo.full_name AS repo_name, r.ref, j.current_epoch AS epoch,
             a.host, COALESCE(a.claimed_at, j.ready_at) AS since
      FROM job_run j
      JOIN workflow_run r ON r.id = j.run_id AND r.org_id = j.org_id
      JOIN repo ON repo.id = r.repo_id
      LEFT JOIN attempt a ON a.job_id = j.id AND a.status = 'running'
      WHERE j.org_id = ${scope.orgId}::uuid AND j.status IN ('ready', 'running')
      ORDER BY (j.status = 'running') DESC, COALESCE(a.claimed_at, j.ready_at) ASC NULLS LAST, j.id
      LIMIT ${ACTIVE_LIMIT}`,
    db.$queryRaw<{ running: number; queued: number }[]>`
      SELECT (count(*) FILTER (WHERE status = 'running'))::int AS running, (count(*) FILTER (WHERE status = 'ready'))::int AS queued
      FROM job_run WHERE org_id = ${scope.orgId}::uuid AND status IN ('ready', 'running')`,
    db.$queryRaw<{ p1: number; f1: number; p7: number; f7: number }[]>`
      SELECT (count(*) FILTER (WHERE finished_at >= now() - interval '1 hour' AND outcome = 'platform_failure'))::int AS p1,
             (count(*) FILTER (WHERE finished_at >= now() - interval '1 hour'))::int AS f1,
             (count(*) FILTER (WHERE outcome = 'platform_failure'))::int AS p7,
             count(*)::int AS f7
      FROM job_run
      WHERE org_id = ${scope.orgId}::uuid AND status = 'completed' AND finished_at >= now() - interval '7 days'
        AND cause IS DISTINCT FROM ${UPSTREAM_FAILED_CAUSE}`,
    db.$queryRaw<{ samples: number; p50: number | null; p95: number | null; lost: number }[]>`
      SELECT (count(queued_ms) FILTER (WHERE claimed_at >= now() - interval '1 hour'))::int AS samples,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY queued_ms) FILTER (WHERE claimed_at >= now() - interval '1 hour') AS p50,
             percentile_cont(0.95) WITHIN GROUP (ORDER BY queued_ms) FILTER (WHERE claimed_at >= now() - interval '1 hour') AS p95,
             (count(*) FILTER (WHERE outcome = 'platform_failure' AND cause IS DISTINCT FROM ${dispatch.PREEMPTED_CAUSE}))::int AS lost
      FROM attempt
      WHERE org_id = ${scope.orgId}::uuid AND claimed_at >= now() - interval '7 days'`,
    listRuns(db, scope, { filters: {}, limit: 10 }),
  ]);
  const c = counts[0] ?? { running: 0, queued: 0 };
  const r = ratios[0] ?? { p1: 0, f1: 0, p7: 0, f7: 0 };
  const q = attempts[0] ?? { samples: 0, p50: null, p95: null, lost: 0 };
  return {
    active_jobs: active.map((j) => ({ ...j, since: j.since ? j.since.toISOString() : null })),
    running_count: c.running,
    queued_count: c.queued,
    recent_runs: recent.runs,
    infra_failure: { last_hour: ratio(r.p1, r.f1), last_7_days: ratio(r.p7, r.f7) },
    platform_failed_attempts_7d: q.lost,
    queue_wait: { window: "1 hour", samples: q.samples, p50_ms: round(q.p50), p95_ms: round(q.p95) },
  };
}

function ratio(platform: number, finished: number): FailureRatio {
  return { platform, finished, ratio: finished === 0 ? null : platform / finished };
}

function round(v: number | null): number | null {
  return v === null ? null : Math.round(v);
}
