import { AGENT_ENDPOINTS } from "@kiln/domain";
import { longPollClaim } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** Long-poll claim: the engine's use case (dispatch/long-poll-claim.ts) waits and tries the hints. */
export const POST = route({
  path: AGENT_ENDPOINTS.claim.path,
  summary: "Long-poll claim of one job for the session's pool",
  auth: AGENT_ENDPOINTS.claim.auth,
  responses: {
    200: { description: "a job ticket", schema: AGENT_ENDPOINTS.claim.response },
    204: { description: "nothing to run before wait_ms passed" },
  },
  body: AGENT_ENDPOINTS.claim.request,
  handler: async ({ req, body }) => {
    const { db, cfg, boss, waiter } = services();
    const ticket = await longPollClaim(
      { db, cfg, boss, wakeups: waiter },
      {
        authorization: req.headers.get("authorization"),
        sessionId: body.session_id,
        claimRequestId: body.claim_request_id,
        waitMs: body.wait_ms,
        signal: req.signal,
      },
    );
    return ticket ? machineJson(200, ticket) : new Response(null, { status: 204 });
  },
});
