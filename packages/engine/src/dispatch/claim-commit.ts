import { randomUUID } from "node:crypto";
import type { EngineConfig } from "../config/index.ts";
import { QUOTA_WAIT_REASON } from "../metering/index.ts";
import type { SqlClient } from "../shared/sql-pool.ts";
import {
  CAPPED_SQL,
  CLAIMABLE_SQL,
  type Claimed,
  type ClaimJobRow,
  type ClaimRequest,
  type ClaimRun,
  type SessionRow,
} from "./claim-types.ts";

// One statement for the rest of the claim. The org's hard cap is enforced here and nowhere else (seed 003 Q3):
// a capped org's claim takes one free slot row below the cap (ADR 0042: SKIP LOCKED, so racing
// claimers take different rows instead of queueing on one counter row), and none while a slot at or
// past a lowered cap is still held; the attempt, the job's guarded transition and its event exist
// only if a slot was taken. An org without a hard cap takes none. Over the cap, the job stays READY
// with the reason recorded for the queue view. The org's egress allow-list is read in the same
// statement. An org out of minutes this month (ADR 0045) takes nothing on a pool that is not its
// own: the job stays READY with QUOTA_WAIT_REASON; the check sums at most 16 tally rows, unlocked,
// and only for an org with a quota.
// Its text interpolates only the status guards fixed at module load: one prepared statement (ADR 0015).
const COMMIT_SQL = `WITH quota AS (
             SELECT 1 AS over FROM org o
             WHERE o.id = $1::uuid AND o.minute_quota IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM pool qp WHERE qp.name = $2 AND qp.owner_org_id IS NOT NULL)
               AND (SELECT COALESCE(sum(t.seconds), 0) FROM org_minute_tally t
                    WHERE t.org_id = $1::uuid AND t.month = date_trunc('month', now() AT TIME ZONE 'UTC')::date)
                   >= o.minute_quota::bigint * 60),
           cap AS (
             SELECT hard_cap AS n FROM entitlement WHERE org_id = $1::uuid AND pool = $2 AND hard_cap IS NOT NULL),
           pick AS (
             SELECT s.slot FROM org_pool_slot s
             WHERE s.org_id = $1::uuid AND s.pool = $2 AND s.attempt_id IS NULL AND s.slot < (SELECT n FROM cap)
               AND NOT EXISTS (SELECT 1 FROM quota)
               AND NOT EXISTS (SELECT 1 FROM org_pool_slot o WHERE o.org_id = $1::uuid AND o.pool = $2
                                 AND o.slot >= (SELECT n FROM cap) AND o.attempt_id IS NOT NULL)
             LIMIT 1 FOR UPDATE OF s SKIP LOCKED),
           held AS (
             UPDATE org_pool_slot s SET attempt_id = $16::uuid FROM pick
             WHERE s.org_id = $1::uuid AND s.pool = $2 AND s.slot = pick.slot AND s.attempt_id IS NULL
             RETURNING s.slot),
           slot AS (
             SELECT 1 AS ok WHERE NOT EXISTS (SELECT 1 FROM quota) AND (NOT EXISTS (SELECT 1 FROM cap) OR EXISTS (SELECT 1 FROM held))),
           ins AS (
             INSERT INTO attempt (id, job_id, run_id, org_id, epoch, session_id, claim_request_id, host, status, lease_expires_at, queued_ms, pool, on_interruptible)
             SELECT $16::uuid, $3::uuid, $4::uuid, $1::uuid, $5, $6::uuid, $7, $8, 'running', now() + make_interval(secs => $9::float8), $10, $2, $15 FROM slot
             RETURNING id, lease_expires_at),
           upd AS (
             UPDATE job_run SET status = 'running', current_epoch = $5, wait_reason = NULL
             WHERE id = $3::uuid AND status = ANY(${CLAIMABLE_SQL}) AND dispatch_generation = $11 AND EXISTS (SELECT 1 FROM slot)
             RETURNING id),
           ev AS (
             INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
             SELECT $1::uuid, $4::uuid, $3::uuid, ins.id, 'job', $14, 'running', 'claimed', $12::jsonb FROM ins
             RETURNING id),
           capped AS (
             UPDATE job_run SET wait_reason = CASE WHEN EXISTS (SELECT 1 FROM quota) THEN '${QUOTA_WAIT_REASON}' ELSE 'org_cap' END
             WHERE id = $3::uuid AND status = ANY(${CAPPED_SQL}) AND NOT EXISTS (SELECT 1 FROM slot)
             RETURNING id),
           -- A deploy run's environment lock names the attempt now holding it (issue 18, ADR 0033):
           -- one probe of a partial index that holds only the locks currently held.
           holder AS (
             UPDATE deployment_lock SET job_id = $3::uuid, attempt_id = ins.id, epoch = $5
             FROM ins WHERE deployment_lock.run_id = $4::uuid AND deployment_lock.released_at IS NULL
             RETURNING deployment_lock.id)
           SELECT (SELECT id FROM ins) AS attempt_id, (SELECT lease_expires_at FROM ins) AS lease_expires_at,
                  (SELECT count(*) FROM upd)::int AS updated, (SELECT count(*) FROM ev)::int AS events,
                  EXISTS (SELECT 1 FROM quota) AS over_quota,
                  CASE WHEN $13 THEN ARRAY(SELECT pattern FROM egress_rule WHERE org_id = $1::uuid ORDER BY pattern LIMIT 1000)
                       ELSE '{}'::text[] END AS allow_list`;

