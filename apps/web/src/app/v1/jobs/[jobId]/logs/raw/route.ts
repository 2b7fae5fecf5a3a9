import { isTerminalLogState, DomainError } from "@kiln/domain";
import { assertLogRetained, authorizeLogRead, loadLogHead, readStreamBytes } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";
import { logRawQuery } from "../_lib/log-request.ts";
import { attemptParam, authenticateLogReader, streamParam, streamingResponse } from "../_lib/log-request.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/jobs/{job_id}/logs/raw?stream=stdout|stderr&attempt=<epoch>: the committed bytes of one
 * stream (newest attempt by default), from the journal and the archive. X-Kiln-Log-State says
 * whether that is all there will be (sealed/truncated/gapped) or a snapshot (open).
 */
export const GET = route({
  path: "/v1/jobs/{job_id}/logs/raw",
  summary: "The stored bytes of one log stream of one attempt",
  auth: "api_token_or_session",
  query: logRawQuery,
  responses: {
    200: {
      description: "the bytes",
      contentType: "application/octet-stream",
      headers: {
        "X-Kiln-Log-State": "open (a snapshot) or sealed / truncated / gapped (final)",
        "X-Kiln-Log-Attempt": "the attempt's epoch",
        "X-Kiln-Log-Dropped-Bytes": "bytes the agent dropped over its limit",
        "X-Kiln-Retention-Class": "release, default_branch or other once archived (issue 21); absent before",
        "X-Kiln-Expires-At": "when retention evicts this log (ISO 8601); absent before it is archived",
      },
    },
  },
  uuidParams: ["jobId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const { orgId } = await authenticateLogReader(req, params.jobId ?? "");
    const grant = await authorizeLogRead(db, { orgId, jobId: params.jobId ?? "" });
    const url = new URL(req.url);
    const stream = streamParam(url);
    const epoch = attemptParam(url) ?? grant.epochs[grant.epochs.length - 1] ?? null;
    if (epoch === null) throw new DomainError("ATTEMPT.NOT_FOUND", "the job has not started an attempt yet");
    const { follower } = services().logs();
    const head = await loadLogHead(follower.pool, grant.jobId, epoch);
    if (!head) throw new DomainError("ATTEMPT.NOT_FOUND", `the job has no attempt ${epoch}`);
    assertLogRetained(head);
    const abort = new AbortController();
    const bytes = readStreamBytes(follower.pool, follower.archive, head.attemptId, head.nextSeq, stream);
    // The first read happens before the response exists: a refusal there (a shredded segment whose
    // key is destroyed: SHRED.KEY_DESTROYED, 410; an archive outage) becomes the answer's status
    // instead of a connection cut after a 200 (ADR 0037).
    const first = await bytes.next();
    async function* all(): AsyncGenerator<string | Uint8Array, void> {
      if (!first.done) yield first.value;
      yield* bytes;
    }
    return streamingResponse(
      all(),
      abort,
      {
        "content-type": "application/octet-stream",
        "content-length": String(head.bytes[stream]),
        "content-disposition": `attachment; filename="${grant.jobId}-${epoch}-${stream}.log"`,
        "cache-control": isTerminalLogState(head.state) ? "private, max-age=300" : "no-store",
        "x-kiln-log-state": head.state,
        "x-kiln-log-attempt": String(epoch),
        "x-kiln-log-dropped-bytes": String(head.dropped[stream]),
        ...(head.retentionClass ? { "x-kiln-retention-class": head.retentionClass } : {}),
        ...(head.expiresAt ? { "x-kiln-expires-at": head.expiresAt.toISOString() } : {}),
      },
      services().log.child({ org_id: orgId, run_id: grant.runId, job_id: grant.jobId, attempt_id: head.attemptId }),
    );
  },
});
