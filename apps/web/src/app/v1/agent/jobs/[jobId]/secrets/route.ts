import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, deliverSecrets } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * The secret broker (ADR 0025): the job's declared secrets for a trusted run's current attempt.
 * deliverSecrets commits every value's audit record before it returns, so nothing is sent unrecorded.
 */
export const POST = route({
  path: AGENT_ENDPOINTS.fetchSecrets.path,
  summary: "The secret broker: the job's declared secrets for a current attempt, each read audited first",
  auth: AGENT_ENDPOINTS.fetchSecrets.auth,
  responses: {
    200: { description: "delivered, withheld or missing secrets", schema: AGENT_ENDPOINTS.fetchSecrets.response },
  },
  body: AGENT_ENDPOINTS.fetchSecrets.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, keks } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    return machineJson(200, await deliverSecrets(db, keks, claims, body));
  },
});
