import type { Tx } from "@kiln/db";
import {
  advanceGraph,
  allJobsCompleted,
  DEPLOY_TRIGGER,
  deriveRunOutcome,
  FAIL_FAST_CAUSE,
  failFastVictims,
  legalSources,
  JOB_TRANSITIONS,
  RUN_TRANSITIONS,
  UPSTREAM_FAILED_CAUSE,
  type JobStatus,
  type Outcome,
  type RetentionWindows,
  type RunStatus,
} from "@kiln/domain";
import { recordTransition } from "../shared/journal.ts";
import type { OutboxTopic } from "../shared/outbox-topics.ts";
import { stampRunRetention } from "../shared/retention-stamp.ts";
import { cancelJobs } from "./cancel-jobs.ts";

// Guards from the transition tables, computed once.
const READY_FROM = {
  predecessors_succeeded: legalSources(JOB_TRANSITIONS, "predecessors_succeeded", "ready"),
  retry_scheduled: legalSources(JOB_TRANSITIONS, "retry_scheduled", "ready"),
} as const;
const SKIPPED_FROM = legalSources(JOB_TRANSITIONS, "skipped", "completed");
const RUN_FINISHES_FROM = {
  stopped: legalSources(RUN_TRANSITIONS, "stopped", "completed"),
  jobs_finished: legalSources(RUN_TRANSITIONS, "jobs_finished", "completed"),
} as const;

interface JobRow {
  id: string;
  job_index: number;
  name: string;
  needs: number[];
  status: JobStatus;
  outcome: Outcome | null;
  cause: string | null;
  pool: string;
  matrix_group: string | null;
  max_parallel: number | null;
  fail_fast: boolean;
}

async function loadJobs(tx: Tx, runId: string): Promise<JobRow[]> {
  return tx.$queryRaw<JobRow[]>`
    SELECT id, job_index, name, needs, status, outcome, cause, pool, matrix_group, max_parallel, fail_fast
    FROM job_run WHERE run_id = ${runId}::uuid ORDER BY job_index`;
}

function graphNode(j: JobRow) {
  return {
    jobIndex: j.job_index,
    needs: j.needs,
    status: j.status,
    outcome: j.outcome,
    group: j.matrix_group === null ? null : { key: j.matrix_group, maxParallel: j.max_parallel },
    failFast: j.fail_fast,
  };
}

/**
 * Matrix fail-fast (issue 20): after a user failure of an expansion, its unfinished siblings are
 * cancelled through the same job cancel as a run cancel, with their own cause. Updates `jobs`.
 */
async function failFast(tx: Tx, run: { id: string; orgId: string }, jobs: JobRow[]): Promise<void> {
  const victims = new Set(failFastVictims(jobs.map(graphNode)));
  if (victims.size === 0) return;
  const targets = jobs.filter((j) => victims.has(j.job_index));
  const { ended } = await cancelJobs(
    tx,
    run,
    targets.map((j) => j.id),
    {
      cause: FAIL_FAST_CAUSE,
      message: "cancelled: a sibling in the matrix failed and the job has fail_fast",
      data: { matrix_group: targets[0]?.matrix_group ?? null },
    },
  );
  const gone = new Set(ended);
  for (const j of jobs) {
    if (!gone.has(j.id)) continue;
    j.status = "completed";
    j.outcome = "cancelled";
    j.cause = FAIL_FAST_CAUSE;
  }
}

/**
 * Moves jobs to READY (new dispatch generation, outbox row) inside the caller's transaction. The
 * guarded update makes a duplicate call a no-op. One statement for any number of jobs: a 256-job
 * fan-out is one round trip (update, transition events and outbox rows together), not 768.
 */
