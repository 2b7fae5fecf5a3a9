import { z } from "zod";
import { CACHE_RESTORE_RESULTS, CACHE_RESTORE_TIERS, CACHE_SAVE_RESULTS } from "../caches/index.ts";
import { sha256Hex } from "./wire.ts";

// ---- Build caches (issue 8, docs/adr/0014-build-caches.md). All with the job token of the current
// epoch (409 ATTEMPT.STALE_EPOCH otherwise); bytes go agent <-> object store through presigned URLs.
//   POST /v1/agent/jobs/{job_id}/caches/restore                cacheRestoreRequest -> cacheRestoreGrant
//   POST /v1/agent/jobs/{job_id}/caches/saves                  cacheSaveRequest -> cacheSaveSession
//        403 CACHE.WRITE_REFUSED for an untrusted run (the agent logs the reason, the job goes on)
//   POST /v1/agent/jobs/{job_id}/caches/saves/{entry}/complete cacheCompleteRequest -> cacheCompleteResponse
//   POST /v1/agent/jobs/{job_id}/caches/stats                  cacheStatsRequest -> {recorded: true}
// The control plane derives the key itself from the frozen job, the run's repo and trust class, the
// session's platform and these input digests (hashed by the agent from the pinned checkout before any step).
export const cacheInputDigest = z.object({ path: z.string().min(1).max(1024), sha256: sha256Hex.nullable() }).strict();
export const cacheRestoreRequest = z
  .object({ epoch: z.number().int().min(1), inputs: z.array(cacheInputDigest).max(256) })
  .strict();
export const cacheRestoreGrant = z.discriminatedUnion("hit", [
  z.object({ hit: z.literal(false), key: z.string() }),
  z.object({
    hit: z.literal(true),
    key: z.string(),
    entry_id: z.string(),
    /** False when a dependency cache fell back to the newest entry with the same prefix. */
    exact: z.boolean(),
    size_bytes: z.number().int(),
    sha256: sha256Hex,
    unpacked_bytes: z.number().int(),
    entry_count: z.number().int(),
    url: z.string(),
    url_expires_at: z.string(),
  }),
]);

export const cacheSaveRequest = z
  .object({
    epoch: z.number().int().min(1),
    inputs: z.array(cacheInputDigest).max(256),
    size_bytes: z.number().int().min(0),
    sha256: sha256Hex,
    unpacked_bytes: z.number().int().min(0),
    entry_count: z.number().int().min(0),
  })
  .strict();
export const cacheSaveSession = z.discriminatedUnion("state", [
  z.object({
    state: z.literal("upload"),
    entry_id: z.string(),
    key: z.string(),
    url: z.string(),
    url_expires_at: z.string(),
  }),
  /** The key is already bound: with these bytes (already_bound) or with others (conflict, recorded). */
  z.object({ state: z.enum(["already_bound", "conflict"]), key: z.string() }),
]);
export const cacheCompleteRequest = z.object({ epoch: z.number().int().min(1) }).strict();
export const cacheCompleteResponse = z.object({
  state: z.enum(["bound", "already_bound", "conflict"]),
  entry_id: z.string(),
  key: z.string(),
});

export const cacheStatsRequest = z
  .object({
    epoch: z.number().int().min(1),
    restore: z
      .object({
        result: z.enum(CACHE_RESTORE_RESULTS),
        tier: z.enum(CACHE_RESTORE_TIERS).nullable(),
        exact: z.boolean().nullable(),
        reason: z.string().max(200).nullable(),
        bytes: z.number().int().min(0),
        ms: z.number().int().min(0),
      })
      .strict()
      .optional(),
    save: z
      .object({
        result: z.enum(CACHE_SAVE_RESULTS),
        reason: z.string().max(200).nullable(),
        bytes: z.number().int().min(0),
        ms: z.number().int().min(0),
      })
      .strict()
      .optional(),
  })
  .strict();
export const cacheStatsResponse = z.object({ recorded: z.boolean() });
