import { planLogStream } from "@kiln/domain";
import { authorizeLogRead, followJobLog } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";
import { attemptParam, authenticateLogReader, streamingResponse } from "../_lib/log-request.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/jobs/{job_id}/logs/events: Server-Sent Events. Every output event's id is a cursor;
 * a reconnect with Last-Event-ID resumes exactly after it. Ends with log.sealed / log.truncated /
 * log.gapped; a reconnect after that gets 204. Authorised on every connect.
 */
export const GET = route({
  uuidParams: ["jobId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const { orgId } = await authenticateLogReader(req, params.jobId ?? "");
    const grant = await authorizeLogRead(db, { orgId, jobId: params.jobId ?? "" });
    const url = new URL(req.url);
    const pinnedEpoch = attemptParam(url);
    const lastEventId = req.headers.get("last-event-id");
    const plan = planLogStream({ lastEventId, pinnedEpoch, epochs: grant.epochs, jobFinished: grant.jobFinished });
    if (plan.kind === "done") return new Response(null, { status: 204, headers: { "cache-control": "no-store" } });
    const abort = new AbortController();
    req.signal.addEventListener("abort", () => abort.abort(), { once: true });
    const frames = followJobLog(
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
