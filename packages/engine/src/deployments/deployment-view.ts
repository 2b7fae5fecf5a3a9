// What the environment page and GET /v1/environments/{env_id}/deployments show (issue 18): the
// lock's holder and why it is held, and the deployment history. Scoped by org in the query.
import type { DbOrTx } from "@kiln/db";
import { environmentOf, type DeployCaller } from "./environment-target.ts";

export interface LockView {
  lock_id: string;
  deployment_id: string;
  run_id: string;
  job_id: string | null;
  attempt_id: string | null;
  epoch: number | null;
  acquired_at: string;
  release_after: string | null;
  manual_release: boolean;
  /** held_running | kill_bound_pending | manual_release_required */
  state: "held_running" | "kill_bound_pending" | "manual_release_required";
  why: string;
}

export interface DeploymentView {
  id: string;
  state: string;
  kind: string;
  promotion_id: string;
  pointer_seq: string;
  generation_id: string;
  digest: string;
  commit_sha: string;
  run_id: string | null;
  run_outcome: string | null;
  actor: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

function why(l: {
  run_id: string;
  release_after: Date | null;
  manual_release: boolean;
}): Pick<LockView, "state" | "why"> {
  if (l.manual_release)
    return {
      state: "manual_release_required",
      why: "the deploy attempt went silent on a host Kiln does not control: nothing can prove it stopped, so an org admin must release the lock",
    };
  if (l.release_after)
    return {
      state: "kill_bound_pending",
      why: `the deploy attempt went silent; Kiln releases the lock at ${l.release_after.toISOString()}, when the host's watchdog has destroyed it (lease TTL + clock-skew bound since its last renewal)`,
    };
  return { state: "held_running", why: `held by deploy run ${l.run_id} until it finishes` };
}

export async function listDeployments(
  db: DbOrTx,
  caller: DeployCaller,
  environmentId: string,
  limit = 50,
): Promise<{ lock: LockView | null; deployments: DeploymentView[] }> {
  const env = await environmentOf(db, caller.orgId, environmentId);
  const locks = await db.$queryRaw<
    {
      id: string;
      deployment_id: string;
      run_id: string;
      job_id: string | null;
      attempt_id: string | null;
      epoch: number | null;
      acquired_at: Date;
      release_after: Date | null;
      manual_release: boolean;
    }[]
  >`
    SELECT id, deployment_id, run_id, job_id, attempt_id, epoch, acquired_at, release_after, manual_release
    FROM deployment_lock WHERE environment_id = ${env.id}::uuid AND org_id = ${caller.orgId}::uuid AND released_at IS NULL`;
  const rows = await db.$queryRaw<
    {
      id: string;
      state: string;
      kind: string;
      promotion_id: string;
      pointer_seq: bigint;
      generation_id: string;
      digest: string;
      commit_sha: string;
      run_id: string | null;
      run_outcome: string | null;
      actor: string;
      created_at: Date;
      started_at: Date | null;
      finished_at: Date | null;
    }[]
  >`
    SELECT d.id, d.state, p.kind, d.promotion_id, d.pointer_seq, d.generation_id, d.digest, d.commit_sha, d.run_id,
           r.outcome AS run_outcome, d.actor, d.created_at, d.started_at, d.finished_at
    FROM deployment d JOIN promotion p ON p.id = d.promotion_id LEFT JOIN workflow_run r ON r.id = d.run_id
    WHERE d.environment_id = ${env.id}::uuid AND d.org_id = ${caller.orgId}::uuid
    ORDER BY d.pointer_seq DESC LIMIT ${limit}`;
  const l = locks[0];
  return {
    lock: l
      ? {
          lock_id: l.id,
          deployment_id: l.deployment_id,
          run_id: l.run_id,
          job_id: l.job_id,
          attempt_id: l.attempt_id,
          epoch: l.epoch,
          acquired_at: l.acquired_at.toISOString(),
          release_after: l.release_after?.toISOString() ?? null,
          manual_release: l.manual_release,
          ...why(l),
        }
      : null,
    deployments: rows.map((r) => ({
      ...r,
      pointer_seq: r.pointer_seq.toString(),
      created_at: r.created_at.toISOString(),
      started_at: r.started_at?.toISOString() ?? null,
      finished_at: r.finished_at?.toISOString() ?? null,
    })),
  };
}
