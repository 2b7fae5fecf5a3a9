import type { DbOrTx } from "@kiln/db";
import { DomainError, type PromotionKind, type PromotionState } from "@kiln/domain";
import { UUID } from "./env-actor.ts";
import type { PromotionSubject } from "./promotion-decision.ts";

/** A promotion of the org as the decision transaction needs it; `lock` inside a transaction. */
export async function loadPromotionSubject(
  db: DbOrTx,
  orgId: string,
  promotionId: string,
  opts: { lock?: boolean } = {},
): Promise<PromotionSubject & { environmentId: string }> {
  if (!UUID.test(promotionId)) throw new DomainError("PROMOTION.NOT_FOUND", "no such promotion");
  const rows = await db.$queryRawUnsafe<
    {
      id: string;
      environment_id: string;
      kind: PromotionKind;
      state: PromotionState;
      version: number;
      requester_user_id: string | null;
      requester_login: string | null;
      generation_id: string;
      artifact_name: string;
      digest: string;
      run_id: string;
      job_id: string;
      attestation_id: string | null;
    }[]
  >(
    `SELECT p.id, p.environment_id, p.kind, p.state, p.version, p.requester_user_id, u.login AS requester_login,
       p.generation_id, p.artifact_name, p.digest, p.run_id, p.job_id, p.attestation_id
     FROM promotion p LEFT JOIN app_user u ON u.id = p.requester_user_id
     WHERE p.id = $1::uuid AND p.org_id = $2::uuid${opts.lock ? " FOR UPDATE OF p" : ""}`,
    promotionId,
    orgId,
  );
  const p = rows[0];
  if (!p) throw new DomainError("PROMOTION.NOT_FOUND", "no such promotion");
  return {
    id: p.id,
    environmentId: p.environment_id,
    kind: p.kind,
    state: p.state,
    version: p.version,
    requesterUserId: p.requester_user_id,
    requesterLogin: p.requester_login,
    artifact: {
      generationId: p.generation_id,
      name: p.artifact_name,
      digest: p.digest,
      runId: p.run_id,
      jobId: p.job_id,
      attestationId: p.attestation_id,
    },
  };
}

export function requirePending(p: { state: PromotionState | null }): void {
  if (p.state !== "pending")
    throw new DomainError("PROMOTION.NOT_PENDING", `the promotion is ${p.state}; nothing more can be decided on it`);
}
