import type { Tx } from "@kiln/db";
import { ATTEMPT_TRANSITIONS, JOB_TRANSITIONS, legalSources } from "@kiln/domain";
import { recordTransition } from "../shared/journal.ts";

const JOBS_CANCELLED_FROM = legalSources(JOB_TRANSITIONS, "cancelled", "completed");
const ATTEMPTS_ASKED_FROM = legalSources(ATTEMPT_TRANSITIONS, "stop_requested", "running");

/**
 * The cancel of jobs, shared by a run cancel (every job) and a matrix fail-fast (the unfinished
 * siblings): jobs nothing executes yet end now, cancelled, each with its event; running attempts
 * are asked to stop (the heartbeat answer carries it) and their jobs end when the agent reports.
 * Called inside the caller's transaction with the run row locked, so it serialises with completion.
 */
export async function cancelJobs(
  tx: Tx,
  run: { id: string; orgId: string },
  jobIds: readonly string[] | null,
  why: { cause: string; message: string; data?: Record<string, unknown> },
): Promise<{ ended: string[]; stopping: string[] }> {
  const all = jobIds === null;
  const ids = jobIds ?? [];
  const ended = await tx.$queryRaw<{ id: string; from_status: string }[]>`
    UPDATE job_run j SET status = 'completed', outcome = 'cancelled', cause = ${why.cause},
      cause_message = ${why.message}, finished_at = now()
    FROM (SELECT id, status AS from_status FROM job_run WHERE run_id = ${run.id}::uuid
          AND (${all} OR id = ANY(${ids}::uuid[]))) old
    WHERE j.id = old.id AND j.status = ANY(${JOBS_CANCELLED_FROM}::text[])
    RETURNING j.id, old.from_status`;
  for (const j of ended) {
    await recordTransition(tx, {
      orgId: run.orgId,
      runId: run.id,
      jobId: j.id,
      entity: "job",
      from: j.from_status,
      to: "completed",
      reason: "cancelled",
      data: why.data ?? null,
    });
  }
  const asked = await tx.$queryRaw<{ id: string; job_id: string }[]>`
    UPDATE attempt SET cancel_requested = true
    WHERE run_id = ${run.id}::uuid AND status = ANY(${ATTEMPTS_ASKED_FROM}::text[]) AND NOT cancel_requested
      AND (${all} OR job_id = ANY(${ids}::uuid[]))
    RETURNING id, job_id`;
  if (!all) {
    // A run cancel's stop requests are implied by its own cancel_requested event; a sibling's are not.
    for (const a of asked) {
      await recordTransition(tx, {
        orgId: run.orgId,
        runId: run.id,
        jobId: a.job_id,
        attemptId: a.id,
        entity: "attempt",
        from: "running",
        to: "running",
        reason: "stop_requested",
        data: { cause: why.cause, ...why.data },
      });
    }
  }
  return { ended: ended.map((j) => j.id), stopping: asked.map((a) => a.job_id) };
}