export async function makeJobsReady(
  tx: Tx,
  jobs: readonly { id: string }[],
  reason: "predecessors_succeeded" | "retry_scheduled",
  opts: { notBefore?: Date | null } = {},
): Promise<void> {
  if (jobs.length === 0) return;
  const ids = jobs.map((j) => j.id);
  const notBefore = opts.notBefore ?? null;
  const topic: OutboxTopic = "job.dispatch";
  // `old` names each row's status before the update, for the journal: the guard admits any source
  // the table lists for this reason.
  const rows = await tx.$queryRaw<{ id: bigint; pool: string }[]>`
    WITH upd AS (
      UPDATE job_run j SET status = 'ready', dispatch_generation = j.dispatch_generation + 1,
        ready_at = now(), dispatched_at = now(), next_attempt_at = ${notBefore}::timestamptz
      FROM (SELECT id, status FROM job_run WHERE id = ANY(${ids}::uuid[])) old
      WHERE j.id = old.id AND j.status = ANY(${READY_FROM[reason]}::text[])
      RETURNING j.id, j.run_id, j.org_id, j.pool, j.dispatch_generation, old.status AS from_status
    ), ev AS (
      INSERT INTO transition_event (org_id, run_id, job_id, entity, from_state, to_state, reason, data)
      SELECT org_id, run_id, id, 'job', from_status, 'ready', ${reason},
             jsonb_strip_nulls(jsonb_build_object('generation', dispatch_generation, 'not_before', ${notBefore}::timestamptz))
      FROM upd
    )
    INSERT INTO outbox (topic, payload, dedupe_key, deliver_after)
    SELECT ${topic}::text,
           jsonb_build_object('jobId', id, 'runId', run_id, 'orgId', org_id, 'pool', pool, 'generation', dispatch_generation),
           id::text || ':' || dispatch_generation::text, COALESCE(${notBefore}::timestamptz, now())
    FROM upd
    RETURNING id, payload->>'pool' AS pool`;
  if (rows.length === 0) return;
  // Both wake-ups fire on commit (NOTIFY is transactional): the relay's, and, for jobs claimable
  // now, the long-polling claimers' directly, a hop sooner than the relay's own NOTIFY (which still
  // follows as the backstop). A lost notification costs one poll interval.
  const pools = notBefore ? [] : [...new Set(rows.map((r) => r.pool))];
  await tx.$executeRaw`
    SELECT pg_notify('kiln_outbox', ${topic}::text) UNION ALL SELECT pg_notify('kiln_dispatch', p) FROM unnest(${pools}::text[]) AS p`;
}

/**
 * After a job reached a terminal state: make successors ready, skip the ones that can never run,
 * and finish the run when nothing is left. Called with the run row already locked.
 */
export async function advanceRun(
  tx: Tx,
  run: { id: string; orgId: string; status: RunStatus },
  /** The platform's windows: the run's metadata class and expiry if this completes it. */
  windows: RetentionWindows,
): Promise<void> {
  const jobs = await loadJobs(tx, run.id);
  if (run.status === "running") {
    await failFast(tx, run, jobs);
    const { ready, skipped } = advanceGraph(jobs.map(graphNode));
    const byIndex = new Map(jobs.map((j) => [j.job_index, j]));
    for (const idx of skipped) {
      const j = byIndex.get(idx);
      if (!j) continue;
      const n = await tx.$executeRaw`
        UPDATE job_run SET status = 'completed', outcome = 'cancelled', cause = ${UPSTREAM_FAILED_CAUSE},
          cause_message = 'not run: a job it needs did not succeed', finished_at = now()
        WHERE id = ${j.id}::uuid AND status = ANY(${SKIPPED_FROM}::text[])`;
      if (n > 0) {
        await recordTransition(tx, {
          orgId: run.orgId,
          runId: run.id,
          jobId: j.id,
          entity: "job",
          from: j.status,
          to: "completed",
          reason: "skipped",
        });
        j.status = "completed";
        j.outcome = "cancelled";
        j.cause = UPSTREAM_FAILED_CAUSE;
      }
    }
    const readyJobs = ready.map((i) => byIndex.get(i)).filter((j): j is JobRow => j !== undefined);
    await makeJobsReady(tx, readyJobs, "predecessors_succeeded");
    for (const j of readyJobs) j.status = "ready";
  }
  await finishRunIfDone(tx, run, windows, jobs);
}

