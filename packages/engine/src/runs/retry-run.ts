import { withTx, type Db } from "@kiln/db";
import {
  canTrigger,
  computeTrustClass,
  DEPLOY_TRIGGER,
  DomainError,
  type TrustClass,
  type WorkflowDefinition,
} from "@kiln/domain";
import { recordTransition } from "../shared/journal.ts";
import type { Caller } from "./admit-manual.ts";
import { createJobs } from "./freeze-run.ts";

/**
 * A retry is a new run with the same pinned definition (commit, workflow hash, parsed jobs, inputs)
 * and a parent link. Nothing is re-read from git, and the trust class is inherited, never raised.
 */
export async function retryRun(db: Db, input: { caller: Caller; runId: string }): Promise<{ runId: string }> {
  if (!canTrigger(input.caller.role))
    throw new DomainError("AUTH.FORBIDDEN", `role ${input.caller.role} cannot retry runs`);
  return withTx(db, "retry-run", async (tx) => {
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
        outcome: string | null;
        cause: string | null;
        cause_message: string | null;
      }[]
    >`SELECT id, org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, workflow_hash, definition, inputs, ref, head_ref, outcome, cause, cause_message
      FROM workflow_run WHERE id = ${input.runId}::uuid AND org_id = ${input.caller.orgId}::uuid`;
    const parent = rows[0];
    if (!parent) throw new DomainError("RUN.NOT_FOUND", "run not found");
    // A deploy run is started only by a pointer move, under the environment's lock (ADR 0033):
    // retrying it by hand would deploy outside the lock. Promote (or roll back) again instead.
    if (parent.trigger === DEPLOY_TRIGGER)
      throw new DomainError(
        "RUN.ILLEGAL_TRANSITION",
        "a deploy run cannot be retried; promote or roll back the environment instead",
      );
    if (parent.status !== "completed") throw new DomainError("RUN.NOT_FINISHED", "only a finished run can be retried");
    const repo = await tx.$queryRaw<{ disconnected: boolean }[]>`
      SELECT disconnected_at IS NOT NULL AS disconnected FROM repo WHERE id = ${parent.repo_id}::uuid`;
    if (repo[0]?.disconnected)
      throw new DomainError("REPO.DISCONNECTED", "this run's repository is disconnected; connect it again to retry");
    const trust = computeTrustClass({ kind: "retry", parentTrustClass: parent.trust_class });
    const frozen = parent.definition !== null;
    const created = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, outcome, cause, cause_message, trust_class, trigger, actor, actor_user_id, ref, head_ref, commit_sha,
                                workflow_path, workflow_hash, definition, inputs, parent_run_id, started_at, finished_at)
      VALUES (${parent.org_id}::uuid, ${parent.repo_id}::uuid, ${frozen ? "running" : "completed"},
              ${frozen ? null : parent.outcome}, ${frozen ? null : parent.cause}, ${frozen ? null : parent.cause_message},
              ${trust}, 'retry', ${input.caller.name}, ${input.caller.userId ?? null}::uuid, ${parent.ref}, ${parent.head_ref}, ${parent.commit_sha}, ${parent.workflow_path}, ${parent.workflow_hash},
              ${frozen ? JSON.stringify(parent.definition) : null}::jsonb, ${JSON.stringify(parent.inputs)}::jsonb, ${parent.id}::uuid,
              NULL, ${frozen ? null : new Date()}::timestamptz)
      RETURNING id`;
    const id = created[0]?.id;
    if (!id) throw new Error("run insert returned nothing");
    await recordTransition(tx, {
      orgId: parent.org_id,
      runId: id,
      entity: "run",
      from: null,
      to: frozen ? "running" : "completed",
      reason: "retry_of",
      data: { parent_run_id: parent.id },
    });
    // A parent whose definition never froze (invalid file) gives the same verdict again: the
    // pinned bytes did not change.
    if (frozen && parent.definition) await createJobs(tx, { id, orgId: parent.org_id }, parent.definition);
    return { runId: id };
  });
}
