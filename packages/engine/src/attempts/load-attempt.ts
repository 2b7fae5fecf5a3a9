import type { Tx } from "@kiln/db";
import type { AttemptStatus, JobStatus } from "@kiln/domain";

export interface AttemptView {
  id: string;
  jobId: string;
  runId: string;
  orgId: string;
  epoch: number;
  status: AttemptStatus;
  leaseLive: boolean;
  cancelRequested: boolean;
  preemptRequested: boolean;
  jobStatus: JobStatus;
  jobCurrentEpoch: number;
  platformRetries: number;
  claimedAt: Date;
  now: Date;
}

/** Loads an attempt with its job, locking the job row (the caller already holds the run lock). */
export async function lockAttempt(tx: Tx, attemptId: string): Promise<AttemptView | null> {
  const rows = await tx.$queryRaw<
    {
      id: string;
      job_id: string;
      run_id: string;
      org_id: string;
      epoch: number;
      status: AttemptStatus;
      lease_live: boolean;
      cancel_requested: boolean;
      preempt_requested: boolean;
      job_status: JobStatus;
      current_epoch: number;
      platform_retries: number;
      claimed_at: Date;
      now: Date;
    }[]
  >`
    SELECT a.id, a.job_id, a.run_id, a.org_id, a.epoch, a.status, a.lease_expires_at > now() AS lease_live, a.cancel_requested, a.preempt_requested,
           j.status AS job_status, j.current_epoch, j.platform_retries, a.claimed_at, now() AS now
    FROM attempt a JOIN job_run j ON j.id = a.job_id
    WHERE a.id = ${attemptId}::uuid
    FOR UPDATE OF j, a`;
  const r = rows[0];
  if (!r) return null;
  return {
    id: r.id,
    jobId: r.job_id,
    runId: r.run_id,
    orgId: r.org_id,
    epoch: r.epoch,
    status: r.status,
    leaseLive: r.lease_live,
    cancelRequested: r.cancel_requested,
    preemptRequested: r.preempt_requested,
    jobStatus: r.job_status,
    jobCurrentEpoch: r.current_epoch,
    platformRetries: r.platform_retries,
    claimedAt: r.claimed_at,
    now: r.now,
  };
}

export async function runIdOfAttempt(tx: Tx, attemptId: string): Promise<string | null> {
  const rows = await tx.$queryRaw<{ run_id: string }[]>`SELECT run_id FROM attempt WHERE id = ${attemptId}::uuid`;
  return rows[0]?.run_id ?? null;
}
