import { z } from "zod";
import { sha256Hex } from "./wire.ts";

// ---- Artifacts (issue 5, docs/adr/0007-artifacts.md). All with the job token; bytes never pass
// through these routes: the agent PUTs parts to presigned URLs and GETs downloads from one.
//   POST /v1/agent/jobs/{job_id}/artifacts/uploads                    artifactOpenRequest -> artifactUploadSession
//   POST /v1/agent/jobs/{job_id}/artifacts/uploads/{gen_id}/parts     artifactPartRequest -> artifactPartResponse
//   POST /v1/agent/jobs/{job_id}/artifacts/uploads/{gen_id}/complete  artifactCompleteRequest -> artifactCompleteResponse
//   POST /v1/agent/jobs/{job_id}/artifacts/downloads                  artifactDownloadRequest -> artifactDownloadGrant
// 409 ATTEMPT.STALE_EPOCH / ATTEMPT.LEASE_EXPIRED / RUN.CANCELLED: fenced, stop uploading.
export const ARTIFACT_SEAL_SCHEME = "kiln-shred-v1";
const artifactName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.-]+$/);

export const artifactOpenRequest = z
  .object({
    epoch: z.number().int().min(1),
    name: artifactName,
    size_bytes: z.number().int().min(0),
    sha256: sha256Hex,
    format: z.enum(["file", "tar"]),
    /** The agent can seal parts as it uploads them (issue 21, ADR 0037; protocol 3). An agent that
     * does not say so uploads plaintext, as before. */
    seal: z.literal(ARTIFACT_SEAL_SCHEME).optional(),
  })
  .strict();
/**
 * The data key an artifact is sealed (or opened) with, for the host agent only: it never enters the
 * sandbox, is held in memory for the one transfer and is never logged. The header of the object is
 * fixed by key id, chunk size and salt, so a resumed session seals exactly the same bytes.
 */
export const artifactSeal = z.object({
  scheme: z.literal(ARTIFACT_SEAL_SCHEME),
  key_id: z.string().uuid(),
  /** The 32-byte AES-256 data key, base64. */
  key: z.string().min(40).max(64),
  /** The object's 8-byte salt, base64. */
  salt: z.string().min(8).max(16),
  chunk_size: z.number().int().min(1),
  /** Bytes the store holds: the sealed object's size. */
  stored_size_bytes: z.number().int().min(0),
});
export const artifactUploadSession = z.object({
  generation_id: z.string(),
  state: z.enum(["uploading", "sealed"]),
  size_bytes: z.number().int(),
  sha256: z.string(),
  part_size: z.number().int(),
  part_count: z.number().int(),
  /** Every part of the plan; `url` is absent for parts already recorded (resume) or when sealed. */
  parts: z.array(
    z.object({
      part_number: z.number().int(),
      offset: z.number().int(),
      size: z.number().int(),
      /** Bytes to PUT for this part when the session is sealed (header, chunks and their tags). */
      sealed_size: z.number().int().optional(),
      done: z.boolean(),
      url: z.string().optional(),
    }),
  ),
  urls_expire_at: z.string().nullable(),
  /** Present when the parts must be sealed before they are PUT. */
  seal: artifactSeal.optional(),
});

export const artifactPartRequest = z
  .object({
    epoch: z.number().int().min(1),
    part_number: z.number().int().min(1).max(10_000),
    size_bytes: z.number().int().min(0),
    sha256: sha256Hex,
    etag: z.string().min(1).max(200),
    /** MD5 of the part's bytes as sent (hex). Lets the control plane check the store's multipart
     * ETag instead of reading the object back; without it the upload is read back. */
    md5: z
      .string()
      .regex(/^[0-9a-f]{32}$/, "md5 must be 32 lowercase hex digits")
      .optional(),
    /** How many PUTs this part took (1 = no retry); kept for the multipart-retry signal. */
    tries: z.number().int().min(1).max(1000).default(1),
  })
  .strict();
export const artifactPartResponse = z.object({ recorded: z.boolean(), retry: z.boolean() });

export const artifactCompleteRequest = z.object({ epoch: z.number().int().min(1) }).strict();
export const artifactCompleteResponse = z.object({
  state: z.literal("sealed"),
  generation_id: z.string(),
  size_bytes: z.number().int(),
  sha256: z.string(),
});

export const artifactDownloadRequest = z
  .object({ epoch: z.number().int().min(1), from_job: artifactName, name: artifactName })
  .strict();
export const artifactDownloadGrant = z.object({
  generation_id: z.string(),
  producer_epoch: z.number().int(),
  size_bytes: z.number().int(),
  sha256: z.string(),
  format: z.enum(["file", "tar"]),
  url: z.string(),
  url_expires_at: z.string(),
  /** Present when the stored object is sealed: open it while downloading, then verify sha256. */
  seal: artifactSeal.optional(),
});
