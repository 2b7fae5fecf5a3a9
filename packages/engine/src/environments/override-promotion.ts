import { withTx, type Db, type Tx } from "@kiln/db";
import { decide, DomainError, overridableFailures, type GateKind } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { requireAdmin, type EnvActor, type EnvDeps } from "./env-actor.ts";
import { loadEnvironment, type EnvRow } from "./environment-store.ts";
import { gatherArtifactFacts, type ArtifactFacts } from "./gather-facts.ts";
import { decideAndRecord, policyAndFacts, type PromotionSubject } from "./promotion-decision.ts";
import { loadPromotionSubject, requirePending } from "./promotion-subject.ts";
import { getPromotion, type PromotionView } from "./promotion-view.ts";

// Break glass (POST /v1/promotions/{id}/overrides, seed 002): an org admin sets aside the
// overridable gates a pending promotion fails, with a reason and an expiry, recorded with the
// gates it overrode. When the policy requires a second approver, the first admin's override waits
// for another admin's call on the same endpoint, which must come before the expiry (a call after it
// records a new override, which waits for its own second). Provenance,
// a rejection and an unavailable gate are never overridable (decide() answers deny for them).

export const MAX_OVERRIDE_SECONDS = 7 * 86_400;

interface PendingOverride {
  id: string;
  actor_user_id: string | null;
  gates: GateKind[];
}

export async function overridePromotion(
  db: Db,
  deps: EnvDeps,
  actor: EnvActor,
  input: { promotionId: string; reason: string; expiresAt: Date },
): Promise<PromotionView> {
  requireAdmin(actor, "override gates");
  if (!actor.userId)
    throw new DomainError("APPROVAL.MEMBER_REQUIRED", "an override is a member's: sign in or use a personal token");
  const reason = input.reason.trim();
  if (reason.length === 0 || reason.length > 2000)
    throw new DomainError("REQUEST.INVALID", "reason: 1 to 2000 characters");
  const now = Date.now();
  const until = input.expiresAt.getTime();
  if (!Number.isFinite(until) || until <= now || until > now + MAX_OVERRIDE_SECONDS * 1000)
    throw new DomainError("OVERRIDE.INVALID_EXPIRY", "expires_at must be in the future and at most 7 days away");
  const first = await loadPromotionSubject(db, actor.orgId, input.promotionId);
  requirePending(first);
  const env0 = await loadEnvironment(db, actor.orgId, first.environmentId);
  const facts = await gatherArtifactFacts(db, deps.gateTimeoutMs, first.artifact, env0.after_id);
  await withTx(db, "override-promotion", async (tx) => {
    const env = await loadEnvironment(tx, actor.orgId, first.environmentId, { lock: true });
    const p = await loadPromotionSubject(tx, actor.orgId, input.promotionId, { lock: true });
    requirePending(p);
    // Only an unexpired override waits for its second key. An expired one is over (issue 28: it
    // used to stay "open" for good, its opener refused as their own second and everyone else told
    // it expired, so break glass was lost for that promotion): this call records a new first key.
    const pending = await tx.$queryRaw<PendingOverride[]>`
      SELECT id, actor_user_id, gates FROM promotion_override
      WHERE promotion_id = ${p.id}::uuid AND state = 'pending' AND expires_at > clock_timestamp()
      ORDER BY created_at DESC LIMIT 1 FOR UPDATE`;
    const open = pending[0];
    if (open && open.actor_user_id !== actor.userId) return second(tx, deps, { actor, env, p, facts, open, reason });
    if (open)
      throw new DomainError(
        "OVERRIDE.SECOND_APPROVER_SAME",
        "the second approver of an override must be another admin",
      );
    return record(tx, deps, { actor, env, p, facts, reason, expiresAt: input.expiresAt });
  });
  return getPromotion(db, actor.orgId, input.promotionId);
}

interface Ctx {
  actor: EnvActor;
  env: EnvRow;
  p: PromotionSubject;
  facts: ArtifactFacts;
  reason: string;
}

