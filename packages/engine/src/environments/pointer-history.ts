import type { DbOrTx } from "@kiln/db";
import { DomainError, type PromotionKind } from "@kiln/domain";
import { UUID } from "./env-actor.ts";

// The environment's deployment history: every pointer move, newest first. Its `to` artifacts are
// the rollback targets (the dashboard's rollback button offers them).

export interface PointerMoveView {
  seq: string;
  kind: PromotionKind;
  promotionId: string;
  fromDigest: string | null;
  toArtifactId: string;
  toDigest: string;
  toAttestationId: string | null;
  actor: string;
  at: string;
}

export async function listPointerMoves(
  db: DbOrTx,
  orgId: string,
  environmentId: string,
  limit = 50,
): Promise<PointerMoveView[]> {
  if (!UUID.test(environmentId)) throw new DomainError("ENV.NOT_FOUND", "no such environment");
  const rows = await db.$queryRaw<
    {
      pointer_seq: bigint;
      kind: PromotionKind;
      promotion_id: string;
      from_digest: string | null;
      to_generation_id: string;
      to_digest: string;
      to_attestation_id: string | null;
      actor: string;
      at: Date;
    }[]
  >`
    SELECT m.pointer_seq, m.kind, m.promotion_id, m.from_digest, m.to_generation_id, m.to_digest, m.to_attestation_id, m.actor, m.at
    FROM environment_pointer_move m JOIN environment e ON e.id = m.environment_id
    WHERE m.environment_id = ${environmentId}::uuid AND e.org_id = ${orgId}::uuid
    ORDER BY m.seq DESC LIMIT ${Math.min(200, Math.max(1, limit))}`;
  return rows.map((r) => ({
    seq: r.pointer_seq.toString(),
    kind: r.kind,
    promotionId: r.promotion_id,
    fromDigest: r.from_digest,
    toArtifactId: r.to_generation_id,
    toDigest: r.to_digest,
    toAttestationId: r.to_attestation_id,
    actor: r.actor,
    at: r.at.toISOString(),
  }));
}
