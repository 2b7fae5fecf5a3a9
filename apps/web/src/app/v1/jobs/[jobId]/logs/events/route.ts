import { DomainError, planLogStream } from "@kiln/domain";
import { authorizeLogRead, openJobLog } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";
import { logEventsQuery } from "../_lib/log-request.ts";
import { attemptParam, authenticateLogReader, streamingResponse } from "../_lib/log-request.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/jobs/{job_id}/logs/events: Server-Sent Events. Every output event's id is a cursor;
 * a reconnect with Last-Event-ID resumes exactly after it. Ends with log.sealed / log.truncated /
 * log.gapped; a reconnect after that gets 204. Authorised on every connect.
 */
export const GET = route({
  path: "/v1/jobs/{job_id}/logs/events",
  summary: "The job's live log over Server-Sent Events, resumable with Last-Event-ID",
  description:
    "`id:` is a resumable cursor; `data:` is {stream, offset, data: base64}. Ends with log.sealed / log.truncated / log.gapped, then 204 on reconnect (docs/adr/0006). 410 LOG.EXPIRED once retention evicted the log, 410 SHRED.KEY_DESTROYED once its archive's data key is destroyed (ADR 0037), also on a reconnect from a cursor; if that happens while streaming, `event: error` with data {code, message} ends the stream (no terminal event: the log is not complete).",
  auth: "api_token_or_session",
  query: logEventsQuery,
  headers: { "Last-Event-ID": { description: "the last event id received: resume just after it" } },
  responses: {
    200: { description: "the event stream", contentType: "text/event-stream" },
    204: { description: "the log ended before this reconnect" },
  },
  uuidParams: ["jobId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const { orgId } = await authenticateLogReader(req, params.jobId ?? "");
    const grant = await authorizeLogRead(db, { orgId, jobId: params.jobId ?? "" });
    const url = new URL(req.url);
    const pinnedEpoch = attemptParam(url);
    const lastEventId = req.headers.get("last-event-id");
    const plan = planLogStream({ lastEventId, pinnedEpoch, epochs: grant.epochs, jobFinished: grant.jobFinished });
    // Retention (issue 21): an evicted log is gone for the live stream too, not an empty stream.
    // A stream plan's epoch is checked by openJobLog (with its expired_at); this covers the rest.
    const epoch = pinnedEpoch ?? grant.epochs[grant.epochs.length - 1];
    if (plan.kind !== "stream" && epoch !== undefined && grant.expiredEpochs.includes(epoch))
      throw new DomainError("LOG.EXPIRED", "this log expired under retention: its segments were deleted");
    if (plan.kind === "done") return new Response(null, { status: 204, headers: { "cache-control": "no-store" } });
    const abort = new AbortController();
    req.signal.addEventListener("abort", () => abort.abort(), { once: true });
    // The replay's first read happens before the response exists (openJobLog): a log that can no
    // longer be read is a 410 here, not a 200 that is cut. A read failing later (a key destroyed
    // mid-stream) ends the stream with an `error` event {code, message} (ADR 0037).
    const frames = await openJobLog(
      { db, ...services().logs().follower },
      { orgId, grant, lastEventId, pinnedEpoch, plan },
      abort.signal,
    );
    return streamingResponse(
      frames,
      abort,
      {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
      },
      services().log.child({ org_id: orgId, run_id: grant.runId, job_id: grant.jobId }),
    );
  },
});
