import { AGENT_ENDPOINTS } from "@kiln/domain";
import { appendLogChunks, authenticateJobToken } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";
import { parseChunkBatch } from "./_lib/parse-chunk-batch.ts";

export const dynamic = "force-dynamic";

// A batch is at most 512 chunks of <= 1 MiB; agents send ~1 MiB batches.
const MAX_INGEST_BODY = 16 * 1024 * 1024;

/** Ingest: 200 only after the chunks are committed in PostgreSQL (docs/adr/0006-logs.md). */
export const POST = route({
  path: AGENT_ENDPOINTS.appendLogs.path,
  summary: "Append a batch of log chunks; 200 only after they are committed",
  auth: AGENT_ENDPOINTS.appendLogs.auth,
  rawBody: {
    contentType: "application/vnd.kiln.log-chunks",
    description: "a JSON header line, then the chunks' bytes (docs/adr/0006)",
  },
  responses: { 200: { description: "the committed position", schema: AGENT_ENDPOINTS.appendLogs.response } },
  uuidParams: ["jobId"],
  maxBytes: MAX_INGEST_BODY,
  handler: async ({ req, params, rawBody }) => {
    const { db } = services();
    const logs = services().logs();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const batch = parseChunkBatch(req.headers.get("content-type"), rawBody);
    // The token names an epoch; the body must agree (a token is never reusable for another epoch).
    const writer = {
      jobId: claims.jobId,
      attemptId: claims.attemptId,
      epoch: batch.epoch === claims.epoch ? batch.epoch : -1,
    };
    const r = await appendLogChunks(logs.follower.pool, logs.cfg, writer, batch.chunks);
    if (r.appended.length > 0) {
      const live = r.appended.map((c) => ({ seq: c.seq, stream: c.stream, offset: c.offset, data: c.data }));
      logs.publisher.publish(claims.jobId, { kind: "chunks", epoch: claims.epoch, chunks: live });
    }
    return machineJson(200, {
      committed: r.position.committed,
      next_seq: r.position.nextSeq,
      stored: r.stored,
      duplicates: r.duplicates,
    });
  },
});
