import type { Tx } from "@kiln/db";
import { assertCurrentAttempt, DomainError, type WorkflowDefinition } from "@kiln/domain";
import { lockRun } from "../runs/index.ts";
import { assertHostNotRevoked } from "../shared/host-revoked.ts";
import { lockAttempt, runIdOfAttempt, type AttemptView } from "./load-attempt.ts";

// The fence every job-token write goes through. It lives with the attempts it fences rather than in
// artifacts: artifacts and caches both write through it, and it is about the attempt, not either of them.

export interface JobClaims {
  attemptId: string;
  jobId: string;
  epoch: number;
}

export interface CurrentAttempt {
  attempt: AttemptView;
  /** The job's definition as frozen in the run. */
  job: WorkflowDefinition["jobs"][number];
  definition: WorkflowDefinition;
}

/**
 * Loads the caller's attempt under the run's share lock (cancel and completion take it exclusively,
 * so neither can slip in between this check and the caller's write) and the job/attempt row locks,
 * then applies the fencing rule. Every artifact and cache metadata write goes through here.
 */
export async function lockCurrentAttempt(tx: Tx, claims: JobClaims): Promise<CurrentAttempt> {
  const runId = await runIdOfAttempt(tx, claims.attemptId);
  if (!runId) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
  const run = await lockRun(tx, runId, "share");
  const a = await lockAttempt(tx, claims.attemptId);
  if (!run || !a || a.jobId !== claims.jobId) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
  assertCurrentAttempt({
    runStatus: run.status,
    attempt: { epoch: a.epoch, status: a.status, leaseLive: a.leaseLive },
    jobCurrentEpoch: a.jobCurrentEpoch,
    reportedEpoch: claims.epoch,
  });
  await assertHostNotRevoked(tx, a.id);
  const rows = await tx.$queryRaw<{ definition: WorkflowDefinition; job_index: number }[]>`
    SELECT r.definition, j.job_index FROM job_run j JOIN workflow_run r ON r.id = j.run_id WHERE j.id = ${a.jobId}::uuid`;
  const definition = rows[0]?.definition;
  const job = definition?.jobs[rows[0]?.job_index ?? -1];
  if (!definition || !job) throw new DomainError("JOB.NOT_FOUND", "the job's frozen definition is missing");
  return { attempt: a, job, definition };
}
