import type { Tx } from "@kiln/db";
import {
  advanceGraph,
  deriveRunOutcome,
  legalSources,
  JOB_TRANSITIONS,
  RUN_TRANSITIONS,
  UPSTREAM_FAILED_CAUSE,
  type JobStatus,
  type Outcome,
  type RunStatus,
} from "@kiln/domain";
import { enqueueOutbox, recordTransition } from "../shared/journal.ts";

interface JobRow {
  id: string;
  job_index: number;
  name: string;
  needs: number[];
  status: JobStatus;
  outcome: Outcome | null;
  cause: string | null;
  pool: string;
}

export async function loadJobs(tx: Tx, runId: string): Promise<JobRow[]> {
  return tx.$queryRaw<JobRow[]>`
    SELECT id, job_index, name, needs, status, outcome, cause, pool FROM job_run WHERE run_id = ${runId}::uuid ORDER BY job_index`;
}

/**
 * Moves jobs to READY (new dispatch generation, outbox row) inside the caller's transaction. The
 * guarded update makes a duplicate call a no-op.
 */
export async function makeJobsReady(
  tx: Tx,
  run: { id: string; orgId: string },
  jobs: readonly { id: string; pool: string }[],
  reason: "predecessors_succeeded" | "retry_scheduled",
  opts: { notBefore?: Date | null } = {},
): Promise<void> {
  for (const job of jobs) {
    const rows = await tx.$queryRaw<{ dispatch_generation: number; from_status: string }[]>`
      UPDATE job_run j SET status = 'ready', dispatch_generation = j.dispatch_generation + 1,
        ready_at = now(), dispatched_at = now(), next_attempt_at = ${opts.notBefore ?? null}::timestamptz
      FROM (SELECT id, status AS from_status FROM job_run WHERE id = ${job.id}::uuid) old
      WHERE j.id = old.id AND j.status = ANY(${legalSources(JOB_TRANSITIONS, reason, "ready")}::text[])
      RETURNING j.dispatch_generation, old.from_status`;
    const row = rows[0];
    if (!row) continue;
    await recordTransition(tx, {
      orgId: run.orgId, runId: run.id, jobId: job.id, entity: "job", from: row.from_status, to: "ready", reason,
      data: { generation: row.dispatch_generation, ...(opts.notBefore ? { not_before: opts.notBefore.toISOString() } : {}) },
    });
    await enqueueOutbox(
      tx,
      "job.dispatch",
      { jobId: job.id, runId: run.id, orgId: run.orgId, pool: job.pool, generation: row.dispatch_generation },
      { deliverAfter: opts.notBefore ?? null, dedupeKey: `${job.id}:${row.dispatch_generation}` },
    );
  }
}

/**
 * After a job reached a terminal state: make successors ready, skip the ones that can never run,
 * and finish the run when nothing is left. Called with the run row already locked.
 */
export async function advanceRun(tx: Tx, run: { id: string; orgId: string; status: RunStatus }): Promise<void> {
  const jobs = await loadJobs(tx, run.id);
  if (run.status === "running") {
    const { ready, skipped } = advanceGraph(
      jobs.map((j) => ({ jobIndex: j.job_index, needs: j.needs, status: j.status, outcome: j.outcome })),
    );
    const byIndex = new Map(jobs.map((j) => [j.job_index, j]));
    for (const idx of skipped) {
      const j = byIndex.get(idx);
      if (!j) continue;
      const n = await tx.$executeRaw`
        UPDATE job_run SET status = 'completed', outcome = 'cancelled', cause = ${UPSTREAM_FAILED_CAUSE},
          cause_message = 'not run: a job it needs did not succeed', finished_at = now()
        WHERE id = ${j.id}::uuid AND status = ANY(${legalSources(JOB_TRANSITIONS, "skipped", "completed")}::text[])`;
      if (n > 0) {
        await recordTransition(tx, { orgId: run.orgId, runId: run.id, jobId: j.id, entity: "job", from: j.status, to: "completed", reason: "skipped" });
        j.status = "completed";
        j.outcome = "cancelled";
        j.cause = UPSTREAM_FAILED_CAUSE;
      }
    }
    const readyJobs = ready.map((i) => byIndex.get(i)).filter((j): j is JobRow => j !== undefined);
    await makeJobsReady(tx, run, readyJobs, "predecessors_succeeded");
    for (const j of readyJobs) j.status = "ready";
  }
  await finishRunIfDone(tx, run, jobs);
}

/** Completes the run when every job is terminal and no attempt may still be executing. */
export async function finishRunIfDone(
  tx: Tx,
  run: { id: string; orgId: string; status: RunStatus },
  jobs?: readonly JobRow[],
): Promise<boolean> {
  if (run.status === "completed" || run.status === "pending") return false;
  const all = jobs ?? (await loadJobs(tx, run.id));
  if (all.some((j) => j.status !== "completed")) return false;
  // A cancelling run waits until every attempt is confirmed stopped (seed 000 section 9).
  const live = await tx.$queryRaw<{ n: bigint }[]>`
    SELECT count(*) AS n FROM attempt WHERE run_id = ${run.id}::uuid AND stopped_at IS NULL`;
  if (run.status === "cancelling" && (live[0]?.n ?? 0n) > 0n) return false;
  const derived =
    run.status === "cancelling"
      ? { outcome: "cancelled" as Outcome, cause: "run.cancelled" }
      : deriveRunOutcome(all.map((j) => ({ jobIndex: j.job_index, outcome: j.outcome ?? "platform_failure", cause: j.cause })));
  const event = run.status === "cancelling" ? "stopped" : "jobs_finished";
  const n = await tx.$executeRaw`
    UPDATE workflow_run SET status = 'completed', outcome = ${derived.outcome}, cause = ${derived.cause}, finished_at = now()
    WHERE id = ${run.id}::uuid AND status = ANY(${legalSources(RUN_TRANSITIONS, event, "completed")}::text[])`;
  if (n === 0) return false;
  await recordTransition(tx, { orgId: run.orgId, runId: run.id, entity: "run", from: run.status, to: "completed", reason: event, data: { outcome: derived.outcome } });
  return true;
}

export interface LockedRun {
  id: string;
  orgId: string;
  status: RunStatus;
  cancelVersion: number;
  trustClass: string;
}

export async function lockRun(tx: Tx, runId: string, mode: "update" | "share" = "update"): Promise<LockedRun | null> {
  const rows =
    mode === "update"
      ? await tx.$queryRaw<{ id: string; org_id: string; status: RunStatus; cancel_version: number; trust_class: string }[]>`
          SELECT id, org_id, status, cancel_version, trust_class FROM workflow_run WHERE id = ${runId}::uuid FOR UPDATE`
      : await tx.$queryRaw<{ id: string; org_id: string; status: RunStatus; cancel_version: number; trust_class: string }[]>`
          SELECT id, org_id, status, cancel_version, trust_class FROM workflow_run WHERE id = ${runId}::uuid FOR SHARE`;
  const r = rows[0];
  return r ? { id: r.id, orgId: r.org_id, status: r.status, cancelVersion: r.cancel_version, trustClass: r.trust_class } : null;
}
