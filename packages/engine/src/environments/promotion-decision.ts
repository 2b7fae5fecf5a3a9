import type { Tx } from "@kiln/db";
import {
  decide,
  known,
  type ApprovalFact,
  type Decision,
  type GateKind,
  type GatePolicy,
  type PromotionFacts,
  type PromotionKind,
  type PromotionState,
  type Verdict,
} from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { recordTransition } from "../shared/journal.ts";
import type { EnvActor, EnvDeps } from "./env-actor.ts";
import type { EnvRow } from "./environment-store.ts";
import type { ArtifactFacts } from "./gather-facts.ts";
import { movePointer } from "./move-pointer.ts";
import type { ResolvedArtifact } from "./resolve-artifact.ts";

// The decision transaction every path shares (request, approval, override, rollback): under the
// environment's row lock (so two promotions to one environment serialise), the policy version in
// force from the warm cache, the approvals as committed, decide(), then the promotion row, the
// audit record, the ordered event and, on allow, the pointer move: all in one commit.

export interface PromotionSubject {
  id: string;
  kind: PromotionKind;
  requesterUserId: string | null;
  requesterLogin: string | null;
  artifact: ResolvedArtifact;
  /** null for a promotion being created by this transaction. */
  state: PromotionState | null;
  version: number;
}

export interface DecisionOutcome {
  decision: Decision;
  state: PromotionState;
  policy: GatePolicy | null;
}

const stateFor = (d: Decision): PromotionState => {
  if (d.verdict === "allow") return "promoted";
  if (d.verdict === "override_required") return "pending";
  return d.reasons.some((r) => r.code === "APPROVALS.REJECTED") ? "rejected" : "denied";
};

async function approvalsOf(tx: Tx, promotionId: string): Promise<ApprovalFact[]> {
  // A member removed since their approval no longer counts (no membership row, no role).
  return tx.$queryRaw<ApprovalFact[]>`
    SELECT a.user_id AS "userId", u.login, m.role, a.decision
    FROM promotion_approval a JOIN app_user u ON u.id = a.user_id
    JOIN membership m ON m.org_id = a.org_id AND m.user_id = a.user_id
    WHERE a.promotion_id = ${promotionId}::uuid ORDER BY a.created_at, a.id`;
}

export async function policyAndFacts(
  tx: Tx,
  deps: EnvDeps,
  env: EnvRow,
  p: PromotionSubject,
  facts: ArtifactFacts,
): Promise<{ policy: GatePolicy | null; facts: PromotionFacts }> {
  const policy = await deps.policies.get(tx, env.id, env.policy_version);
  return {
    policy,
    facts: {
      kind: p.kind,
      environment: { name: env.name, production: env.production },
      requester: { userId: p.requesterUserId, login: p.requesterLogin },
      changeAuthors: facts.changeAuthors,
      artifact: { generationId: p.artifact.generationId, name: p.artifact.name, digest: p.artifact.digest },
      builderPrefix: deps.builderPrefix,
      run: facts.run,
      attestation: facts.attestation,
      quarantined: facts.quarantined,
      previous: facts.previous,
      approvals: p.state === null ? known([]) : known(await approvalsOf(tx, p.id)),
    },
  };
}

/** Decides and records; the caller holds the environment's row lock (loadEnvironment lock: true). */
export async function decideAndRecord(
  tx: Tx,
  deps: EnvDeps,
  ctx: {
    actor: EnvActor;
    env: EnvRow;
    promotion: PromotionSubject;
    facts: ArtifactFacts;
    reason: string;
    trigger: string;
    overridden?: readonly GateKind[];
    overrideId?: string | null;
  },
): Promise<DecisionOutcome> {
  const { env, promotion: p, actor } = ctx;
  const { policy, facts } = await policyAndFacts(tx, deps, env, p, ctx.facts);
  const decision = decide(policy, facts, new Date(), { overridden: ctx.overridden ?? [] });
  const state = stateFor(decision);
  const reasons = JSON.stringify(decision.reasons);
  const moved = state === "promoted";
  if (p.state === null) {
    await tx.$executeRaw`
      INSERT INTO promotion (id, org_id, repo_id, environment_id, kind, requester_user_id, requested_by, reason,
        generation_id, digest, attestation_id, run_id, job_id, artifact_name, from_digest, state, verdict, reasons,
        fail_mode, policy_version, decided_at, promoted_at)
      VALUES (${p.id}::uuid, ${actor.orgId}::uuid, ${env.repo_id}::uuid, ${env.id}::uuid, ${p.kind},
        ${p.requesterUserId}::uuid, ${actor.actor}, ${ctx.reason}, ${p.artifact.generationId}::uuid, ${p.artifact.digest},
        ${p.artifact.attestationId}::uuid, ${p.artifact.runId}::uuid, ${p.artifact.jobId}::uuid, ${p.artifact.name},
        ${env.current_digest}, ${state}, ${decision.verdict}, ${reasons}::jsonb, ${decision.failMode},
        ${env.policy_version}, clock_timestamp(), ${moved ? new Date() : null})`;
  } else {
    const n = await tx.$executeRaw`
      UPDATE promotion SET state = ${state}, verdict = ${decision.verdict}, reasons = ${reasons}::jsonb,
        fail_mode = ${decision.failMode}, policy_version = ${env.policy_version}, decided_at = clock_timestamp(),
        promoted_at = ${moved ? new Date() : null}, override_id = COALESCE(${ctx.overrideId ?? null}::uuid, override_id),
        version = version + 1, updated_at = clock_timestamp()
      WHERE id = ${p.id}::uuid AND org_id = ${actor.orgId}::uuid AND state = 'pending' AND version = ${p.version}`;
    if (n !== 1) throw new Error(`promotion ${p.id} changed under its environment's lock`);
  }
  const data = {
    promotionId: p.id,
    environmentId: env.id,
    environment: env.name,
    kind: p.kind,
    digest: p.artifact.digest,
    artifactId: p.artifact.generationId,
    verdict: decision.verdict as Verdict,
    reasons: decision.reasons,
    failMode: decision.failMode,
    policyVersion: env.policy_version,
    trigger: ctx.trigger,
    overridden: ctx.overridden ?? [],
  };
  await recordTransition(tx, {
    orgId: actor.orgId,
    entity: "promotion",
    from: p.state,
    to: state,
    reason: ctx.trigger,
    data,
  });
  await recordAuditEvent(tx, {
    orgId: actor.orgId,
    kind: "promotion.decided",
    actor: actor.actor,
    subject: p.id,
    data,
  });
  if (moved)
    await movePointer(tx, {
      orgId: actor.orgId,
      environmentId: env.id,
      promotionId: p.id,
      kind: p.kind,
      generationId: p.artifact.generationId,
      digest: p.artifact.digest,
      attestationId: p.artifact.attestationId,
      expectedSeq: env.pointer_seq,
      actor: actor.actor,
    });
  return { decision, state, policy };
}