async function record(tx: Tx, deps: EnvDeps, c: Ctx & { expiresAt: Date }): Promise<void> {
  const { policy, facts } = await policyAndFacts(tx, deps, c.env, c.p, c.facts);
  if (!policy) throw new DomainError("OVERRIDE.NOT_ALLOWED", "the environment's policy cannot be read");
  const now = decide(policy, facts, new Date());
  if (now.verdict === "deny")
    throw new DomainError(
      "OVERRIDE.NOT_ALLOWED",
      `a gate that cannot be overridden refuses: ${now.reasons.find((r) => r.status === "fail" || r.status === "unavailable")?.code ?? "deny"}`,
    );
  const gates = overridableFailures(now, policy);
  if (gates.length === 0) throw new DomainError("OVERRIDE.NOT_ALLOWED", "no gate is failing: nothing to override");
  const secondRequired = policy.overrides?.second_approver ?? false;
  const rows = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO promotion_override (promotion_id, org_id, actor_user_id, actor, reason, expires_at, gates,
      second_approver_required, state, created_at)
    VALUES (${c.p.id}::uuid, ${c.actor.orgId}::uuid, ${c.actor.userId}::uuid, ${c.actor.actor}, ${c.reason}, ${c.expiresAt},
      ${JSON.stringify(gates)}::jsonb, ${secondRequired}, 'pending', clock_timestamp())
    RETURNING id`;
  const id = rows[0]?.id ?? "";
  const data = {
    overrideId: id,
    promotionId: c.p.id,
    environmentId: c.env.id,
    reason: c.reason,
    expiresAt: c.expiresAt.toISOString(),
    gates,
    secondApproverRequired: secondRequired,
  };
  await recordAuditEvent(tx, {
    orgId: c.actor.orgId,
    kind: "promotion.override_recorded",
    actor: c.actor.actor,
    subject: c.p.id,
    data,
  });
  if (!secondRequired) await apply(tx, deps, c, id, gates);
}

async function second(tx: Tx, deps: EnvDeps, c: Ctx & { open: PendingOverride }): Promise<void> {
  // Break glass is not self-certification: the promotion's requester cannot be its second key.
  if (c.p.requesterUserId !== null && c.p.requesterUserId === c.actor.userId)
    throw new DomainError("OVERRIDE.SECOND_APPROVER_SAME", "the requester of a promotion cannot second its override");
  await tx.$executeRaw`
    UPDATE promotion_override SET second_approver_user_id = ${c.actor.userId}::uuid, second_actor = ${c.actor.actor},
      second_approved_at = clock_timestamp()
    WHERE id = ${c.open.id}::uuid AND state = 'pending'`;
  await recordAuditEvent(tx, {
    orgId: c.actor.orgId,
    kind: "promotion.override_seconded",
    actor: c.actor.actor,
    subject: c.p.id,
    data: { overrideId: c.open.id, promotionId: c.p.id, environmentId: c.env.id, comment: c.reason },
  });
  await apply(tx, deps, c, c.open.id, c.open.gates);
}

async function apply(tx: Tx, deps: EnvDeps, c: Ctx, overrideId: string, gates: GateKind[]): Promise<void> {
  const out = await decideAndRecord(tx, deps, {
    actor: c.actor,
    env: c.env,
    promotion: c.p,
    facts: c.facts,
    reason: "",
    trigger: "overridden",
    overridden: gates,
    overrideId,
  });
  // Applied only when it let the promotion through; a gate that failed since (not in `gates`)
  // leaves it pending and the override unused.
  if (out.state !== "promoted") return;
  await tx.$executeRaw`
    UPDATE promotion_override SET state = 'applied', applied_at = clock_timestamp()
    WHERE id = ${overrideId}::uuid AND state = 'pending'`;
  await recordAuditEvent(tx, {
    orgId: c.actor.orgId,
    kind: "promotion.override_applied",
    actor: c.actor.actor,
    subject: c.p.id,
    data: { overrideId, promotionId: c.p.id, environmentId: c.env.id, gates },
  });
}
