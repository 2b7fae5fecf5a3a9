import { withTx, type Db } from "@kiln/db";
import {
  canTrigger,
  computeTrustClass,
  DEPLOY_TRIGGER,
  DomainError,
  planRerun,
  type Outcome,
  type TrustClass,
  type WorkflowDefinition,
} from "@kiln/domain";
import { recordTransition } from "../shared/journal.ts";
import type { Caller } from "./admit-manual.ts";
import { createJobs } from "./freeze-run.ts";

export interface RerunResult {
  runId: string;
  parentRunId: string;
  /** Jobs kept from the parent: no attempt in the new run, artifacts those of the producer. */
  pinned: { jobIndex: number; name: string; reusedFrom: { runId: string; jobId: string } }[];
  /** Jobs that run again: the failed, cancelled and timed-out ones and everything downstream. */
  rerun: { jobIndex: number; name: string }[];
}

interface ParentJob {
  id: string;
  job_index: number;
  name: string;
  needs: number[];
  outcome: Outcome | null;
  pool: string;
  reused_from_run_id: string | null;
  reused_from_job_id: string | null;
}

/**
 * POST /v1/workflow-runs/{id}/rerun-failed (issue 20). A new run with the parent's pinned definition
 * and trust class (inherited, never raised) and a parent link; planRerun decides which jobs are
 * pinned and which run again. Nothing is re-read from git. Scoped to the caller's org in the query.
 */
export async function rerunFailedJobs(db: Db, input: { caller: Caller; runId: string }): Promise<RerunResult> {
  if (!canTrigger(input.caller.role)) {
    throw new DomainError("AUTH.FORBIDDEN", `role ${input.caller.role} cannot re-run jobs`);
  }
  return withTx(db, "rerun-failed", async (tx) => {
    const rows = await tx.$queryRaw<
      {
        id: string;
        org_id: string;
        repo_id: string;
        status: string;
        trust_class: TrustClass;
        trigger: string;
        commit_sha: string;
        workflow_path: string;
        workflow_hash: string | null;
        definition: WorkflowDefinition | null;
        inputs: unknown;
        ref: string | null;
        head_ref: string | null;
      }[]
    >`SELECT id, org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, workflow_hash, definition, inputs, ref, head_ref
      FROM workflow_run WHERE id = ${input.runId}::uuid AND org_id = ${input.caller.orgId}::uuid FOR SHARE`;
    const parent = rows[0];
    if (!parent) throw new DomainError("RUN.NOT_FOUND", "run not found");
    // A deploy run is started only by a pointer move, under the environment's lock (ADR 0033):
    // retrying it by hand would deploy outside the lock. Promote (or roll back) again instead.
    if (parent.trigger === DEPLOY_TRIGGER)
      throw new DomainError(
        "RUN.ILLEGAL_TRANSITION",
        "a deploy run cannot be re-run; promote or roll back the environment instead",
      );
    if (parent.status !== "completed") {
      throw new DomainError("RUN.NOT_FINISHED", "only a finished run's failed jobs can be re-run");
    }
    // A disconnected repo admits no new run by any path (docs/adr/0029), re-runs included.
    const repo = await tx.$queryRaw<{ disconnected: boolean }[]>`
      SELECT disconnected_at IS NOT NULL AS disconnected FROM repo WHERE id = ${parent.repo_id}::uuid`;
    if (repo[0]?.disconnected)
      throw new DomainError("REPO.DISCONNECTED", "this run's repository is disconnected; connect it again to re-run");
    if (!parent.definition) {
      throw new DomainError(
        "RUN.NOTHING_TO_RERUN",
        "this run has no jobs (its definition never froze); retry the run instead",
      );
    }
    const jobs = await tx.$queryRaw<ParentJob[]>`
      SELECT id, job_index, name, needs, outcome, pool, reused_from_run_id, reused_from_job_id
      FROM job_run WHERE run_id = ${parent.id}::uuid ORDER BY job_index`;
    const plan = planRerun(
      parent.id,
      jobs.map((j) => ({
        jobIndex: j.job_index,
        needs: j.needs,
        outcome: j.outcome,
        jobId: j.id,
        reusedFrom:
          j.reused_from_run_id && j.reused_from_job_id
            ? { runId: j.reused_from_run_id, jobId: j.reused_from_job_id }
            : null,
      })),
    );
    const trust = computeTrustClass({ kind: "retry", parentTrustClass: parent.trust_class });
    const created = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, actor, actor_user_id, ref, head_ref, commit_sha, workflow_path,
                                workflow_hash, definition, inputs, parent_run_id)
      VALUES (${parent.org_id}::uuid, ${parent.repo_id}::uuid, 'running', ${trust}, 'rerun_failed', ${input.caller.name},
              ${input.caller.userId ?? null}::uuid, ${parent.ref}, ${parent.head_ref}, ${parent.commit_sha}, ${parent.workflow_path}, ${parent.workflow_hash},
              ${JSON.stringify(parent.definition)}::jsonb, ${JSON.stringify(parent.inputs)}::jsonb, ${parent.id}::uuid)
      RETURNING id`;
    const id = created[0]?.id;
    if (!id) throw new Error("run insert returned nothing");
    await recordTransition(tx, {
      orgId: parent.org_id,
      runId: id,
      entity: "run",
      from: null,
      to: "running",
      reason: "rerun_of",
      data: { parent_run_id: parent.id, pinned: plan.pinned.length, rerun: plan.rerun.length },
    });
    const pinned = new Map(plan.pinned.map((p) => [p.jobIndex, p.from]));
    await createJobs(
      tx,
      { id, orgId: parent.org_id, trigger: "rerun_failed" },
      parent.definition,
      jobs[0]?.pool,
      pinned,
    );
    const nameOf = new Map(jobs.map((j) => [j.job_index, j.name]));
    return {
      runId: id,
      parentRunId: parent.id,
      pinned: plan.pinned.map((p) => ({
        jobIndex: p.jobIndex,
        name: nameOf.get(p.jobIndex) ?? "",
        reusedFrom: p.from,
      })),
      rerun: plan.rerun.map((i) => ({ jobIndex: i, name: nameOf.get(i) ?? "" })),
    };
  });
}
