// The deployment lock's sweeper (issue 18, ADR 0033; seed 003 Q1 and Q7). Run by the reconciler:
// for every held lock, finish the deployment once its deploy run has finished, then release the
// lock only when every attempt is provably dead. Re-checked under the environment's lock key and
// the lock row, so running it twice or on two workers at once changes nothing.
import { withTx, type Db, type Tx } from "@kiln/db";
import { decideLockRelease, deploymentStateOf, DomainError, type LockDecision, type TrustClass } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import type { EngineConfig } from "../config/index.ts";
import { recordTransition } from "../shared/journal.ts";
import { environmentOf, requireAdmin, type DeployCaller } from "./environment-target.ts";
import { heldLock, launchDeployment, takeDeployLockKey } from "./launch-deployment.ts";
import { supersedeOlderWaiting } from "./start-deployment.ts";

interface LockState {
  lock: {
    id: string;
    org_id: string;
    run_id: string;
    deployment_id: string;
    release_after: Date | null;
    manual_release: boolean;
  };
  decision: LockDecision;
}

async function loadLockState(tx: Tx, environmentId: string, cfg: EngineConfig): Promise<LockState | null> {
  const locks = await tx.$queryRaw<LockState["lock"][]>`
    SELECT id, org_id, run_id, deployment_id, release_after, manual_release FROM deployment_lock
    WHERE environment_id = ${environmentId}::uuid AND released_at IS NULL FOR UPDATE`;
  const lock = locks[0];
  if (!lock) return null;
  const run = await tx.$queryRaw<{ status: string; now_ms: number }[]>`
    SELECT status, (extract(epoch FROM now()) * 1000)::float8 AS now_ms FROM workflow_run WHERE id = ${lock.run_id}::uuid FOR SHARE`;
  // The agent's own report of a destroyed sandbox sets stopped_at while the lease is live; the
  // reconciler's fence writes stopped_at = lease_expires_at, which is no proof that anything stopped.
  const attempts = await tx.$queryRaw<
    { status: "running" | "completed"; stopped_by_agent: boolean; lease_ms: number; host_controlled: boolean }[]
  >`
    SELECT a.status, (a.stopped_at IS NOT NULL AND a.stopped_at < a.lease_expires_at) AS stopped_by_agent,
           (extract(epoch FROM a.lease_expires_at) * 1000)::float8 AS lease_ms,
           (t.org_id IS NULL AND p.owner_org_id IS NULL) AS host_controlled
    FROM attempt a
    LEFT JOIN agent_session s ON s.id = a.session_id
    LEFT JOIN agent_token t ON t.id = s.agent_token_id
    LEFT JOIN pool p ON p.name = a.pool
    WHERE a.run_id = ${lock.run_id}::uuid`;
  const decision = decideLockRelease({
    runFinished: run[0]?.status === "completed",
    attempts: attempts.map((a) => ({
      status: a.status,
      stoppedByAgent: a.stopped_by_agent,
      leaseExpiresAtMs: a.lease_ms,
      hostControlled: a.host_controlled ?? false,
    })),
    nowMs: run[0]?.now_ms ?? 0,
    clockSkewBoundMs: cfg.clockSkewBoundMs,
  });
  return { lock, decision };
}

