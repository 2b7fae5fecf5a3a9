// Who may read a job's logs: members of the job's org (API token or dashboard session). Tenant
// scoping is in the query: another org's job is indistinguishable from a missing one (404).
import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";

export interface LogReadGrant {
  jobId: string;
  runId: string;
  orgId: string;
  /** The job is completed: no further attempt can start. */
  jobFinished: boolean;
  /** Epochs of the job's attempts, ascending. */
  epochs: number[];
  /** Epochs whose logs retention evicted (issue 21): reading them answers 410 LOG.EXPIRED. */
  expiredEpochs: number[];
}

export async function authorizeLogRead(db: Db, input: { orgId: string; jobId: string }): Promise<LogReadGrant> {
  const rows = await db.$queryRaw<
    { id: string; run_id: string; org_id: string; status: string; epochs: number[] | null; expired: number[] | null }[]
  >`
    SELECT j.id, j.run_id, j.org_id, j.status,
           (SELECT array_agg(a.epoch ORDER BY a.epoch) FROM attempt a WHERE a.job_id = j.id) AS epochs,
           (SELECT array_agg(a.epoch ORDER BY a.epoch) FROM attempt a JOIN log_attempt l ON l.attempt_id = a.id
            WHERE a.job_id = j.id AND l.expired_at IS NOT NULL) AS expired
    FROM job_run j WHERE j.id = ${input.jobId}::uuid AND j.org_id = ${input.orgId}::uuid`;
  const j = rows[0];
  if (!j) throw new DomainError("JOB.NOT_FOUND", "job not found");
  return {
    jobId: j.id,
    runId: j.run_id,
    orgId: j.org_id,
    jobFinished: j.status === "completed",
    epochs: j.epochs ?? [],
    expiredEpochs: j.expired ?? [],
  };
}
