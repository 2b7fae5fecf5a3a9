import type { Db } from "@kiln/db";
import type { EngineConfig } from "../config/index.ts";
import { currentAttemptFence, refuseStaleAttempt } from "./attempts-store.ts";

export interface HeartbeatResult {
  leaseExpiresAt: string;
  /** The run was cancelled (or the work preempted): stop the step (SIGTERM, grace, destroy) and report. */
  cancelRequested: boolean;
}

/**
 * Renews the lease of the current epoch only, on database time. A stale or expired epoch is
 * refused (409), which tells the agent to destroy its sandbox at once.
 *
 * One guarded UPDATE on the attempt row and no run or job lock: heartbeats are the most frequent
 * write, and a wide run (hundreds of parallel jobs) serialises its completions on the run row, so
 * a heartbeat waiting behind them could miss its lease. Correctness comes from the row lock on the
 * attempt: a fencing transaction that ends the attempt holds it, and the heartbeat's WHERE clause
 * is re-evaluated after it commits, so a fenced epoch is never renewed. A host whose credential was
 * revoked is refused too (two primary-key probes in the same statement, no extra round trip).
 */
export async function heartbeat(
  db: Db,
  cfg: EngineConfig,
  input: {
    attemptId: string;
    jobId: string;
    epoch: number;
    phase?: { imageMs?: number; dispatchMs?: number; started?: boolean };
  },
): Promise<HeartbeatResult> {
  const claims = { attemptId: input.attemptId, jobId: input.jobId, epoch: input.epoch };
  const rows = await db.$queryRaw<{ lease_expires_at: Date; cancel_requested: boolean }[]>`
    UPDATE attempt a SET lease_expires_at = now() + make_interval(secs => ${cfg.leaseTtlMs / 1000}),
      image_ms = COALESCE(${input.phase?.imageMs ?? null}::int, a.image_ms),
      dispatch_ms = COALESCE(${input.phase?.dispatchMs ?? null}::int, a.dispatch_ms),
      started_at = CASE WHEN ${input.phase?.started ?? false} THEN COALESCE(a.started_at, now()) ELSE a.started_at END
    FROM job_run j, workflow_run r
    WHERE j.id = a.job_id AND r.id = a.run_id AND ${currentAttemptFence(claims)}
      AND NOT EXISTS (SELECT 1 FROM agent_session s JOIN agent_token t ON t.id = s.agent_token_id
                      WHERE s.id = a.session_id AND t.revoked_at IS NOT NULL)
    RETURNING a.lease_expires_at, (a.cancel_requested OR a.preempt_requested OR r.status = 'cancelling') AS cancel_requested`;
  const r = rows[0];
  if (r) return { leaseExpiresAt: r.lease_expires_at.toISOString(), cancelRequested: r.cancel_requested };
  return refuseStaleAttempt(db, claims, "lease could not be renewed");
}
