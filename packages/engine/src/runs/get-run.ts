import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { queueInfoForRun, type QueueInfo } from "../dispatch/index.ts";
import { listRunForgeStatuses, type ForgeStatusView } from "../forge/index.ts";
import type { EngineConfig } from "../config/index.ts";
import { flakyJobsOfRun } from "./flaky-jobs.ts";

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export interface RunView {
  id: string;
  repo_id: string;
  status: string;
  outcome: string | null;
  cause: string | null;
  cause_message: string | null;
  trust_class: string;
  commit_sha: string;
  ref: string | null;
  /** A pull request's head branch as the forge named it (issue 28); the run's ref is refs/pull/<n>/head. */
  head_ref: string | null;
  workflow_path: string;
  workflow_hash: string | null;
  trigger: string;
  actor: string | null;
  parent_run_id: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  jobs: JobView[];
  /** Statuses on the forge for this run (issue 19): wanted vs delivered, per context. */
  forge_statuses: ForgeStatusView[];
}
export interface JobView {
  id: string;
  name: string;
  index: number;
  needs: string[];
  status: string;
  outcome: string | null;
  cause: string | null;
  cause_message: string | null;
  tier: string;
  /** A matrix expansion's values (issue 20), null for a plain job. */
  matrix: Record<string, string> | null;
  /** Set when a re-run pinned this job: the run and job whose success (and artifacts) it reuses. */
  reused_from: { run_id: string; job_id: string } | null;
  /** Passed and failed at this commit and definition (see listFlakyJobs); never acted on. */
  flaky: boolean;
  /** Present while the job waits: position, estimated start and why (issue 9). */
  queue: QueueInfo | null;
  attempts: AttemptView[];
}
interface AttemptView {
  epoch: number;
  status: string;
  outcome: string | null;
  cause: string | null;
  cause_message: string | null;
  host: string;
  exit_code: number | null;
  started_at: string | null;
  finished_at: string | null;
  phases: {
    queued_ms: number | null;
    image_preparation_ms: number | null;
    dispatch_ms: number | null;
    execution_ms: number | null;
    artifact_finalization_ms: number | null;
  };
  /** The attempt's log under retention (issue 21): class and expiry once archived; expired_at once evicted. */
  log: { retention_class: string | null; expires_at: string | null; expired_at: string | null };
}

// The row get-run reads: the view's run fields, with the database's dates before they become ISO text.
type RunRow = Omit<RunView, "created_at" | "started_at" | "finished_at" | "jobs" | "forge_statuses"> & {
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
};

type JobRow = {
  id: string;
  name: string;
  job_index: number;
  needs: number[];
  status: string;
  outcome: string | null;
  cause: string | null;
  cause_message: string | null;
  tier: string;
  matrix_values: Record<string, string> | null;
  reused_from_run_id: string | null;
  reused_from_job_id: string | null;
};

type AttemptRow = {
  job_id: string;
  epoch: number;
  status: string;
  outcome: string | null;
  cause: string | null;
  cause_message: string | null;
  host: string;
  exit_code: number | null;
  claimed_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  queued_ms: number | null;
  image_ms: number | null;
  dispatch_ms: number | null;
  execution_ms: number | null;
  finalize_ms: number | null;
  retention_class: string | null;
  log_expires_at: Date | null;
  log_expired_at: Date | null;
};

