import { withTx, type Db } from "@kiln/db";
import {
  decideArtifactPart,
  DomainError,
  expectedArtifactPartSize,
  sealedPartSize,
  type ArtifactState,
} from "@kiln/domain";
import { lockCurrentAttempt, type JobClaims } from "../attempts/index.ts";

export interface PartReport {
  partNumber: number;
  sizeBytes: number;
  sha256: string;
  etag: string;
  /** MD5 of the part's bytes as sent (hex), or null when the agent did not report it. */
  md5?: string | null;
  tries: number;
}

/**
 * Persists one uploaded part (number, size, sha256, ETag) for the caller's own upload session.
 * A retry of the same part with identical bytes replaces the ETag; different bytes are refused.
 */
export async function recordPart(
  db: Db,
  claims: JobClaims,
  generationId: string,
  part: PartReport,
): Promise<{ retry: boolean }> {
  return withTx(db, "artifact-record-part", async (tx) => {
    await lockCurrentAttempt(tx, claims);
    // Scoped to the token's attempt: another attempt's generation is indistinguishable from none.
    const gens = await tx.$queryRaw<
      {
        state: ArtifactState;
        size_bytes: bigint;
        part_size: bigint;
        part_count: number;
        shred_chunk_size: number | null;
      }[]
    >`
      SELECT state, size_bytes, part_size, part_count, shred_chunk_size FROM artifact_generation
      WHERE id = ${generationId}::uuid AND attempt_id = ${claims.attemptId}::uuid FOR UPDATE`;
    const g = gens[0];
    if (!g) throw new DomainError("ARTIFACT.UPLOAD_NOT_FOUND", "no such upload session for this attempt");
    const existing = (
      await tx.$queryRaw<{ size_bytes: bigint; sha256: string }[]>`
        SELECT size_bytes, sha256 FROM artifact_part WHERE generation_id = ${generationId}::uuid AND part_number = ${part.partNumber}`
    )[0];
    const plan = { partSize: Number(g.part_size), partCount: g.part_count };
    // A sealed upload's parts are the sealed bytes the agent PUT: header, chunks and their tags.
    const expected =
      g.shred_chunk_size === null
        ? expectedArtifactPartSize(Number(g.size_bytes), plan, part.partNumber)
        : sealedPartSize(Number(g.size_bytes), plan, g.shred_chunk_size, part.partNumber);
    const kind = decideArtifactPart(
      expected,
      part,
      existing ? { sizeBytes: Number(existing.size_bytes), sha256: existing.sha256 } : null,
    );
    if (g.state !== "uploading") {
      // Sealed: a duplicate report of an identical part is a harmless replay; nothing may change.
      if (g.state === "sealed" && kind === "retry") return { retry: true };
      throw new DomainError("ARTIFACT.SESSION_CONFLICT", `the upload session is ${g.state}`);
    }
    await tx.$executeRaw`
      INSERT INTO artifact_part (generation_id, part_number, size_bytes, sha256, etag, md5, tries)
      VALUES (${generationId}::uuid, ${part.partNumber}, ${part.sizeBytes}::bigint, ${part.sha256}, ${part.etag}, ${part.md5 ?? null}, ${part.tries})
      ON CONFLICT (generation_id, part_number) DO UPDATE
        SET etag = EXCLUDED.etag, md5 = EXCLUDED.md5, tries = artifact_part.tries + EXCLUDED.tries, updated_at = now()`;
    return { retry: kind === "retry" };
  });
}
