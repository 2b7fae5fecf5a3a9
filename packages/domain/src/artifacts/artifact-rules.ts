// Pure rules for artifact generations: who may open, extend, seal and read them (seed 000
// sections 9 and 12). Handlers load state under locks, call these, and persist what they return.
import type { AttemptStatus, RunStatus } from "../runs/index.ts";
import { DomainError } from "../shared/errors.ts";

export const ARTIFACT_STATES = ["uploading", "sealed", "abandoned"] as const;
export type ArtifactState = (typeof ARTIFACT_STATES)[number];

/** How the bytes were frozen: a single file as-is, or a directory as a POSIX tar (ADR 0007). */
export const ARTIFACT_FORMATS = ["file", "tar"] as const;
export type ArtifactFormat = (typeof ARTIFACT_FORMATS)[number];

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Named causes an attempt reports when publishing or restoring fails. The first group is the
 * user's doing (the workflow points at something that cannot be published); the second is ours.
 */
export const ARTIFACT_USER_CAUSES = [
  "artifact.path_outside_workspace",
  "artifact.missing",
  "artifact.symlink_escape",
  "artifact.unsupported_type",
  "artifact.too_large",
] as const;
export const ARTIFACT_PLATFORM_CAUSES = [
  "artifact.upload_failed",
  "artifact.upload_verification_failed",
  "artifact.binding_missing",
  "artifact.download_failed",
  "artifact.digest_mismatch",
  // The attestor's verifier found the stored bytes differ from their signed provenance (issue 17).
  "artifact.quarantined",
] as const;
export type ArtifactCause = (typeof ARTIFACT_USER_CAUSES)[number] | (typeof ARTIFACT_PLATFORM_CAUSES)[number];

/** The attempt as the artifact handlers see it, loaded under the run (share) and job locks. */
export interface ArtifactAttemptState {
  runStatus: RunStatus;
  attempt: { epoch: number; status: AttemptStatus; leaseLive: boolean };
  jobCurrentEpoch: number;
  reportedEpoch: number;
}

/**
 * Only the current, live attempt of an active run may stage or seal bytes. Presigned URLs cannot be
 * revoked, so this check on every metadata call is the fence: a zombie can pour bytes into its own
 * staging key but can never seal or bind them.
 */
export function assertCurrentAttempt(s: ArtifactAttemptState): void {
  if (
    s.attempt.status !== "running" ||
    s.reportedEpoch !== s.jobCurrentEpoch ||
    s.attempt.epoch !== s.jobCurrentEpoch
  ) {
    throw new DomainError("ATTEMPT.STALE_EPOCH", `epoch ${s.reportedEpoch} is not the job's current attempt`, {
      current_epoch: s.jobCurrentEpoch,
    });
  }
  if (!s.attempt.leaseLive)
    throw new DomainError("ATTEMPT.LEASE_EXPIRED", "the attempt's lease expired; publish nothing");
  if (s.runStatus !== "running")
    throw new DomainError("RUN.CANCELLED", "the run is no longer running; publish nothing");
}

export interface ExistingGeneration {
  id: string;
  state: ArtifactState;
  sizeBytes: number;
  sha256: string;
  format: ArtifactFormat;
}

export type ArtifactOpenDecision =
  | { kind: "create" }
  /** Same attempt, same bytes: hand back the recorded parts and fresh URLs for the rest. */
  | { kind: "resume"; generationId: string }
  /** Already verified and sealed (a lost response): nothing left to upload. */
  | { kind: "already_sealed"; generationId: string };

/**
 * One generation per (attempt, name). Resuming is allowed only with the original bytes: a
 * different size or digest inside the same attempt means the spool changed, which must never be
 * stitched onto parts already uploaded (seed 000 section 12, "never combine old parts ...").
 */
export function decideArtifactOpen(
  declared: readonly string[],
  req: { name: string; sizeBytes: number; sha256: string; format: ArtifactFormat },
  existing: ExistingGeneration | null,
): ArtifactOpenDecision {
  if (!declared.includes(req.name)) {
    throw new DomainError(
      "ARTIFACT.NOT_DECLARED",
      `this job does not publish an artifact named ${JSON.stringify(req.name)}`,
    );
  }
  if (!SHA256_HEX.test(req.sha256))
    throw new DomainError("REQUEST.INVALID", "sha256 must be 64 lowercase hex characters");
  if (!existing) return { kind: "create" };
  const same = existing.sizeBytes === req.sizeBytes && existing.sha256 === req.sha256 && existing.format === req.format;
  if (!same) {
    throw new DomainError(
      "ARTIFACT.SESSION_CONFLICT",
      "this attempt already staged different bytes under this name; resume needs the original bytes",
    );
  }
  if (existing.state === "sealed") return { kind: "already_sealed", generationId: existing.id };
  if (existing.state === "abandoned")
    throw new DomainError("ARTIFACT.SESSION_CONFLICT", "this attempt's upload session was abandoned");
  return { kind: "resume", generationId: existing.id };
}

