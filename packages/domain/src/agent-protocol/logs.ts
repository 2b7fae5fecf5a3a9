import { z } from "zod";
import { LOG_STREAMS, MAX_LOG_CHUNK_BYTES } from "../logs/index.ts";

// ---- Logs (issue 4, docs/adr/0006-logs.md). All with the job token of the current epoch.
//   POST /v1/agent/jobs/{job_id}/logs       a chunk batch -> logAppendResponse (200 after the chunks are durable)
//       Content-Type application/vnd.kiln.log-chunks: a binary frame (logs/log-frame.ts) whose JSON
//       header is logAppendHeader and whose payload is the chunks' bytes back to back (the agent's form:
//       no base64, no JSON parsing of megabytes); or application/json: logAppendRequest (base64 data).
//   POST /v1/agent/jobs/{job_id}/logs/seal  logSealRequest -> logSealResponse
// 409 LOG.CONFLICT: other bytes already hold that position; 409 LOG.OUT_OF_ORDER: resend from
// error.details.next_seq; 503 LOG.JOURNAL_FULL + Retry-After: back-pressure, keep spooling and retry;
// 409 ATTEMPT.STALE_EPOCH / ATTEMPT.LEASE_EXPIRED: fenced, stop shipping.
const logStream = z.enum(LOG_STREAMS);
const logBytes = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
export const logChunkIdentity = z
  .object({
    stream: logStream,
    seq: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
    offset: logBytes,
    length: z.number().int().min(1).max(MAX_LOG_CHUNK_BYTES),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();
export const logAppendHeader = z
  .object({ epoch: z.number().int().min(1), chunks: z.array(logChunkIdentity).min(1).max(512) })
  .strict();
export const logChunk = logChunkIdentity.extend({
  /** The chunk's bytes, base64 (after secret masking). */
  data: z.string().max(Math.ceil(MAX_LOG_CHUNK_BYTES / 3) * 4 + 4),
});
export const logAppendRequest = z
  .object({ epoch: z.number().int().min(1), chunks: z.array(logChunk).min(1).max(512) })
  .strict();
export const logAppendResponse = z.object({
  /** Highest contiguous committed offset per stream. */
  committed: z.object({ stdout: z.number(), stderr: z.number() }),
  next_seq: z.number().int(),
  stored: z.number().int(),
  duplicates: z.number().int(),
});
export const logSealRequest = z
  .object({
    epoch: z.number().int().min(1),
    next_seq: z.number().int().min(0),
    bytes: z.object({ stdout: logBytes, stderr: logBytes }).strict(),
    /** Output read and discarded past the per-attempt limit (the truncation marker). */
    dropped_bytes: z.object({ stdout: logBytes, stderr: logBytes }).strict(),
  })
  .strict();
export const logSealResponse = z.object({ state: z.enum(["sealed", "truncated"]) });
