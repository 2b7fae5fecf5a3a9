import { withTx, type Db, type Tx } from "@kiln/db";
import {
  advanceGraph,
  bindDeployment,
  DEPLOY_TRIGGER,
  DEFAULT_RUNNER_SIZE,
  initialReadyJobs,
  legalSources,
  parseWorkflow,
  RUN_TRANSITIONS,
  type RetentionWindows,
  type WorkflowDefinition,
  type WorkflowErrorCode,
} from "@kiln/domain";
import { silentLogger, type Logger } from "@kiln/logger";
import type { RegistryConfig, SourcePolicy } from "@kiln/oci";
import { pinImages } from "../images/index.ts";
import { fetchWorkflowFile } from "../source/index.ts";
import { forgeCredentialForFetch, type ForgeConfig } from "../forge/index.ts";
import { recordTransition } from "../shared/journal.ts";
import { recordWorkflowSchedules } from "../schedules/index.ts";
import { lockRun, makeJobsReady } from "./advance-run.ts";
import { failFetch, failFreeze, failImages, type FreezeOutcome } from "./freeze-failure.ts";
import { deploymentBindingOf } from "../deployments/index.ts";

export const DEFAULT_POOL = "default";

// A file the parser refuses is the user's to fix; the named refusals keep their own cause.
const WORKFLOW_CAUSES: Record<WorkflowErrorCode, string> = {
  "WORKFLOW.INVALID": "workflow.invalid",
  "WORKFLOW.EXPRESSION_NOT_ALLOWED": "workflow.expression_not_allowed",
  "WORKFLOW.MATRIX_TOO_LARGE": "workflow.matrix_too_large",
  "WORKFLOW.ENV_NAME_RESERVED": "workflow.env_name_reserved",
};

// Guard from the run table: a run freezes only while pending (freeze-failure.ts has the other).
const FREEZES_FROM = legalSources(RUN_TRANSITIONS, "frozen", "running");

export type { FreezeOutcome } from "./freeze-failure.ts";

/** What a freeze is given: the run, where and how to fetch its file and images, and its settings. */
export type FreezeInput = {
  runId: string;
  gitCacheDir: string;
  /** Which clone URLs git may fetch from (KILN_LOCAL_REPOS_ROOT; docs/adr/0017). */
  source: SourcePolicy;
  finalTry: boolean;
  registries?: RegistryConfig;
  poolImages?: Record<string, string>;
  /** The caller's logger; retried fetches are logged here with the run's ids. */
  log?: Logger;
  /**
   * The platform's windows (KILN_RETENTION_WINDOWS) for the run's metadata stamp if the freeze
   * fails and so completes the run; unset: the seed's, what an unset variable parses to.
   */
  retention?: RetentionWindows;
  /** The forge's settings: a private repo's workflow file is fetched with its forge credential (issue 28). */
  forge?: ForgeConfig;
};

/** The pending run as the freeze reads it. */
type PendingRun = {
  status: string;
  org_id: string;
  repo_id: string;
  clone_url: string;
  commit_sha: string;
  workflow_path: string;
  trigger: string;
  inputs: Record<string, string | number | boolean> | null;
  records_schedules: boolean;
  created_at: Date;
  actor: string | null;
};

type FetchedFile = Extract<Awaited<ReturnType<typeof fetchWorkflowFile>>, { ok: true }>;

/**
 * Pins the run's definition: the workflow file's bytes at the exact commit, its hash and parsed
 * form, then the jobs. A bad file finishes the run as user_failure with the parser's message
 * (naming the line); an unreachable git server is retried, and only after the last try becomes a
 * platform failure. Running twice is a no-op (the run is no longer pending).
 */
export async function freezeRun(db: Db, input: FreezeInput): Promise<FreezeOutcome> {
  const run = await loadPendingRun(db, input.runId);
  if (!run) return "not_pending";
  const file = await fetchWorkflowFile({
    cacheDir: input.gitCacheDir,
    repoId: run.repo_id,
    cloneUrl: run.clone_url,
    commitSha: run.commit_sha,
    filePath: run.workflow_path,
    source: input.source,
    ...(input.forge ? { credential: () => forgeCredentialForFetch(db, input.forge!, run.repo_id, run.clone_url) } : {}),
  });
  const log = (input.log ?? silentLogger).child({ org_id: run.org_id, run_id: input.runId });
  if (!file.ok) return failFetch(db, input, file, log);
  const definition = await pinDefinition(db, input, run, file, log);
  if (typeof definition === "string") return definition;
  const done = await withTx(db, "freeze-run", (tx) => commitFreeze(tx, input.runId, run, file.sha256, definition));
  return done ? "frozen" : "not_pending";
}

