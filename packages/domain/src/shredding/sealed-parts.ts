// Sealed multipart uploads (issue 21, docs/adr/0037 "Artifacts"): the host agent seals each part as
// it PUTs it, straight from the plaintext spool, so no sealed copy is ever written to disk. That
// works because chunk nonces are positional (salt || chunk index): with part sizes that are whole
// multiples of the chunk size, part k holds exactly chunks [(k-1)·P/C, k·P/C), computable alone and
// in parallel. Part 1 also carries the object header; the object's last chunk is flagged final.
// The parts concatenated are byte for byte what SealStream makes of the whole plaintext.
import { DomainError } from "../shared/errors.ts";
import { listArtifactParts, type PartPlan } from "../artifacts/index.ts";
import { chunkCount, SHRED_HEADER_BYTES, SHRED_TAG_BYTES } from "./chunk-framing.ts";

export interface SealedPart {
  partNumber: number;
  /** The plaintext range this part seals. */
  plainOffset: number;
  plainSize: number;
  /** Index of its first chunk and how many it holds. */
  firstChunk: number;
  chunks: number;
  /** Part 1 starts with the object header. */
  withHeader: boolean;
  /** Its last chunk is the object's final chunk. */
  endsFinal: boolean;
  /** Bytes on the wire and in the store. */
  sealedSize: number;
}

/** The part size rounded up to whole chunks (a plan for a sealed object must be chunk-aligned). */
export function chunkAlignedPartSize(partSize: number, chunkSize: number): number {
  return Math.ceil(partSize / chunkSize) * chunkSize;
}

/** Every part of a sealed upload of `plainSize` bytes under `plan` (its part size chunk-aligned). */
export function sealedParts(plainSize: number, plan: PartPlan, chunkSize: number): SealedPart[] {
  if (plan.partSize % chunkSize !== 0)
    throw new DomainError(
      "SHRED.BAD_FORMAT",
      `part size ${plan.partSize} is not a multiple of chunk size ${chunkSize}`,
    );
  const total = chunkCount(plainSize, chunkSize);
  const perPart = plan.partSize / chunkSize;
  return listArtifactParts(plainSize, plan).map((p) => {
    const firstChunk = (p.partNumber - 1) * perPart;
    const last = p.partNumber === plan.partCount;
    const chunks = last ? total - firstChunk : perPart;
    const withHeader = p.partNumber === 1;
    return {
      partNumber: p.partNumber,
      plainOffset: p.offset,
      plainSize: p.size,
      firstChunk,
      chunks,
      withHeader,
      endsFinal: last,
      sealedSize: (withHeader ? SHRED_HEADER_BYTES : 0) + p.size + chunks * SHRED_TAG_BYTES,
    };
  });
}

/** The sealed size of one part, or null when the plan has no such part. */
export function sealedPartSize(
  plainSize: number,
  plan: PartPlan,
  chunkSize: number,
  partNumber: number,
): number | null {
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > plan.partCount) return null;
  return sealedParts(plainSize, plan, chunkSize)[partNumber - 1]?.sealedSize ?? null;
}
