import type { Tx } from "@kiln/db";
import { DomainError, type PromotionKind } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { enqueueOutbox, recordTransition } from "../shared/journal.ts";
import type { EnvironmentPointerMovedPayload } from "../shared/outbox-topics.ts";

// The pointer move (issue 18, ADR 0032): the one write that changes what an environment runs. It
// is called only inside the transaction that recorded an allowing decision, so the verdict, the
// audit record, the history row, the ordered event and the deployer's outbox message all commit
// with the move or not at all (seed 002: the verdict is written before the pointer moves; here in
// the same commit, which is the stronger form).

export interface PointerMove {
  orgId: string;
  environmentId: string;
  promotionId: string;
  kind: PromotionKind;
  generationId: string;
  digest: string;
  attestationId: string | null;
  /** The pointer_seq the caller decided against (read under the environment's row lock). */
  expectedSeq: bigint;
  /** Audit actor string (`web:<login>`, `token:<id>`, `cli:<user>`). */
  actor: string;
}

export interface PointerMoved {
  pointerSeq: bigint;
  fromDigest: string | null;
  fromGenerationId: string | null;
  movedAt: Date;
}

/**
 * Moves the pointer guarded by pointer_seq: a second mover that decided against the same seq finds
 * no row and gets ENV.POINTER_MOVED (a conflict to re-decide, never a lost update). Writes the
 * history row, the `environment` transition event, the `environment.pointer_moved` audit event and
 * the `environment.pointer_moved` outbox message the deployer consumes.
 */
export async function movePointer(tx: Tx, m: PointerMove): Promise<PointerMoved> {
  // The retention worker locks a generation FOR UPDATE and re-checks pointers before it expires it
  // (engine/src/retention/evict-item.ts); this share lock orders the two: either the eviction saw
  // this pointer and kept the bytes, or it committed first and the move is refused here, so a
  // pointer never names evicted bytes.
  const target = await tx.$queryRaw<{ expired_at: Date | null; object_deleted_at: Date | null }[]>`
    SELECT expired_at, object_deleted_at FROM artifact_generation WHERE id = ${m.generationId}::uuid FOR SHARE`;
  const t = target[0];
  if (!t || t.expired_at || t.object_deleted_at)
    throw new DomainError("ARTIFACT.EXPIRED", "the artifact's retention window has passed and its bytes are gone");
  const rows = await tx.$queryRaw<
    {
      repo_id: string;
      pointer_seq: bigint;
      from_digest: string | null;
      from_generation_id: string | null;
      moved_at: Date;
    }[]
  >`
    WITH old AS (
      SELECT id, current_digest, current_generation_id FROM environment
      WHERE id = ${m.environmentId}::uuid AND org_id = ${m.orgId}::uuid AND pointer_seq = ${m.expectedSeq}
      FOR UPDATE)
    UPDATE environment e SET current_generation_id = ${m.generationId}::uuid, current_digest = ${m.digest},
      current_attestation_id = ${m.attestationId}::uuid, current_promotion_id = ${m.promotionId}::uuid,
      pointer_moved_at = clock_timestamp(), pointer_seq = e.pointer_seq + 1
    FROM old WHERE e.id = old.id
    RETURNING e.repo_id, e.pointer_seq, old.current_digest AS from_digest,
      old.current_generation_id AS from_generation_id, e.pointer_moved_at AS moved_at`;
  const r = rows[0];
  if (!r) throw new DomainError("ENV.POINTER_MOVED", "the environment's pointer moved meanwhile; decide again");
  await tx.$executeRaw`
    INSERT INTO environment_pointer_move (org_id, environment_id, promotion_id, kind, from_generation_id,
      from_digest, to_generation_id, to_digest, to_attestation_id, pointer_seq, actor, at)
    VALUES (${m.orgId}::uuid, ${m.environmentId}::uuid, ${m.promotionId}::uuid, ${m.kind},
      ${r.from_generation_id}::uuid, ${r.from_digest}, ${m.generationId}::uuid, ${m.digest},
      ${m.attestationId}::uuid, ${r.pointer_seq}, ${m.actor}, ${r.moved_at})`;
  const facts = {
    environmentId: m.environmentId,
    promotionId: m.promotionId,
    kind: m.kind,
    generationId: m.generationId,
    digest: m.digest,
    attestationId: m.attestationId,
    fromDigest: r.from_digest,
    pointerSeq: r.pointer_seq.toString(),
  };
  await recordTransition(tx, {
    orgId: m.orgId,
    entity: "environment",
    from: r.from_digest,
    to: m.digest,
    reason: m.kind === "rollback" ? "rolled_back" : "promoted",
    data: facts,
  });
  await recordAuditEvent(tx, {
    orgId: m.orgId,
    kind: "environment.pointer_moved",
    actor: m.actor,
    subject: m.environmentId,
    data: facts,
  });
  // Pending promotions of this environment were decided against the pointer that just moved away.
  const superseded = await tx.$queryRaw<{ id: string }[]>`
    UPDATE promotion SET state = 'superseded', version = version + 1, updated_at = clock_timestamp()
    WHERE environment_id = ${m.environmentId}::uuid AND org_id = ${m.orgId}::uuid AND state = 'pending'
      AND id <> ${m.promotionId}::uuid
    RETURNING id::text`;
  for (const s of superseded) {
    await recordTransition(tx, {
      orgId: m.orgId,
      entity: "promotion",
      from: "pending",
      to: "superseded",
      reason: "pointer_moved",
      data: { promotionId: s.id, environmentId: m.environmentId, byPromotionId: m.promotionId },
    });
    await recordAuditEvent(tx, {
      orgId: m.orgId,
      kind: "promotion.superseded",
      actor: m.actor,
      subject: s.id,
      data: { promotionId: s.id, environmentId: m.environmentId, byPromotionId: m.promotionId, toDigest: m.digest },
    });
  }
  const payload: EnvironmentPointerMovedPayload = {
    orgId: m.orgId,
    repoId: r.repo_id,
    environmentId: m.environmentId,
    promotionId: m.promotionId,
    kind: m.kind,
    generationId: m.generationId,
    digest: m.digest,
    attestationId: m.attestationId,
    pointerSeq: r.pointer_seq.toString(),
  };
  // One message per move: the dedupe key is the environment and its new seq.
  await enqueueOutbox(tx, "environment.pointer_moved", payload, {
    dedupeKey: `${m.environmentId}:${r.pointer_seq.toString()}`,
  });
  return {
    pointerSeq: r.pointer_seq,
    fromDigest: r.from_digest,
    fromGenerationId: r.from_generation_id,
    movedAt: r.moved_at,
  };
}