async function loadPendingRun(db: Db, runId: string): Promise<PendingRun | null> {
  const rows = await db.$queryRaw<PendingRun[]>`
    SELECT r.status, r.org_id, r.repo_id, rp.clone_url, r.commit_sha, r.workflow_path, r.trigger, r.inputs, r.created_at, r.actor,
           -- Only a trusted push to (or a scheduled run of) the default branch records the file's schedules:
           -- a pull request's head ref is the forge's word for a branch anywhere, a fork's included.
           (r.trust_class = 'trusted' AND r.trigger IN ('push', 'schedule')
            AND r.ref = 'refs/heads/' || rp.default_branch) AS records_schedules
    FROM workflow_run r JOIN repo rp ON rp.id = r.repo_id WHERE r.id = ${runId}::uuid`;
  const run = rows[0];
  return run && run.status === "pending" ? run : null;
}

/**
 * The parsed definition with its deployment bound and its images pinned, or the outcome of a
 * freeze that stops here (the run failed, or the registry is to be retried).
 */
async function pinDefinition(
  db: Db,
  input: FreezeInput,
  run: PendingRun,
  file: FetchedFile,
  log: Logger,
): Promise<WorkflowDefinition | FreezeOutcome> {
  // Matrix expansion and `${{ inputs.* }}` happen here, once: the expanded jobs are what is frozen.
  const parsed = parseWorkflow(file.content, { inputs: run.inputs ?? {} });
  // A deploy run (issue 18) gets its deployment's configuration and the promoted artifact pinned.
  const binding = run.trigger === DEPLOY_TRIGGER ? await deploymentBindingOf(db, input.runId) : null;
  if (!parsed.ok) {
    await failFreeze(
      db,
      input,
      "user_failure",
      WORKFLOW_CAUSES[parsed.error.code],
      `${run.workflow_path}: ${parsed.error.message}`,
      file.sha256,
    );
    return "invalid";
  }
  // Image tags -> digests (ADR 0012), same failure rules as the git source above.
  const bound = binding ? bindDeployment(parsed.definition, binding) : parsed.definition;
  // Each job gets its own pool's default image (issue 30), or is refused for want of one.
  const images = await pinImages(bound, input.registries ?? {}, input.poolImages ?? null);
  if (!images.ok) {
    if (images.kind === "unreachable" && !input.finalTry) {
      log.warn("image registry unreachable; freeze will be retried", { err: images.message });
      return "retry_later";
    }
    return failImages(db, input, images, file.sha256);
  }
  return images.definition;
}

/** The freeze's transaction: the run frozen with its definition, its jobs, and its schedules. */
async function commitFreeze(
  tx: Tx,
  runId: string,
  run: PendingRun,
  workflowHash: string,
  definition: WorkflowDefinition,
): Promise<boolean> {
  const locked = await lockRun(tx, runId, "update");
  if (!locked || !FREEZES_FROM.includes(locked.status)) return false;
  await tx.$executeRaw`
    UPDATE workflow_run SET status = 'running', workflow_hash = ${workflowHash}, definition = ${JSON.stringify(definition)}::jsonb
    WHERE id = ${runId}::uuid AND status = ANY(${FREEZES_FROM}::text[])`;
  await recordTransition(tx, {
    orgId: locked.orgId,
    runId: locked.id,
    entity: "run",
    from: "pending",
    to: "running",
    reason: "frozen",
    data: { workflow_hash: workflowHash, jobs: definition.jobs.length },
  });
  await createJobs(tx, { id: locked.id, orgId: locked.orgId, trigger: run.trigger }, definition);
  if (run.records_schedules)
    await recordWorkflowSchedules(
      tx,
      { orgId: locked.orgId, repoId: run.repo_id, admittedAt: run.created_at, actor: run.actor ?? "workflow" },
      definition.schedules ?? [],
    );
  return true;
}