/** One pass over the held locks; returns how many were released. */
export async function settleDeploymentLocks(db: Db, cfg: EngineConfig, limit = 50): Promise<number> {
  const held = await db.$queryRaw<{ environment_id: string }[]>`
    SELECT environment_id FROM deployment_lock WHERE released_at IS NULL ORDER BY acquired_at LIMIT ${limit}`;
  let released = 0;
  for (const h of held) {
    const done = await withTx(db, "settle-deployment-lock", async (tx) => {
      await takeDeployLockKey(tx, h.environment_id);
      const st = await loadLockState(tx, h.environment_id, cfg);
      if (!st) return false;
      await finishDeployment(tx, st.lock);
      const d = st.decision;
      if (d.kind === "hold") return false;
      const facts = {
        lock_id: st.lock.id,
        environment_id: h.environment_id,
        run_id: st.lock.run_id,
        deployment_id: st.lock.deployment_id,
      };
      if (d.kind === "hold_until") {
        if (st.lock.release_after !== null) return false;
        await tx.$executeRaw`UPDATE deployment_lock SET release_after = to_timestamp(${d.atMs / 1000}) WHERE id = ${st.lock.id}::uuid`;
        await lockEvent(tx, st.lock, "held", "kill_bound_pending", {
          ...facts,
          release_after: new Date(d.atMs).toISOString(),
        });
        return false;
      }
      if (d.kind === "manual") {
        if (st.lock.manual_release) return false;
        await tx.$executeRaw`UPDATE deployment_lock SET manual_release = true WHERE id = ${st.lock.id}::uuid`;
        await lockEvent(tx, st.lock, "held", "manual_release_required", { ...facts, why: d.why });
        return false;
      }
      await releaseLock(tx, st.lock, d.reason, "system:deployer", null);
      await startNextWaiting(tx, h.environment_id);
      return true;
    });
    if (done) released++;
  }
  return released;
}

/**
 * An org admin's release of a lock no proof of death exists for (a host Kiln does not control).
 * Refused while the deploy run is active, and where Kiln will release it itself at the kill bound.
 */
export async function releaseDeploymentLock(
  db: Db,
  cfg: EngineConfig,
  caller: DeployCaller,
  environmentId: string,
  reason: string,
): Promise<{ released: true; lock_id: string }> {
  requireAdmin(caller, "releasing a deployment lock");
  if (reason.trim().length === 0 || reason.length > 2000)
    throw new DomainError("REQUEST.INVALID", "a reason (1-2000 characters) is required");
  return withTx(db, "release-deployment-lock", async (tx) => {
    const env = await environmentOf(tx, caller.orgId, environmentId);
    await takeDeployLockKey(tx, env.id);
    const st = await loadLockState(tx, env.id, cfg);
    if (!st) throw new DomainError("DEPLOY.LOCK_NOT_HELD", "this environment's deployment lock is not held");
    if (st.decision.kind === "hold")
      throw new DomainError(
        "DEPLOY.LOCK_RELEASE_REFUSED",
        "the deploy run holding the lock is still active; cancel it first",
      );
    if (st.decision.kind === "hold_until")
      throw new DomainError(
        "DEPLOY.LOCK_RELEASE_REFUSED",
        `Kiln releases this lock itself at ${new Date(st.decision.atMs).toISOString()}, when the host's watchdog has destroyed the old attempt`,
      );
    await finishDeployment(tx, st.lock);
    await releaseLock(tx, st.lock, "manual", caller.actor, reason);
    await startNextWaiting(tx, env.id);
    return { released: true as const, lock_id: st.lock.id };
  });
}

async function lockEvent(
  tx: Tx,
  lock: LockState["lock"],
  to: string,
  reason: string,
  data: Record<string, unknown>,
  actor = "system:deployer",
): Promise<void> {
  await recordTransition(tx, {
    orgId: lock.org_id,
    runId: lock.run_id,
    entity: "deployment",
    from: "held",
    to,
    reason,
    data,
  });
  await recordAuditEvent(tx, {
    orgId: lock.org_id,
    kind: to === "released" ? "deployment.lock_released" : `deployment.lock_${reason}`,
    actor,
    subject: String(data.environment_id),
    data,
  });
}

async function releaseLock(
  tx: Tx,
  lock: LockState["lock"],
  reason: "attempts_stopped" | "kill_bound_elapsed" | "manual",
  actor: string,
  comment: string | null,
): Promise<void> {
  const rows = await tx.$queryRaw<{ environment_id: string }[]>`
    UPDATE deployment_lock SET released_at = now(), release_reason = ${reason}, released_by = ${actor}
    WHERE id = ${lock.id}::uuid AND released_at IS NULL RETURNING environment_id`;
  if (!rows[0]) throw new Error("deployment lock released twice under its key");
  await lockEvent(
    tx,
    lock,
    "released",
    reason,
    {
      lock_id: lock.id,
      environment_id: rows[0].environment_id,
      run_id: lock.run_id,
      deployment_id: lock.deployment_id,
      comment,
    },
    actor,
  );
}

