// Starting one deployment under the environment's lock (issue 18, ADR 0033). Called inside a
// transaction that holds the environment's deploy lock key (deployLockKey) and found the lock free:
// the deploy run, the lock row, the promotion's state, the events, the audit records and the freeze
// request commit together or not at all.
import type { Tx } from "@kiln/db";
import { computeTrustClass, DEPLOY_TRIGGER, type TrustClass } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { enqueueOutbox, recordTransition } from "../shared/journal.ts";

/** Serialises every start, wait and release of one environment's deployments (transaction-scoped). */
export async function takeDeployLockKey(tx: Tx, environmentId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('kiln-deploy:' || ${environmentId}))`;
}

export interface DeploymentFacts {
  deploymentId: string;
  orgId: string;
  repoId: string;
  environmentId: string;
  environment: string;
  promotionId: string;
  pointerSeq: bigint;
  generationId: string;
  digest: string;
  commitSha: string;
  ref: string | null;
  workflowPath: string;
  sourceTrustClass: TrustClass;
  actor: string;
}

/** The held lock of an environment, if any (read under the lock key, so it cannot change meanwhile). */
export async function heldLock(
  tx: Tx,
  environmentId: string,
): Promise<{ id: string; run_id: string; deployment_id: string } | null> {
  const rows = await tx.$queryRaw<{ id: string; run_id: string; deployment_id: string }[]>`
    SELECT id, run_id, deployment_id FROM deployment_lock
    WHERE environment_id = ${environmentId}::uuid AND released_at IS NULL FOR UPDATE`;
  return rows[0] ?? null;
}

/** Creates the deploy run and takes the lock for it; the deployment row exists (waiting) or not yet. */
export async function launchDeployment(tx: Tx, f: DeploymentFacts, existing: boolean): Promise<string> {
  const trustClass = computeTrustClass({ kind: "deploy", sourceTrustClass: f.sourceTrustClass });
  const runs = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, actor, ref, commit_sha, workflow_path, inputs)
    VALUES (${f.orgId}::uuid, ${f.repoId}::uuid, 'pending', ${trustClass}, ${DEPLOY_TRIGGER}, ${f.actor}, ${f.ref},
            ${f.commitSha}, ${f.workflowPath}, '{}'::jsonb)
    RETURNING id`;
  const runId = runs[0]?.id;
  if (!runId) throw new Error("deploy run insert returned nothing");
  if (existing) {
    const n = await tx.$executeRaw`
      UPDATE deployment SET state = 'running', run_id = ${runId}::uuid, started_at = now()
      WHERE id = ${f.deploymentId}::uuid AND state = 'waiting'`;
    if (n !== 1) throw new Error("waiting deployment changed under the deploy lock key");
  } else {
    await tx.$executeRaw`
      INSERT INTO deployment (id, org_id, repo_id, environment_id, promotion_id, pointer_seq, generation_id, digest,
                              commit_sha, workflow_path, run_id, state, actor, started_at)
      VALUES (${f.deploymentId}::uuid, ${f.orgId}::uuid, ${f.repoId}::uuid, ${f.environmentId}::uuid, ${f.promotionId}::uuid,
              ${f.pointerSeq}, ${f.generationId}::uuid, ${f.digest}, ${f.commitSha}, ${f.workflowPath}, ${runId}::uuid,
              'running', ${f.actor}, now())`;
  }
  // The partial unique index on held locks is the mutual exclusion; the lock key makes it a
  // decision rather than a race, so a conflict here is a bug, not a second winner.
  const locks = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO deployment_lock (org_id, environment_id, deployment_id, run_id)
    VALUES (${f.orgId}::uuid, ${f.environmentId}::uuid, ${f.deploymentId}::uuid, ${runId}::uuid) RETURNING id`;
  const lockId = locks[0]?.id;
  const facts = {
    deployment_id: f.deploymentId,
    environment_id: f.environmentId,
    environment: f.environment,
    promotion_id: f.promotionId,
    pointer_seq: f.pointerSeq.toString(),
    generation_id: f.generationId,
    digest: f.digest,
    commit_sha: f.commitSha,
    workflow_path: f.workflowPath,
    run_id: runId,
    lock_id: lockId,
  };
  await recordTransition(tx, {
    orgId: f.orgId,
    runId,
    entity: "run",
    from: null,
    to: "pending",
    reason: "accepted",
    data: { trigger: DEPLOY_TRIGGER, trust_class: trustClass, ...facts },
  });
  await recordTransition(tx, {
    orgId: f.orgId,
    runId,
    entity: "deployment",
    from: existing ? "waiting" : null,
    to: "running",
    reason: "lock_acquired",
    data: facts,
  });
  await recordAuditEvent(tx, {
    orgId: f.orgId,
    kind: "deployment.lock_acquired",
    actor: "system:deployer",
    subject: f.environmentId,
    data: facts,
  });
  await recordAuditEvent(tx, {
    orgId: f.orgId,
    kind: "deployment.started",
    actor: f.actor,
    subject: f.environmentId,
    data: facts,
  });
  const moved = await tx.$executeRaw`
    UPDATE promotion SET state = 'deploying', version = version + 1, updated_at = now()
    WHERE id = ${f.promotionId}::uuid AND state = 'promoted'`;
  if (moved === 1)
    await recordTransition(tx, {
      orgId: f.orgId,
      entity: "promotion",
      from: "promoted",
      to: "deploying",
      reason: "deploy_started",
      data: facts,
    });
  await enqueueOutbox(tx, "run.freeze", { runId }, { dedupeKey: runId });
  return runId;
}
