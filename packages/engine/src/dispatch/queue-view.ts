import { withTx, type Db } from "@kiln/db";
import { dispatch } from "@kiln/domain";
import type { EngineConfig } from "../config/index.ts";
import { placementReasonsForRun } from "./placement-view.ts";
import { loadPoolState } from "./pool-snapshot.ts";
import { jobsWaitingForMinutes, QUOTA_WAIT_REASON } from "../metering/index.ts";

export interface QueueInfo {
  /** 1-based order in which the pool is expected to start it; null while it cannot be placed. */
  position: number | null;
  estimated_start_at: string | null;
  reason:
    | "ready"
    | "org_cap"
    | "no_capacity"
    | "waiting_for_predecessor"
    | "backoff"
    | "no_eligible_host"
    | typeof QUOTA_WAIT_REASON;
  /**
   * Set with `no_eligible_host`: why no connected host may take the job (issue 15), in words and as a
   * code; and with `quota.minutes_exhausted` (ADR 0045).
   */
  waiting?: { code: string; message: string };
}

// When an org has no recent history, assume a minute per job rather than nothing.
const DEFAULT_DURATION_MS = 60_000;

/**
 * Queue position, estimated start and wait reason for a run's waiting jobs, computed by the same
 * scheduler that orders claims, over the same pool state (docs/scheduling.md).
 */
export async function queueInfoForRun(db: Db, cfg: EngineConfig, runId: string): Promise<Map<string, QueueInfo>> {
  const jobs = await db.$queryRaw<
    { id: string; status: string; pool: string; next_attempt_at: Date | null; wait_reason: string | null; now: Date }[]
  >`
    SELECT id, status, pool, next_attempt_at, wait_reason, now() AS now FROM job_run
    WHERE run_id = ${runId}::uuid AND status IN ('pending', 'ready')`;
  const out = new Map<string, QueueInfo>();
  if (jobs.length === 0) return out;
  for (const j of jobs) {
    if (j.status === "pending")
      out.set(j.id, { position: null, estimated_start_at: null, reason: "waiting_for_predecessor" });
  }
  const ready = jobs.filter((j) => j.status === "ready");
  const placement = ready.length > 0 ? await placementReasonsForRun(db, runId, null) : new Map();
  const outOfMinutes = ready.length > 0 ? await jobsWaitingForMinutes(db, runId) : new Set<string>();
  const pools = [...new Set(ready.map((j) => j.pool))];
  for (const pool of pools) {
    // Read-only, but one snapshot: a repeatable-read transaction sees a consistent pool.
    const plan = await withTx(
      db,
      "queue-view",
      async (tx) => {
        const { state, caps } = await loadPoolState(tx, pool);
        const durations = await tx.$queryRaw<{ org_id: string; ms: number }[]>`
        SELECT org_id, percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM (finished_at - claimed_at)) * 1000)::float8 AS ms
        FROM attempt WHERE pool = ${pool} AND status = 'completed' AND finished_at > now() - interval '1 hour'
        GROUP BY org_id`;
        const byOrg = new Map(durations.map((d) => [d.org_id, d.ms]));
        return dispatch.planQueue(state, {
          policy: cfg.dispatchPolicy,
          orgCaps: caps,
          expectedDurationMs: (org) => byOrg.get(org) ?? DEFAULT_DURATION_MS,
        });
      },
      { isolation: "RepeatableRead" },
    );
    for (const j of jobs.filter((x) => x.status === "ready" && x.pool === pool)) {
      const est = plan.get(j.id);
      const backoff = j.next_attempt_at !== null && j.next_attempt_at.getTime() > j.now.getTime();
      const blocked = placement.get(j.id);
      if (outOfMinutes.has(j.id)) {
        out.set(j.id, {
          position: null,
          estimated_start_at: null,
          reason: QUOTA_WAIT_REASON,
          waiting: {
            code: QUOTA_WAIT_REASON,
            message: "the org has used this month's minutes; the job starts when its quota is raised or the month ends",
          },
        });
        continue;
      }
      if (blocked) {
        out.set(j.id, { position: null, estimated_start_at: null, reason: "no_eligible_host", waiting: blocked });
        continue;
      }
      out.set(j.id, {
        position: est ? est.position : null,
        estimated_start_at: est && Number.isFinite(est.etaMs) ? new Date(est.etaMs).toISOString() : null,
        reason: backoff ? "backoff" : (est?.reason ?? "no_capacity"),
      });
    }
  }
  return out;
}