/**
 * The claim's last statement, on a run and job it holds locked and decided claimable: the org's
 * slot, the attempt with the next epoch, the job's guarded transition and its event.
 */
export async function commitClaim(
  c: SqlClient,
  cfg: EngineConfig,
  session: SessionRow,
  run: ClaimRun,
  job: ClaimJobRow,
  req: ClaimRequest,
): Promise<{ ok: true; claimed: Claimed } | { ok: false; reason: string }> {
  const epoch = job.current_epoch + 1;
  const data = JSON.stringify({
    epoch,
    session: session.id,
    host: session.hostname,
    generation: job.dispatch_generation,
  });
  const done = await c.query<{
    attempt_id: string | null;
    lease_expires_at: Date | null;
    updated: number;
    events: number;
    allow_list: string[];
    over_quota: boolean;
  }>({
    name: "claim-commit-4",
    text: COMMIT_SQL,
    values: commitValues(cfg, session, run, job, req, epoch, data),
  });
  const row = done.rows[0];
  if (!row?.attempt_id || !row.lease_expires_at)
    return { ok: false, reason: row?.over_quota ? QUOTA_WAIT_REASON : "org_cap" };
  if (row.updated !== 1 || row.events !== 1)
    throw new Error("guarded claim update lost a race it should have been locked against");
  // The run's start time is derived from its first attempt (see get-run): writing it here would
  // upgrade the shared run lock that concurrent claimers of one run hold, and deadlock them.
  return {
    ok: true,
    claimed: {
      attemptId: row.attempt_id,
      runId: run.id,
      jobId: job.id,
      orgId: run.org_id,
      epoch,
      leaseExpiresAt: row.lease_expires_at,
      jobIndex: job.job_index,
      name: job.name,
      jobDef: job.job_def,
      runEnv: job.run_env,
      trustClass: run.trust_class,
      cloneUrl: run.clone_url,
      commitSha: run.commit_sha,
      allowList: row.allow_list,
    },
  };
}

/** The statement's parameters, in the order its text numbers them. */
function commitValues(
  cfg: EngineConfig,
  session: SessionRow,
  run: ClaimRun,
  job: ClaimJobRow,
  req: ClaimRequest,
  epoch: number,
  data: string,
): unknown[] {
  const queuedMs = job.ready_at ? Math.max(0, job.now.getTime() - job.ready_at.getTime()) : null;
  return [
    run.org_id,
    // The job's own pool: an interruptible host's attempt holds its org's slot in the pool it serves.
    job.pool,
    job.id,
    run.id,
    epoch,
    session.id,
    req.claimRequestId,
    session.hostname,
    cfg.leaseTtlMs / 1000,
    queuedMs,
    job.dispatch_generation,
    data,
    run.trust_class === "trusted",
    job.status,
    session.interruptible === true,
    // Chosen here so that the slot row can name the attempt in the same statement that inserts it.
    randomUUID(),
  ];
}
