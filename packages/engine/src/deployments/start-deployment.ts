// The deployer (issue 18, ADR 0033): consumes `environment.pointer_moved` and starts the
// environment's deploy run for exactly that move. Idempotent by (environment, pointer_seq): a
// second delivery finds the deployment row and changes nothing. While another deployment holds the
// lock, this one waits (it is not refused: the pointer already moved under the gates); when the lock
// is released the newest waiting deployment starts and older waiting ones are superseded.
import { randomUUID } from "node:crypto";
import { withTx, type Db } from "@kiln/db";
import type { TrustClass } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { recordTransition } from "../shared/journal.ts";
import { heldLock, launchDeployment, takeDeployLockKey, type DeploymentFacts } from "./launch-deployment.ts";

export type StartDeploymentResult =
  | { kind: "started"; deploymentId: string; runId: string }
  | { kind: "waiting"; deploymentId: string; heldByRunId: string }
  | { kind: "superseded"; deploymentId: string }
  | { kind: "exists"; deploymentId: string; state: string }
  /** The environment has no deploy workflow: the pointer move is the whole promotion. */
  | { kind: "no_deploy_workflow" }
  | { kind: "no_such_move" };

interface MoveRow {
  org_id: string;
  repo_id: string;
  environment_id: string;
  environment: string;
  current_seq: bigint;
  promotion_id: string;
  to_generation_id: string;
  to_digest: string;
  actor: string;
  workflow_path: string | null;
  commit_sha: string;
  ref: string | null;
  trust_class: TrustClass;
}

export async function startDeployment(
  db: Db,
  input: { environmentId: string; pointerSeq: bigint },
): Promise<StartDeploymentResult> {
  return withTx(db, "start-deployment", async (tx) => {
    await takeDeployLockKey(tx, input.environmentId);
    const moves = await tx.$queryRaw<MoveRow[]>`
      SELECT m.org_id, e.repo_id, e.id AS environment_id, e.name AS environment, e.pointer_seq AS current_seq,
             m.promotion_id, m.to_generation_id, m.to_digest, m.actor, c.workflow_path,
             sr.commit_sha, sr.ref, sr.trust_class
      FROM environment_pointer_move m
      JOIN environment e ON e.id = m.environment_id AND e.org_id = m.org_id
      JOIN artifact_generation g ON g.id = m.to_generation_id
      JOIN workflow_run sr ON sr.id = g.run_id AND sr.org_id = m.org_id
      LEFT JOIN environment_deploy_config c ON c.environment_id = e.id
      WHERE m.environment_id = ${input.environmentId}::uuid AND m.pointer_seq = ${input.pointerSeq}`;
    const m = moves[0];
    if (!m) return { kind: "no_such_move" as const };
    const existing = await tx.$queryRaw<{ id: string; state: string }[]>`
      SELECT id, state FROM deployment WHERE environment_id = ${m.environment_id}::uuid AND pointer_seq = ${input.pointerSeq}`;
    if (existing[0]) return { kind: "exists" as const, deploymentId: existing[0].id, state: existing[0].state };
    if (m.workflow_path === null) return { kind: "no_deploy_workflow" as const };
    const f: DeploymentFacts = {
      deploymentId: randomUUID(),
      orgId: m.org_id,
      repoId: m.repo_id,
      environmentId: m.environment_id,
      environment: m.environment,
      promotionId: m.promotion_id,
      pointerSeq: input.pointerSeq,
      generationId: m.to_generation_id,
      digest: m.to_digest,
      commitSha: m.commit_sha,
      ref: m.ref,
      workflowPath: m.workflow_path,
      sourceTrustClass: m.trust_class,
      actor: m.actor,
    };
    // A later move was made before this message arrived: its own message deploys the newer digest.
    if (m.current_seq > input.pointerSeq) {
      await insertIdle(tx, f, "superseded");
      return { kind: "superseded" as const, deploymentId: f.deploymentId };
    }
    await supersedeOlderWaiting(tx, f.orgId, f.environmentId, input.pointerSeq);
    const held = await heldLock(tx, f.environmentId);
    if (held) {
      await insertIdle(tx, f, "waiting", held.run_id);
      return { kind: "waiting" as const, deploymentId: f.deploymentId, heldByRunId: held.run_id };
    }
    const runId = await launchDeployment(tx, f, false);
    return { kind: "started" as const, deploymentId: f.deploymentId, runId };
  });
}

/** A deployment that does not start now: waiting for the lock, or already superseded. */
async function insertIdle(
  tx: Parameters<typeof launchDeployment>[0],
  f: DeploymentFacts,
  state: "waiting" | "superseded",
  heldByRunId?: string,
): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO deployment (id, org_id, repo_id, environment_id, promotion_id, pointer_seq, generation_id, digest,
                            commit_sha, workflow_path, state, actor, finished_at)
    VALUES (${f.deploymentId}::uuid, ${f.orgId}::uuid, ${f.repoId}::uuid, ${f.environmentId}::uuid, ${f.promotionId}::uuid,
            ${f.pointerSeq}, ${f.generationId}::uuid, ${f.digest}, ${f.commitSha}, ${f.workflowPath}, ${state}, ${f.actor},
            CASE WHEN ${state} = 'superseded' THEN now() ELSE NULL END)`;
  const facts = {
    deployment_id: f.deploymentId,
    environment_id: f.environmentId,
    environment: f.environment,
    promotion_id: f.promotionId,
    pointer_seq: f.pointerSeq.toString(),
    digest: f.digest,
    ...(heldByRunId ? { held_by_run_id: heldByRunId } : {}),
  };
  await recordTransition(tx, {
    orgId: f.orgId,
    entity: "deployment",
    from: null,
    to: state,
    reason: state === "waiting" ? "lock_held" : "pointer_moved_again",
    data: facts,
  });
  await recordAuditEvent(tx, {
    orgId: f.orgId,
    kind: state === "waiting" ? "deployment.waiting" : "deployment.superseded",
    actor: "system:deployer",
    subject: f.environmentId,
    data: facts,
  });
}

/** Older waiting deployments of the environment: the pointer has moved past them. */
export async function supersedeOlderWaiting(
  tx: Parameters<typeof launchDeployment>[0],
  orgId: string,
  environmentId: string,
  belowSeq: bigint,
): Promise<void> {
  const rows = await tx.$queryRaw<{ id: string; pointer_seq: bigint }[]>`
    UPDATE deployment SET state = 'superseded', finished_at = now()
    WHERE environment_id = ${environmentId}::uuid AND state = 'waiting' AND pointer_seq < ${belowSeq}
    RETURNING id, pointer_seq`;
  for (const r of rows) {
    const data = { deployment_id: r.id, environment_id: environmentId, pointer_seq: r.pointer_seq.toString() };
    await recordTransition(tx, {
      orgId,
      entity: "deployment",
      from: "waiting",
      to: "superseded",
      reason: "pointer_moved_again",
      data,
    });
    await recordAuditEvent(tx, {
      orgId,
      kind: "deployment.superseded",
      actor: "system:deployer",
      subject: environmentId,
      data,
    });
  }
}