/**
 * Completes the run when every job is terminal and no attempt may still be executing, stamping its
 * run-metadata retention (class, expiry from `windows`) in the same transaction.
 */
export async function finishRunIfDone(
  tx: Tx,
  run: { id: string; orgId: string; status: RunStatus },
  windows: RetentionWindows,
  jobs?: readonly JobRow[],
): Promise<boolean> {
  if (run.status === "completed" || run.status === "pending") return false;
  const all = jobs ?? (await loadJobs(tx, run.id));
  if (!allJobsCompleted(all)) return false;
  // A cancelling run waits until every attempt is confirmed stopped (seed 000 section 9).
  const live = await tx.$queryRaw<{ n: bigint }[]>`
    SELECT count(*) AS n FROM attempt WHERE run_id = ${run.id}::uuid AND stopped_at IS NULL`;
  if (run.status === "cancelling" && (live[0]?.n ?? 0n) > 0n) return false;
  const derived =
    run.status === "cancelling"
      ? { outcome: "cancelled" as Outcome, cause: "run.cancelled" }
      : deriveRunOutcome(
          all.map((j) => ({ jobIndex: j.job_index, outcome: j.outcome ?? "platform_failure", cause: j.cause })),
        );
  const event = run.status === "cancelling" ? "stopped" : "jobs_finished";
  const n = await tx.$executeRaw`
    UPDATE workflow_run SET status = 'completed', outcome = ${derived.outcome}, cause = ${derived.cause}, finished_at = now()
    WHERE id = ${run.id}::uuid AND status = ANY(${RUN_FINISHES_FROM[event]}::text[])`;
  if (n === 0) return false;
  await stampRunRetention(tx, run.id, windows);
  await recordTransition(tx, {
    orgId: run.orgId,
    runId: run.id,
    entity: "run",
    from: run.status,
    to: "completed",
    reason: event,
    data: { outcome: derived.outcome },
  });
  return true;
}

export interface LockedRun {
  id: string;
  orgId: string;
  status: RunStatus;
  cancelVersion: number;
  trustClass: string;
  /** A deploy run (issue 18) is never retried automatically: see retryBudgetOf. */
  trigger: string;
}

/**
 * Automatic platform-failure retries a run's jobs get. A deploy run gets none (seed 003 Q1): its
 * side effects cannot be fenced, so a failed or silent deploy attempt fails visibly instead of
 * being re-dispatched while the old one might still be deploying.
 */
export function retryBudgetOf(run: { trigger: string }, budget: number): number {
  return run.trigger === DEPLOY_TRIGGER ? 0 : budget;
}

export async function lockRun(tx: Tx, runId: string, mode: "update" | "share" = "update"): Promise<LockedRun | null> {
  const rows =
    mode === "update"
      ? await tx.$queryRaw<
          {
            id: string;
            org_id: string;
            status: RunStatus;
            cancel_version: number;
            trust_class: string;
            trigger: string;
          }[]
        >`
          SELECT id, org_id, status, cancel_version, trust_class, trigger FROM workflow_run WHERE id = ${runId}::uuid FOR UPDATE`
      : await tx.$queryRaw<
          {
            id: string;
            org_id: string;
            status: RunStatus;
            cancel_version: number;
            trust_class: string;
            trigger: string;
          }[]
        >`
          SELECT id, org_id, status, cancel_version, trust_class, trigger FROM workflow_run WHERE id = ${runId}::uuid FOR SHARE`;
  const r = rows[0];
  return r
    ? {
        id: r.id,
        orgId: r.org_id,
        status: r.status,
        cancelVersion: r.cancel_version,
        trustClass: r.trust_class,
        trigger: r.trigger,
      }
    : null;
}