/** The deploy run finished: the deployment and its promotion say how, once. */
async function finishDeployment(tx: Tx, lock: LockState["lock"]): Promise<void> {
  const rows = await tx.$queryRaw<
    { id: string; promotion_id: string; environment_id: string; outcome: string | null }[]
  >`
    UPDATE deployment d SET state = CASE WHEN r.outcome = 'success' THEN 'succeeded' ELSE 'failed' END, finished_at = now()
    FROM workflow_run r
    WHERE d.id = ${lock.deployment_id}::uuid AND d.state = 'running' AND r.id = d.run_id AND r.status = 'completed'
    RETURNING d.id, d.promotion_id, d.environment_id, r.outcome`;
  const d = rows[0];
  if (!d) return;
  const state = deploymentStateOf(d.outcome);
  const data = {
    deployment_id: d.id,
    environment_id: d.environment_id,
    promotion_id: d.promotion_id,
    run_id: lock.run_id,
    outcome: d.outcome,
  };
  await recordTransition(tx, {
    orgId: lock.org_id,
    runId: lock.run_id,
    entity: "deployment",
    from: "running",
    to: state,
    reason: "run_finished",
    data,
  });
  await recordAuditEvent(tx, {
    orgId: lock.org_id,
    kind: "deployment.finished",
    actor: "system:deployer",
    subject: d.environment_id,
    data: { ...data, state },
  });
  const promo = state === "succeeded" ? "deployed" : "deploy_failed";
  const n = await tx.$executeRaw`
    UPDATE promotion SET state = ${promo}, version = version + 1, updated_at = now()
    WHERE id = ${d.promotion_id}::uuid AND state = 'deploying'`;
  if (n === 1)
    await recordTransition(tx, {
      orgId: lock.org_id,
      entity: "promotion",
      from: "deploying",
      to: promo,
      reason: "deploy_finished",
      data,
    });
}

/** After a release: the newest waiting deployment starts if it is still what the pointer names. */
async function startNextWaiting(tx: Tx, environmentId: string): Promise<void> {
  if (await heldLock(tx, environmentId)) return;
  const rows = await tx.$queryRaw<
    {
      id: string;
      org_id: string;
      repo_id: string;
      environment: string;
      current_seq: bigint;
      promotion_id: string;
      pointer_seq: bigint;
      generation_id: string;
      digest: string;
      commit_sha: string;
      workflow_path: string;
      actor: string;
      ref: string | null;
      trust_class: TrustClass;
    }[]
  >`
    SELECT d.id, d.org_id, d.repo_id, e.name AS environment, e.pointer_seq AS current_seq, d.promotion_id, d.pointer_seq,
           d.generation_id, d.digest, d.commit_sha, d.workflow_path, d.actor, sr.ref, sr.trust_class
    FROM deployment d JOIN environment e ON e.id = d.environment_id
    JOIN artifact_generation g ON g.id = d.generation_id JOIN workflow_run sr ON sr.id = g.run_id
    WHERE d.environment_id = ${environmentId}::uuid AND d.state = 'waiting'
    ORDER BY d.pointer_seq DESC LIMIT 1`;
  const w = rows[0];
  if (!w) return;
  // Older waiting ones are superseded by this one; this one by a move whose message is on its way.
  await supersedeOlderWaiting(
    tx,
    w.org_id,
    environmentId,
    w.current_seq > w.pointer_seq ? w.current_seq : w.pointer_seq,
  );
  if (w.current_seq > w.pointer_seq) return;
  await launchDeployment(
    tx,
    {
      deploymentId: w.id,
      orgId: w.org_id,
      repoId: w.repo_id,
      environmentId,
      environment: w.environment,
      promotionId: w.promotion_id,
      pointerSeq: w.pointer_seq,
      generationId: w.generation_id,
      digest: w.digest,
      commitSha: w.commit_sha,
      ref: w.ref,
      workflowPath: w.workflow_path,
      sourceTrustClass: w.trust_class,
      actor: w.actor,
    },
    true,
  );
}