/**
 * A part may be recorded again only with identical bytes (same size and sha256): that is a retry.
 * Anything else under the same part number would silently replace bytes already accounted for.
 */
export function decideArtifactPart(
  expectedSize: number | null,
  req: { partNumber: number; sizeBytes: number; sha256: string },
  existing: { sizeBytes: number; sha256: string } | null,
): "insert" | "retry" {
  if (expectedSize === null)
    throw new DomainError("ARTIFACT.PART_CONFLICT", `part ${req.partNumber} is not part of this upload's plan`);
  if (req.sizeBytes !== expectedSize) {
    throw new DomainError(
      "ARTIFACT.PART_CONFLICT",
      `part ${req.partNumber} must be ${expectedSize} bytes, not ${req.sizeBytes}`,
    );
  }
  if (!SHA256_HEX.test(req.sha256))
    throw new DomainError("REQUEST.INVALID", "part sha256 must be 64 lowercase hex characters");
  if (!existing) return "insert";
  if (existing.sizeBytes !== req.sizeBytes || existing.sha256 !== req.sha256) {
    throw new DomainError("ARTIFACT.PART_CONFLICT", `part ${req.partNumber} was already uploaded with different bytes`);
  }
  return "retry";
}

/** What the finaliser read back from the store versus what the session promised. */
export function decideArtifactSeal(
  expected: { sizeBytes: number; sha256: string },
  observed: { sizeBytes: number; sha256: string },
): "seal" | "mismatch" {
  return expected.sizeBytes === observed.sizeBytes && expected.sha256 === observed.sha256 ? "seal" : "mismatch";
}

/**
 * How the store's answer for a completed multipart upload can stand in for reading it back
 * (docs/adr/0007-artifacts.md, "Verification by the store's part digests"). S3, MinIO and the
 * embedded store give each part an ETag that is the MD5 of the bytes they received, and the
 * completed object the ETag MD5(concat(binary part MD5s)) + "-" + part count. If that equals the
 * same function of the MD5s the agent computed over the bytes it sent, in order, and the size
 * matches, the store holds exactly those bytes. The multipart ETag is never read as the object's
 * MD5. Anything else (no MD5 for some part, a store whose ETags are not MD5s, such as S3 with
 * SSE-KMS, a missing or different ETag) is "read_back": any doubt means reading the object.
 * The caller passes the MD5 function (node:crypto in the engine); the domain stays pure.
 */
export function decideStoreDigestCheck(
  expected: { sizeBytes: number; partMd5s: readonly (string | null)[] },
  stored: { sizeBytes: number; etag: string | null },
  md5Hex: (bytes: Uint8Array) => string,
): "verified" | "read_back" {
  const md5s = expected.partMd5s;
  if (md5s.length === 0 || md5s.some((m) => m === null || !/^[0-9a-f]{32}$/.test(m))) return "read_back";
  if (stored.etag === null || stored.sizeBytes !== expected.sizeBytes) return "read_back";
  const binary = new Uint8Array(md5s.length * 16);
  md5s.forEach((m, i) => {
    for (let j = 0; j < 16; j++) binary[i * 16 + j] = parseInt((m as string).slice(2 * j, 2 * j + 2), 16);
  });
  return stored.etag.replace(/"/g, "").toLowerCase() === `${md5Hex(binary)}-${md5s.length}` ? "verified" : "read_back";
}

/**
 * Object keys are fresh per generation and carry the producer's epoch (seed 003 Q1): a zombie's
 * presigned URLs can only ever reach its own staging session, never a key anyone binds later.
 */
export function artifactObjectKey(k: {
  orgId: string;
  runId: string;
  jobId: string;
  epoch: number;
  generationId: string;
  name: string;
}): string {
  return `artifacts/${k.orgId}/${k.runId}/${k.jobId}/${k.epoch}/${k.generationId}/${k.name}`;
}

/**
 * Garbage: not bound, and its attempt can never bind it any more (finished, or no longer the job's
 * current epoch), and older than the grace period. Bound generations are never garbage here: they
 * stay pinned for consumers and retries; their retention is a separate policy (ADR 0007).
 */
export function isCollectable(g: {
  bound: boolean;
  state: ArtifactState;
  attemptFinished: boolean;
  attemptIsCurrent: boolean;
  ageMs: number;
  graceMs: number;
}): boolean {
  if (g.bound) return false;
  if (g.attemptIsCurrent && !g.attemptFinished) return false;
  return g.ageMs >= g.graceMs;
}
