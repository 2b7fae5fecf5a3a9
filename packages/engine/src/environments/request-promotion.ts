import { randomUUID } from "node:crypto";
import { withTx, type Db } from "@kiln/db";
import { DomainError, requesterMustBeMember, type PromotionKind } from "@kiln/domain";
import { requireOperator, UUID, type EnvActor, type EnvDeps } from "./env-actor.ts";
import { loadEnvironment } from "./environment-store.ts";
import { gatherArtifactFacts } from "./gather-facts.ts";
import { decideAndRecord } from "./promotion-decision.ts";
import { getPromotion, type PromotionView } from "./promotion-view.ts";
import { resolveArtifact, type ArtifactRef } from "./resolve-artifact.ts";

// A promotion request (POST /v1/environments/{id}/promotions, `kiln promote`) and a rollback
// (POST /v1/environments/{id}/rollbacks): both are decided by the gates at once; on allow the
// pointer moves in the same transaction.

const checkReason = (reason: string) => {
  const r = reason.trim();
  if (r.length === 0 || r.length > 2000) throw new DomainError("REQUEST.INVALID", "reason: 1 to 2000 characters");
  return r;
};

async function create(
  db: Db,
  deps: EnvDeps,
  actor: EnvActor,
  input: { environmentId: string; artifact: ArtifactRef; reason: string; kind: PromotionKind },
): Promise<PromotionView> {
  requireOperator(actor, "request promotions");
  const reason = checkReason(input.reason);
  const env = await loadEnvironment(db, actor.orgId, input.environmentId);
  const artifact = await resolveArtifact(db, actor.orgId, env.repo_id, input.artifact);
  if (input.kind === "rollback") {
    // Only a digest this environment has held, and not the one it holds now.
    const held = await db.$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM environment_pointer_move
      WHERE environment_id = ${env.id}::uuid AND to_generation_id = ${artifact.generationId}::uuid`;
    if (Number(held[0]?.n ?? 0) === 0 || env.current_generation_id === artifact.generationId)
      throw new DomainError(
        "ROLLBACK.NOT_A_PREVIOUS_DIGEST",
        `${env.name} ${env.current_generation_id === artifact.generationId ? "already runs" : "never ran"} that artifact`,
      );
  }
  const facts = await gatherArtifactFacts(db, deps.gateTimeoutMs, artifact, env.after_id);
  const id = randomUUID();
  await withTx(db, input.kind === "rollback" ? "request-rollback" : "request-promotion", async (tx) => {
    const locked = await loadEnvironment(tx, actor.orgId, env.id, { lock: true });
    // Separation of duties is by person (issue 28): an org token's request has no person to keep
    // from approving it, so where it applies the requester must be a member.
    if (
      !actor.userId &&
      requesterMustBeMember(await deps.policies.get(tx, locked.id, locked.policy_version), input.kind)
    )
      throw new DomainError(
        "APPROVAL.MEMBER_REQUIRED",
        `${locked.name} needs approvals with separation of duties: request as a member (sign in, a personal token from \`token create --member\`, or the CLI's --as)`,
      );
    await decideAndRecord(tx, deps, {
      actor,
      env: locked,
      promotion: {
        id,
        kind: input.kind,
        requesterUserId: actor.userId,
        requesterLogin: actor.login,
        artifact,
        state: null,
        version: 0,
      },
      facts,
      reason,
      trigger: input.kind === "rollback" ? "rollback_requested" : "requested",
    });
  });
  return getPromotion(db, actor.orgId, id);
}

export function requestPromotion(
  db: Db,
  deps: EnvDeps,
  actor: EnvActor,
  input: { environmentId: string; artifact: ArtifactRef; reason: string },
): Promise<PromotionView> {
  return create(db, deps, actor, { ...input, kind: "promote" });
}

export async function requestRollback(
  db: Db,
  deps: EnvDeps,
  actor: EnvActor,
  input: { environmentId: string; toArtifactId: string; reason: string },
): Promise<PromotionView> {
  if (!UUID.test(input.toArtifactId)) throw new DomainError("ROLLBACK.NOT_A_PREVIOUS_DIGEST", "not an artifact id");
  return create(db, deps, actor, {
    environmentId: input.environmentId,
    artifact: { artifactId: input.toArtifactId },
    reason: input.reason,
    kind: "rollback",
  });
}
