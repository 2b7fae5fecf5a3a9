import { withTx, type Db } from "@kiln/db";
import { decideHeartbeat, DomainError } from "@kiln/domain";
import type { EngineConfig } from "../shared/config.ts";
import { lockRun } from "../runs/advance-run.ts";
import { lockAttempt, runIdOfAttempt } from "./load-attempt.ts";

export interface HeartbeatResult {
  leaseExpiresAt: string;
  /** The run was cancelled: stop the step (SIGTERM, grace, destroy) and report cancelled. */
  cancelRequested: boolean;
}

/**
 * Renews the lease of the current epoch only, on database time. A stale or expired epoch is
 * refused (409), which tells the agent to destroy its sandbox at once.
 */
export async function heartbeat(
  db: Db,
  cfg: EngineConfig,
  input: { attemptId: string; jobId: string; epoch: number; phase?: { imageMs?: number; dispatchMs?: number; started?: boolean } },
): Promise<HeartbeatResult> {
  return withTx(db, "heartbeat", async (tx) => {
    const runId = await runIdOfAttempt(tx, input.attemptId);
    if (!runId) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
    // Share lock: heartbeats of one run don't serialise each other, but do wait for cancel.
    const run = await lockRun(tx, runId, "share");
    const a = await lockAttempt(tx, input.attemptId);
    if (!a || !run || a.jobId !== input.jobId) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
    decideHeartbeat({ job: { currentEpoch: a.jobCurrentEpoch }, attempt: a, reportedEpoch: input.epoch });
    const rows = await tx.$queryRaw<{ lease_expires_at: Date; cancel_requested: boolean }[]>`
      UPDATE attempt SET lease_expires_at = now() + make_interval(secs => ${cfg.leaseTtlMs / 1000}),
        image_ms = COALESCE(${input.phase?.imageMs ?? null}::int, image_ms),
        dispatch_ms = COALESCE(${input.phase?.dispatchMs ?? null}::int, dispatch_ms),
        started_at = CASE WHEN ${input.phase?.started ?? false} THEN COALESCE(started_at, now()) ELSE started_at END
      WHERE id = ${a.id}::uuid AND status = 'running' AND epoch = ${input.epoch} AND lease_expires_at > now()
      RETURNING lease_expires_at, cancel_requested OR preempt_requested AS cancel_requested`;
    const r = rows[0];
    if (!r) throw new DomainError("ATTEMPT.LEASE_EXPIRED", "lease could not be renewed");
    return { leaseExpiresAt: r.lease_expires_at.toISOString(), cancelRequested: r.cancel_requested || run.status === "cancelling" };
  });
}
