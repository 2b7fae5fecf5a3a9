import { withTx, type Db } from "@kiln/db";
import { approvalIneligibility, DomainError, type ApprovalDecision } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { requireOperator, type EnvActor, type EnvDeps } from "./env-actor.ts";
import { loadEnvironment } from "./environment-store.ts";
import { gatherArtifactFacts } from "./gather-facts.ts";
import { decideAndRecord, policyAndFacts } from "./promotion-decision.ts";
import { loadPromotionSubject, requirePending } from "./promotion-subject.ts";
import { getPromotion, type PromotionView } from "./promotion-view.ts";

/**
 * A member approves or rejects a pending promotion (POST /v1/promotions/{id}/approvals). Refused
 * before anything is written when the member may not approve it: separation of duties (the
 * requester, the change's author), not a named approver or of the required role. Recorded, then
 * the promotion is decided again in the same transaction: the last approval needed moves the
 * pointer, a rejection ends it.
 */
export async function reviewPromotion(
  db: Db,
  deps: EnvDeps,
  actor: EnvActor,
  input: { promotionId: string; decision: ApprovalDecision; comment?: string | null },
): Promise<PromotionView> {
  requireOperator(actor, "approve promotions");
  const { userId, login } = actor;
  if (!userId || !login)
    throw new DomainError(
      "APPROVAL.MEMBER_REQUIRED",
      "approvals are a member's: sign in, or use a personal token (token create --member)",
    );
  if (input.comment && input.comment.length > 2000)
    throw new DomainError("REQUEST.INVALID", "comment: at most 2000 characters");
  const first = await loadPromotionSubject(db, actor.orgId, input.promotionId);
  requirePending(first);
  const env0 = await loadEnvironment(db, actor.orgId, first.environmentId);
  const facts = await gatherArtifactFacts(db, deps.gateTimeoutMs, first.artifact, env0.after_id);
  await withTx(db, "review-promotion", async (tx) => {
    // Environment first, then promotion: the same order as every other decision (no deadlock).
    const env = await loadEnvironment(tx, actor.orgId, first.environmentId, { lock: true });
    const p = await loadPromotionSubject(tx, actor.orgId, input.promotionId, { lock: true });
    requirePending(p);
    const { policy, facts: full } = await policyAndFacts(tx, deps, env, p, facts);
    const gate = policy?.gates.approvals;
    if (!gate) throw new DomainError("APPROVAL.NOT_ELIGIBLE", `${env.name}'s policy asks for no approvals`);
    const why = approvalIneligibility(full, gate, { userId, login, role: actor.role });
    if (why) throw new DomainError(why.code, why.message);
    const inserted = await tx.$executeRaw`
      INSERT INTO promotion_approval (promotion_id, org_id, user_id, decision, comment, actor)
      VALUES (${p.id}::uuid, ${actor.orgId}::uuid, ${userId}::uuid, ${input.decision}, ${input.comment ?? null}, ${actor.actor})
      ON CONFLICT (promotion_id, user_id) DO NOTHING`;
    if (inserted !== 1) throw new DomainError("APPROVAL.DUPLICATE", "you have already decided on this promotion");
    await recordAuditEvent(tx, {
      orgId: actor.orgId,
      kind: input.decision === "approve" ? "promotion.approved" : "promotion.rejected",
      actor: actor.actor,
      subject: p.id,
      data: { promotionId: p.id, environmentId: env.id, member: login, comment: input.comment ?? null },
    });
    await decideAndRecord(tx, deps, {
      actor,
      env,
      promotion: p,
      facts,
      reason: "",
      trigger: input.decision === "approve" ? "approved" : "rejected",
    });
  });
  return getPromotion(db, actor.orgId, input.promotionId);
}
