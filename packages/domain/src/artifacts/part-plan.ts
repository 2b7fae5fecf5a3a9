// Multipart sizing for artifacts up to MAX_ARTIFACT_BYTES (seed 000 section 12, seed 003 "up to 20 GB").
// S3's hard limits: parts of 5 MiB .. 5 GiB (the last part may be smaller), at most 10,000 parts.
// Kiln's choice: 64 MiB parts by default. A 20 GiB artifact is then 320 parts: few enough to hand
// out every part URL in one session response and to persist one row per part, large enough that a
// retried part costs at most 64 MiB of re-sent bytes, and small enough to keep 4 parts in flight
// without buffering (parts are streamed from the spool).
import { DomainError } from "../shared/errors.ts";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export const S3_MIN_PART_BYTES = 5 * MiB;
const S3_MAX_PART_BYTES = 5 * GiB;
export const S3_MAX_PARTS = 10_000;
/** 20 GiB (>= 20 GB): the largest artifact Kiln accepts. */
export const MAX_ARTIFACT_BYTES = 20 * GiB;
export const DEFAULT_PART_BYTES = 64 * MiB;

export interface PartSpec {
  partNumber: number;
  offset: number;
  size: number;
}

export interface PartPlan {
  partSize: number;
  partCount: number;
}

/**
 * Chooses the part size for `sizeBytes`: the preferred size when it fits in 10,000 parts, otherwise
 * the smallest whole MiB that does. An empty artifact is one empty part (S3 accepts a single part
 * below the minimum).
 */
export function planArtifactParts(sizeBytes: number, preferredPartBytes: number = DEFAULT_PART_BYTES): PartPlan {
  if (!Number.isSafeInteger(sizeBytes) || sizeBytes < 0) {
    throw new DomainError("REQUEST.INVALID", "artifact size must be a non-negative integer");
  }
  if (sizeBytes > MAX_ARTIFACT_BYTES) {
    throw new DomainError("ARTIFACT.TOO_LARGE", `artifact is ${sizeBytes} bytes; the limit is ${MAX_ARTIFACT_BYTES}`);
  }
  if (
    !Number.isSafeInteger(preferredPartBytes) ||
    preferredPartBytes < S3_MIN_PART_BYTES ||
    preferredPartBytes > S3_MAX_PART_BYTES
  ) {
    throw new DomainError(
      "REQUEST.INVALID",
      `part size must be between ${S3_MIN_PART_BYTES} and ${S3_MAX_PART_BYTES} bytes`,
    );
  }
  const floor = Math.ceil(Math.ceil(sizeBytes / S3_MAX_PARTS) / MiB) * MiB;
  const partSize = Math.max(preferredPartBytes, floor);
  const partCount = Math.max(1, Math.ceil(sizeBytes / partSize));
  return { partSize, partCount };
}

/** Offsets and sizes of every part of a plan; part numbers start at 1 as in S3. */
export function listArtifactParts(sizeBytes: number, plan: PartPlan): PartSpec[] {
  const parts: PartSpec[] = [];
  for (let i = 0; i < plan.partCount; i++) {
    const offset = i * plan.partSize;
    parts.push({ partNumber: i + 1, offset, size: Math.min(plan.partSize, sizeBytes - offset) });
  }
  return parts;
}

/** Size the part with this number must have, or null when the plan has no such part. */
export function expectedArtifactPartSize(sizeBytes: number, plan: PartPlan, partNumber: number): number | null {
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > plan.partCount) return null;
  const offset = (partNumber - 1) * plan.partSize;
  return Math.min(plan.partSize, sizeBytes - offset);
}
