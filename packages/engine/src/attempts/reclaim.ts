import type { Tx } from "@kiln/db";
import { dispatch } from "@kiln/domain";
import { makeJobsReady } from "../runs/index.ts";
import type { AttemptView } from "./load-attempt.ts";

// A reclaimed attempt (issue 22, docs/adr/0035): the cloud took an interruptible host back. The job
// goes straight back to the queue, excluded from interruptible capacity from now on, so it lands on
// on-demand capacity: the reclaim is the capacity's fault, not the job's, so it spends no retry budget
// and waits no backoff (like preemption). Bounded all the same: the exclusion means a job is reclaimed
// at most once.

/**
 * Whether a reported host.reclaimed is honoured as a reclaim: only when the attempt really ran on
 * interruptible capacity (fixed at claim). Any other host saying so is an ordinary platform failure
 * (budget, backoff): a host cannot buy free retries by naming the cause.
 */
export async function reclaimHonoured(tx: Tx, a: AttemptView, cause: string | null | undefined): Promise<boolean> {
  if (cause !== dispatch.RECLAIMED_CAUSE) return false;
  const rows = await tx.$queryRaw<{ on_interruptible: boolean }[]>`
    SELECT on_interruptible FROM attempt WHERE id = ${a.id}::uuid`;
  return rows[0]?.on_interruptible === true;
}

export async function requeueReclaimed(tx: Tx, a: AttemptView): Promise<void> {
  await tx.$executeRaw`UPDATE job_run SET interruptible_excluded = true WHERE id = ${a.jobId}::uuid`;
  await makeJobsReady(tx, [{ id: a.jobId }], "retry_scheduled");
}