/** GET /v1/workflow-runs/{id}; another org's run is indistinguishable from a missing one. */
export async function getRun(db: Db, input: { orgId: string; runId: string; cfg?: EngineConfig }): Promise<RunView> {
  const r = await loadRun(db, input);
  const jobs = await db.$queryRaw<
    JobRow[]
  >`SELECT id, name, job_index, needs, status, outcome, cause, cause_message, tier, matrix_values, reused_from_run_id, reused_from_job_id
    FROM job_run WHERE run_id = ${r.id}::uuid ORDER BY job_index`;
  const flaky = jobs.some((j) => j.outcome !== null) ? await flakyJobsOfRun(db, input) : new Set<string>();
  const attempts = await db.$queryRaw<
    AttemptRow[]
  >`SELECT a.job_id, a.epoch, a.status, a.outcome, a.cause, a.cause_message, a.host, a.exit_code, a.claimed_at, a.started_at,
           a.finished_at, a.queued_ms, a.image_ms, a.dispatch_ms, a.execution_ms, a.finalize_ms,
           l.retention_class, l.expires_at AS log_expires_at, l.expired_at AS log_expired_at
    FROM attempt a LEFT JOIN log_attempt l ON l.attempt_id = a.id
    WHERE a.run_id = ${r.id}::uuid ORDER BY a.job_id, a.epoch`;
  const forgeStatuses = await listRunForgeStatuses(db, { orgId: input.orgId, runId: r.id });
  const names = new Map(jobs.map((j) => [j.job_index, j.name]));
  const queue =
    input.cfg && jobs.some((j) => j.status === "pending" || j.status === "ready")
      ? await queueInfoForRun(db, input.cfg, r.id)
      : new Map<string, QueueInfo>();
  return {
    id: r.id,
    repo_id: r.repo_id,
    status: r.status,
    outcome: r.outcome,
    cause: r.cause,
    cause_message: r.cause_message,
    trust_class: r.trust_class,
    commit_sha: r.commit_sha,
    ref: r.ref,
    head_ref: r.head_ref,
    workflow_path: r.workflow_path,
    workflow_hash: r.workflow_hash,
    trigger: r.trigger,
    actor: r.actor,
    parent_run_id: r.parent_run_id,
    created_at: r.created_at.toISOString(),
    started_at: iso(r.started_at),
    finished_at: iso(r.finished_at),
    jobs: jobs.map((j) => jobView(j, { names, flaky, queue, attempts })),
    forge_statuses: forgeStatuses,
  };
}

async function loadRun(db: Db, input: { orgId: string; runId: string }): Promise<RunRow> {
  const runs = await db.$queryRaw<
    RunRow[]
  >`SELECT id, repo_id, status, outcome, cause, cause_message, trust_class, commit_sha, ref, head_ref, workflow_path, workflow_hash, trigger, actor,
           parent_run_id, created_at, finished_at,
           COALESCE(started_at, (SELECT min(a.claimed_at) FROM attempt a WHERE a.run_id = workflow_run.id)) AS started_at
    FROM workflow_run WHERE id = ${input.runId}::uuid AND org_id = ${input.orgId}::uuid`;
  const r = runs[0];
  if (!r) throw new DomainError("RUN.NOT_FOUND", "run not found");
  return r;
}

function jobView(
  j: JobRow,
  of: {
    names: Map<number, string>;
    flaky: Set<string>;
    queue: Map<string, QueueInfo>;
    attempts: AttemptRow[];
  },
): JobView {
  const { names, flaky, queue } = of;
  return {
    id: j.id,
    name: j.name,
    index: j.job_index,
    needs: j.needs.map((n) => names.get(n) ?? String(n)),
    status: j.status,
    outcome: j.outcome,
    cause: j.cause,
    cause_message: j.cause_message,
    tier: j.tier,
    matrix: j.matrix_values,
    reused_from:
      j.reused_from_run_id && j.reused_from_job_id
        ? { run_id: j.reused_from_run_id, job_id: j.reused_from_job_id }
        : null,
    flaky: flaky.has(j.id),
    queue: queue.get(j.id) ?? null,
    attempts: of.attempts.filter((a) => a.job_id === j.id).map(attemptView),
  };
}

function attemptView(a: AttemptRow): AttemptView {
  return {
    epoch: a.epoch,
    status: a.status,
    outcome: a.outcome,
    cause: a.cause,
    cause_message: a.cause_message,
    host: a.host,
    exit_code: a.exit_code,
    started_at: iso(a.started_at ?? a.claimed_at),
    finished_at: iso(a.finished_at),
    phases: {
      queued_ms: a.queued_ms,
      image_preparation_ms: a.image_ms,
      dispatch_ms: a.dispatch_ms,
      execution_ms: a.execution_ms,
      artifact_finalization_ms: a.finalize_ms,
    },
    log: {
      retention_class: a.retention_class,
      expires_at: iso(a.log_expires_at),
      expired_at: iso(a.log_expired_at),
    },
  };
}