/** A job without `tier:` gets its trigger's: people waiting on a push, PR or click are interactive. */
function defaultTier(trigger: string): "interactive" | "scheduled" | "background" {
  return trigger === "schedule" ? "scheduled" : "interactive";
}

/**
 * Inserts the job rows for a frozen definition (one statement) and makes the root jobs READY,
 * within each matrix group's max_parallel. A re-run passes `pinned`: those jobs are created
 * completed, as the success of the job that produced them (no attempt, its artifact bindings), each
 * with a "pinned" event, and READY is then decided over the whole graph as after any completion.
 */
export async function createJobs(
  tx: Tx,
  run: { id: string; orgId: string; trigger?: string },
  def: WorkflowDefinition,
  pool = DEFAULT_POOL,
  pinned: ReadonlyMap<number, { runId: string; jobId: string }> = new Map(),
): Promise<void> {
  const fallback = defaultTier(run.trigger ?? "manual");
  // runs_on (issue 20): the job's pool, labels and size are columns the claim filters on.
  const rows = def.jobs.map((j) => ({
    job_index: j.index,
    name: j.name,
    needs: j.needs,
    tier: j.tier ?? fallback,
    pool: j.runsOn?.pool ?? pool,
    labels: j.runsOn?.labels ?? [],
    size: j.runsOn?.size ?? DEFAULT_RUNNER_SIZE,
    matrix_group: j.matrix?.job ?? null,
    matrix_values: j.matrix?.values ?? null,
    max_parallel: j.matrix?.maxParallel ?? null,
    fail_fast: j.matrix?.failFast ?? false,
    reused_run: pinned.get(j.index)?.runId ?? null,
    reused_job: pinned.get(j.index)?.jobId ?? null,
  }));
  const inserted = await tx.$queryRaw<{ id: string; job_index: number; reused_from_job_id: string | null }[]>`
    INSERT INTO job_run (run_id, org_id, job_index, name, needs, pool, status, outcome, finished_at, tier,
                         matrix_group, matrix_values, max_parallel, fail_fast, reused_from_run_id, reused_from_job_id,
                         runner_labels, runner_size)
    SELECT ${run.id}::uuid, ${run.orgId}::uuid, x.job_index, x.name, x.needs, x.pool,
           CASE WHEN x.reused_job IS NULL THEN 'pending' ELSE 'completed' END,
           CASE WHEN x.reused_job IS NULL THEN NULL ELSE 'success' END,
           CASE WHEN x.reused_job IS NULL THEN NULL ELSE now() END,
           x.tier, x.matrix_group, x.matrix_values, x.max_parallel, x.fail_fast, x.reused_run, x.reused_job,
           x.labels, x.size
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      AS x(job_index int, name text, needs int[], tier text, matrix_group text, matrix_values jsonb, max_parallel int,
           fail_fast boolean, reused_run uuid, reused_job uuid, pool text, labels text[], size text)
    RETURNING id, job_index, reused_from_job_id`;
  const ids = new Map(inserted.map((r) => [r.job_index, r.id]));
  for (const r of inserted) {
    const from = pinned.get(r.job_index);
    if (!from) continue;
    await recordTransition(tx, {
      orgId: run.orgId,
      runId: run.id,
      jobId: r.id,
      entity: "job",
      from: null,
      to: "completed",
      reason: "pinned",
      data: { reused_from: { run_id: from.runId, job_id: from.jobId } },
    });
  }
  const nodes = def.jobs.map((j) => ({
    jobIndex: j.index,
    needs: j.needs,
    group: j.matrix ? { key: j.matrix.job, maxParallel: j.matrix.maxParallel } : null,
  }));
  const roots =
    pinned.size === 0
      ? initialReadyJobs(nodes)
      : advanceGraph(
          nodes.map((n) => ({
            ...n,
            status: pinned.has(n.jobIndex) ? ("completed" as const) : ("pending" as const),
            outcome: pinned.has(n.jobIndex) ? ("success" as const) : null,
          })),
        ).ready;
  await makeJobsReady(
    tx,
    roots.flatMap((i) => {
      const id = ids.get(i);
      return id ? [{ id }] : [];
    }),
    "predecessors_succeeded",
  );
}
